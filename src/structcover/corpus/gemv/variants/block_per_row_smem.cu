// variant: one 128-thread block per row, shared-memory tree reduction with barriers inside the loop.
#include <cuda_runtime.h>

#define BLOCK 128

__global__ void gemv_block(const float* A, const float* x, float* y, int M, int K) {
    __shared__ float red[BLOCK];
    const int r = blockIdx.x;
    float acc = 0.0f;
    for (int k = threadIdx.x; k < K; k += BLOCK) acc += A[(size_t)r * K + k] * x[k];
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[r] = red[0];
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    gemv_block<<<M, BLOCK, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
