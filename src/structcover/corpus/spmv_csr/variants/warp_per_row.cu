// variant: vector CSR, one warp per row (coalesced col_idx/vals reads), __shfl_down_sync reduction, lane 0 writes.
#include <cuda_runtime.h>

#define WARPS_PER_BLOCK 4

__global__ void spmv_vector(const int* row_ptr, const int* col_idx, const float* vals, const float* x, float* y, int n) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= n) return;  // warp-uniform
    const int begin = row_ptr[row], end = row_ptr[row + 1];
    float acc = 0.0f;
    for (int k = begin + lane; k < end; k += 32) acc += vals[k] * x[col_idx[k]];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

extern "C" int launch(const int* row_ptr, const int* col_idx, const float* vals, const float* x, float* y, int n, cudaStream_t stream) {
    const int grid = (n + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    spmv_vector<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(row_ptr, col_idx, vals, x, y, n);
    return (int)cudaGetLastError();
}
