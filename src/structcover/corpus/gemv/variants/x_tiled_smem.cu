// variant: thread per row with x staged through a 64-float smem tile (barriers in the tile loop), unrolled inner loop.
#include <cuda_runtime.h>

#define BLOCK 64
#define XT 64

__global__ void gemv_x_tiled(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int M, int K) {
    __shared__ float xs[XT];
    const int r = blockIdx.x * BLOCK + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += XT) {
        for (int t = threadIdx.x; t < XT; t += BLOCK) xs[t] = (k0 + t < K) ? x[k0 + t] : 0.0f;
        __syncthreads();
        if (r < M) {
            const int len = (K - k0 < XT) ? K - k0 : XT;
#pragma unroll 8
            for (int k = 0; k < len; ++k) acc += A[(size_t)r * K + k0 + k] * xs[k];
        }
        __syncthreads();
    }
    if (r < M) y[r] = acc;
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    const int grid = (M + BLOCK - 1) / BLOCK;
    gemv_x_tiled<<<grid, BLOCK, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
