// Softmax ladder, step 06: vectorized access. Rows are read and written as float4 (cols is a
// multiple of 4), four elements per memory instruction.
// moves: mem.vector_width_global up
// moves: pattern.vector_width = 4
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ void warp_combine(float& m, float& s) {
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        const float mn = fmaxf(m, m2);
        s = s * expf(m - mn) + s2 * expf(m2 - mn);
        m = mn;
    }
}

__global__ void softmax_vec(const float* x, float* y, int cols) {
    __shared__ float pm[WARPS];
    __shared__ float ps[WARPS];
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * cols);
    float4* out = reinterpret_cast<float4*>(y + blockIdx.x * cols);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    float m = -INFINITY, s = 0.0f;
    for (int c = tid; c < cols / 4; c += BLOCK) {
        const float4 v = row[c];
        const float mn = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
        s = s * expf(m - mn) + expf(v.x - mn) + expf(v.y - mn) + expf(v.z - mn) + expf(v.w - mn);
        m = mn;
    }
    warp_combine(m, s);
    if (lane == 0) { pm[warp] = m; ps[warp] = s; }
    __syncthreads();
    m = lane < WARPS ? pm[lane] : -INFINITY;
    s = lane < WARPS ? ps[lane] : 0.0f;
    warp_combine(m, s);
    const float inv = 1.0f / s;
    for (int c = tid; c < cols / 4; c += BLOCK) {
        const float4 v = row[c];
        out[c] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                             expf(v.w - m) * inv);
    }
}

void launch(const float* x, float* y, int rows, int cols) {
    softmax_vec<<<rows, BLOCK>>>(x, y, cols);
}
