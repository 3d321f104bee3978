// variant: 16x16 shared tile filled with a bounds-checked select (zero fill), transposed read from the unpadded tile.
#include <cuda_runtime.h>

#define TILE 16

__global__ void transpose_tile_select(const float* src, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    const int r = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = (r < rows && blockIdx.x * TILE + threadIdx.x < cols) ? src[r * cols + blockIdx.x * TILE + threadIdx.x] : 0.0f;
    __syncthreads();
    const int orow = blockIdx.x * TILE + threadIdx.y;  // a row of out is a column of src
    const int ocol = blockIdx.y * TILE + threadIdx.x;
    if (orow < cols && ocol < rows) out[orow * rows + ocol] = tile[threadIdx.x][threadIdx.y];
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 block(TILE, TILE);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tile_select<<<grid, block, 0, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
