// variant: thread per row; each step every thread loads one x value into a block-wide smem tile (select with zero fill), then the rows read it.
#include <cuda_runtime.h>

#define BLOCK 128

__global__ void gemv_x_tile(const float* A, const float* x, float* y, int M, int K) {
    __shared__ float xs[BLOCK];
    const int r = blockIdx.x * BLOCK + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
        xs[threadIdx.x] = (k0 + threadIdx.x < K) ? x[k0 + threadIdx.x] : 0.0f;
        __syncthreads();
        if (r < M) {
            const int len = (K - k0 < BLOCK) ? K - k0 : BLOCK;
            for (int k = 0; k < len; ++k) acc += A[(size_t)r * K + k0 + k] * xs[k];
        }
        __syncthreads();
    }
    if (r < M) y[r] = acc;
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    const int grid = (M + BLOCK - 1) / BLOCK;
    gemv_x_tile<<<grid, BLOCK, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
