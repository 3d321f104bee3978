// variant: one warp per row, two-pass mean/variance with __shfl_xor_sync, coalesced lane-strided access.
#include <cuda_runtime.h>
#include <math.h>

#define WARPS_PER_BLOCK 4

__device__ __forceinline__ float warp_allsum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void layernorm_warp(const float* x, const float* gamma, const float* beta, float* y,
                               int rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;  // warp-uniform exit
    const float* xr = x + (size_t)r * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += xr[c];
    const float mean = warp_allsum(s) / cols;
    float v = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float d = xr[c] - mean;
        v += d * d;
    }
    const float inv_std = rsqrtf(warp_allsum(v) / cols + eps);
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = (xr[c] - mean) * inv_std * gamma[c] + beta[c];
}

extern "C" int launch(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols, float eps, cudaStream_t stream) {
    const int grid = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    layernorm_warp<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(x, gamma, beta, y, rows, cols, eps);
    return (int)cudaGetLastError();
}
