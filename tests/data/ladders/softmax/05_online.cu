// Softmax ladder, step 05: online softmax. The max and the sum are computed in one pass
// (the running sum is rescaled whenever the running max grows), so the row is read twice
// instead of three times.
// moves: mem.global_loads down
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

__global__ void softmax_online(const float* x, float* y, int cols) {
    __shared__ float pm[WARPS];
    __shared__ float ps[WARPS];
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    float m = -INFINITY, s = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) {
        const float v = row[c];
        const float mn = fmaxf(m, v);
        s = s * expf(m - mn) + expf(v - mn);
        m = mn;
    }
    warp_combine(m, s);
    if (lane == 0) { pm[warp] = m; ps[warp] = s; }
    __syncthreads();
    m = lane < WARPS ? pm[lane] : -INFINITY;
    s = lane < WARPS ? ps[lane] : 0.0f;
    warp_combine(m, s);
    for (int c = tid; c < cols; c += BLOCK) out[c] = expf(row[c] - m) / s;
}

void launch(const float* x, float* y, int rows, int cols) {
    softmax_online<<<rows, BLOCK>>>(x, y, cols);
}
