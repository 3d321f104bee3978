// variant: 32x32 shared-memory tile without padding (column reads hit one bank: 32-way conflicts), 32x32 blocks.
#include <cuda_runtime.h>

#define TILE 32

__global__ void transpose_smem(const float* src, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    const int c = blockIdx.x * TILE + threadIdx.x;
    const int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = src[r * cols + c];
    __syncthreads();
    // Swap block coordinates: this thread writes out[oc_row][oc_col] from the tile's transpose.
    const int out_col = blockIdx.y * TILE + threadIdx.x;  // an input row
    const int out_row = blockIdx.x * TILE + threadIdx.y;  // an input column
    if (out_row < cols && out_col < rows) out[out_row * rows + out_col] = tile[threadIdx.x][threadIdx.y];
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 block(TILE, TILE);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_smem<<<grid, block, 0, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
