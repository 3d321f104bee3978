// Softmax ladder, step 07: fast-math intrinsics. __expf (the SFU's ex2 with a scale) replaces
// the accurate expf in every exponential.
// moves: math.fast_intrinsics up
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ void warp_combine(float& m, float& s) {
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        const float mn = fmaxf(m, m2);
        s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
        m = mn;
    }
}

__global__ void softmax_fast(const float* x, float* y, int cols) {
    __shared__ float pm[WARPS];
    __shared__ float ps[WARPS];
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * cols);
    float4* out = reinterpret_cast<float4*>(y + blockIdx.x * cols);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    float m = -INFINITY, s = 0.0f;
    for (int c = tid; c < cols / 4; c += BLOCK) {
        const float4 v = row[c];
        const float mn = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
        s = s * __expf(m - mn) + __expf(v.x - mn) + __expf(v.y - mn) + __expf(v.z - mn)
            + __expf(v.w - mn);
        m = mn;
    }
    warp_combine(m, s);
    if (lane == 0) { pm[warp] = m; ps[warp] = s; }
    __syncthreads();
    m = lane < WARPS ? pm[lane] : -INFINITY;
    s = lane < WARPS ? ps[lane] : 0.0f;
    warp_combine(m, s);
    const float inv = __fdividef(1.0f, s);
    for (int c = tid; c < cols / 4; c += BLOCK) {
        const float4 v = row[c];
        out[c] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv,
                             __expf(v.w - m) * inv);
    }
}

void launch(const float* x, float* y, int rows, int cols) {
    softmax_fast<<<rows, BLOCK>>>(x, y, cols);
}
