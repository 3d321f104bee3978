// variant: padded [32][33] shared tile (conflict-free), 32x8 threads each moving 4 rows (coarsened loops), coalesced both ways.
#include <cuda_runtime.h>

#define TILE 32
#define ROWS_PER_PASS 8

__global__ void transpose_padded(const float* __restrict__ src, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    const int c = blockIdx.x * TILE + threadIdx.x;
    const int r0 = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS_PER_PASS) {
        if (r0 + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = src[(r0 + j) * cols + c];
    }
    __syncthreads();
    const int oc = blockIdx.y * TILE + threadIdx.x;
    const int or0 = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS_PER_PASS) {
        if (or0 + j < cols && oc < rows) out[(or0 + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_padded<<<grid, block, 0, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
