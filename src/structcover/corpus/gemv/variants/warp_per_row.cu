// variant: one warp per row, lanes stride K (coalesced A), __shfl_down_sync reduction, lane 0 stores.
#include <cuda_runtime.h>

#define WARPS_PER_BLOCK 8

__global__ void gemv_warp(const float* A, const float* x, float* y, int M, int K) {
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    if (r >= M) return;  // warp-uniform
    const float* row = A + (size_t)r * K;
    float acc = 0.0f;
    for (int k = lane; k < K; k += 32) acc += row[k] * x[k];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[r] = acc;
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    const int grid = (M + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    gemv_warp<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
