// variant: flat 1D grid-stride loop over output elements (coalesced write, div/mod index math, strided read).
#include <cuda_runtime.h>

__global__ void transpose_flat(const float* src, float* out, int rows, int cols) {
    const int total = rows * cols;
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < total; o += blockDim.x * gridDim.x) {
        const int c = o / rows;  // output row
        const int r = o - c * rows;  // output column
        out[o] = src[r * cols + c];
    }
}

extern "C" int launch(const float* src, float* out, int rows, int cols, cudaStream_t stream) {
    const int block = 256;
    int grid = (rows * cols + block - 1) / block;
    if (grid > 48) grid = 48;
    if (grid < 1) grid = 1;
    transpose_flat<<<grid, block, 0, stream>>>(src, out, rows, cols);
    return (int)cudaGetLastError();
}
