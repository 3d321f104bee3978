// variant: split-K over a 2D grid: each block dots a 64-wide K slice for 128 rows and atomically adds partials into y.
#include <cuda_runtime.h>

#define ROWS_PER_BLOCK 128
#define K_SLICE 64

__global__ void gemv_split_k(const float* A, const float* x, float* y, int M, int K) {
    __shared__ float xs[K_SLICE];
    const int k0 = blockIdx.y * K_SLICE;
    for (int t = threadIdx.x; t < K_SLICE; t += blockDim.x) xs[t] = (k0 + t < K) ? x[k0 + t] : 0.0f;
    __syncthreads();
    const int r = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x;
    if (r >= M) return;
    const int len = (K - k0 < K_SLICE) ? K - k0 : K_SLICE;
    float acc = 0.0f;
    for (int k = 0; k < len; ++k) acc += A[(size_t)r * K + k0 + k] * xs[k];
    atomicAdd(&y[r], acc);
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    cudaMemsetAsync(y, 0, M * sizeof(float), stream);
    dim3 grid((M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, (K + K_SLICE - 1) / K_SLICE);
    gemv_split_k<<<grid, ROWS_PER_BLOCK, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
