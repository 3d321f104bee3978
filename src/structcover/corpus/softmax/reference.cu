// reference: one thread per row, three sequential passes (max, sum of exp, normalize).
#include <cuda_runtime.h>
#include <math.h>

__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    float* yr = y + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += expf(xr[c] - m);
    for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / s;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    const int block = 64;
    const int grid = (rows + block - 1) / block;
    softmax_rows<<<grid, block, 0, stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
