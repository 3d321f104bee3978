// variant: dynamic (extern) shared 16x17 padded tile sized at launch, 16x16 blocks, one element per thread.
#include <cuda_runtime.h>

#define TILE 16

__global__ void transpose_dynamic(const float* src, float* out, int rows, int cols) {
    extern __shared__ float tile[];  // TILE x (TILE + 1), row-major
    const int c = blockIdx.x * TILE + threadIdx.x;
    const int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y * (TILE + 1) + threadIdx.x] = src[r * cols + c];
    __syncthreads();
    const int oc = blockIdx.y * TILE + threadIdx.x;
    const int orow = blockIdx.x * TILE + threadIdx.y;
    if (orow < cols && oc < rows) out[orow * rows + oc] = tile[threadIdx.x * (TILE + 1) + threadIdx.y];
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 block(TILE, TILE);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    const size_t smem = TILE * (TILE + 1) * sizeof(float);
    transpose_dynamic<<<grid, block, smem, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
