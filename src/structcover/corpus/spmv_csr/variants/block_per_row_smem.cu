// variant: one 64-thread block per row, shared-memory tree reduction with barriers in the loop.
#include <cuda_runtime.h>

#define BLOCK 64

__global__ void spmv_block(const int* row_ptr, const int* col_idx, const float* vals, const float* x, float* y, int n) {
    __shared__ float red[BLOCK];
    const int row = blockIdx.x;
    float acc = 0.0f;
    for (int k = row_ptr[row] + threadIdx.x; k < row_ptr[row + 1]; k += BLOCK) acc += vals[k] * x[col_idx[k]];
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = red[0];
}

extern "C" int launch(const int* row_ptr, const int* col_idx, const float* vals, const float* x, float* y, int n, cudaStream_t stream) {
    spmv_block<<<n, BLOCK, 0, stream>>>(row_ptr, col_idx, vals, x, y, n);
    return (int)cudaGetLastError();
}
