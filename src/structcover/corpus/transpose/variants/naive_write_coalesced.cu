// variant: one thread per element with threadIdx.x walking output columns (coalesced write, strided read), 32x8 blocks.
#include <cuda_runtime.h>

__global__ void transpose_write_major(const float* src, float* out, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;  // output column = input row
    const int c = blockIdx.y * blockDim.y + threadIdx.y;  // output row = input column
    if (r < rows && c < cols) out[c * rows + r] = src[r * cols + c];
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 block(32, 8);
    dim3 grid((rows + block.x - 1) / block.x, (cols + block.y - 1) / block.y);
    transpose_write_major<<<grid, block, 0, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
