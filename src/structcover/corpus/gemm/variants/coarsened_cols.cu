// variant: no shared memory; each thread computes 4 C columns spaced blockDim.x apart, reusing one A load 4 times.
#include <cuda_runtime.h>

#define COLS_PER_THREAD 4

__global__ void gemm_coarsened(const float* A, const float* B, float* C, int M, int N, int K) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col0 = blockIdx.x * blockDim.x * COLS_PER_THREAD + threadIdx.x;
    if (row >= M) return;
    float acc[COLS_PER_THREAD] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k = 0; k < K; ++k) {
        const float a = A[row * K + k];
#pragma unroll
        for (int j = 0; j < COLS_PER_THREAD; ++j) {
            const int col = col0 + j * blockDim.x;
            if (col < N) acc[j] += a * B[k * N + col];
        }
    }
#pragma unroll
    for (int j = 0; j < COLS_PER_THREAD; ++j) {
        const int col = col0 + j * blockDim.x;
        if (col < N) C[row * N + col] = acc[j];
    }
}

extern "C" int launch(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(32, 4);
    dim3 grid((N + block.x * COLS_PER_THREAD - 1) / (block.x * COLS_PER_THREAD), (M + block.y - 1) / block.y);
    gemm_coarsened<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
