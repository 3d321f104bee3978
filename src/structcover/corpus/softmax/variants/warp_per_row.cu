// variant: one warp per row, lanes stride the row (coalesced), max and sum via __shfl_xor_sync butterflies.
#include <cuda_runtime.h>
#include <math.h>

#define WARPS_PER_BLOCK 8

__global__ void softmax_warp(const float* x, float* y, int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;  // the whole warp leaves together: no partial-mask shuffles
    const float* xr = x + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += __expf(xr[c] - m);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = __expf(xr[c] - m) * inv;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    const int grid = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    softmax_warp<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
