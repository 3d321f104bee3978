// reference: one thread per element on a 16x16 2D grid; threadIdx.x walks input columns (coalesced read, strided write).
#include <cuda_runtime.h>

__global__ void transpose_kernel(const float* src, float* out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = src[r * cols + c];
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    dim3 block(16, 16);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    transpose_kernel<<<grid, block, 0, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
