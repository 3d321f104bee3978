// variant: each thread computes two rows (r and r + half the grid's rows) in one loop, reading x[k] for both products.
#include <cuda_runtime.h>

__global__ void gemv_two_rows(const float* A, const float* x, float* y, int M, int K) {
    const int half = (M + 1) / 2;
    const int r0 = blockIdx.x * blockDim.x + threadIdx.x;
    if (r0 >= half) return;
    const int r1 = (r0 + half < M) ? r0 + half : r0;  // odd M: the last thread repeats its row
    float acc0 = 0.0f, acc1 = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc0 += A[(size_t)r0 * K + k] * x[k];
        acc1 += A[(size_t)r1 * K + k] * x[k];
    }
    y[r0] = acc0;
    y[r1] = acc1;
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    const int block = 128;
    const int half = (M + 1) / 2;
    const int grid = (half + block - 1) / block;
    gemv_two_rows<<<grid, block, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
