// reference: one thread per row, sequential dot product (lanes read rows K floats apart: uncoalesced A).
#include <cuda_runtime.h>

__global__ void gemv_rows(const float* A, const float* x, float* y, int M, int K) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)r * K + k] * x[k];
    y[r] = acc;
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    const int block = 128;
    const int grid = (M + block - 1) / block;
    gemv_rows<<<grid, block, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
