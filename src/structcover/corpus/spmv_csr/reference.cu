// reference: scalar CSR, one thread per row walking its nonzeros (indirect x[col_idx[k]] gathers).
#include <cuda_runtime.h>

__global__ void spmv_scalar(const int* row_ptr, const int* col_idx, const float* vals, const float* x, float* y, int n) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    float acc = 0.0f;
    for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) acc += vals[k] * x[col_idx[k]];
    y[row] = acc;
}

extern "C" int launch(const int* row_ptr, const int* col_idx, const float* vals, const float* x, float* y, int n, cudaStream_t stream) {
    const int block = 128;
    const int grid = (n + block - 1) / block;
    spmv_scalar<<<grid, block, 0, stream>>>(row_ptr, col_idx, vals, x, y, n);
    return (int)cudaGetLastError();
}
