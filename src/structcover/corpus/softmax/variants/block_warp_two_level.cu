// variant: 128-thread block per row, exp values cached in dynamic smem, warp shuffles then cross-warp smem combine.
#include <cuda_runtime.h>
#include <math.h>

#define BLOCK 128
#define WARPS (BLOCK / 32)

__device__ float block_reduce(float v, float* scratch, bool is_max) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_down_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = scratch[0];
    for (int w = 1; w < WARPS; ++w) r = is_max ? fmaxf(r, scratch[w]) : r + scratch[w];
    __syncthreads();  // scratch is reused by the next call
    return r;
}

__global__ void softmax_two_level(const float* x, float* y, int rows, int cols) {
    extern __shared__ float row_exp[];  // cols floats
    __shared__ float scratch[WARPS];
    const int r = blockIdx.x;
    const float* xr = x + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
    m = block_reduce(m, scratch, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        const float e = expf(xr[c] - m);
        row_exp[c] = e;
        s += e;
    }
    s = block_reduce(s, scratch, false);
    for (int c = threadIdx.x; c < cols; c += BLOCK) y[(size_t)r * cols + c] = row_exp[c] / s;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    softmax_two_level<<<rows, BLOCK, cols * sizeof(float), stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
