// reference: one thread per element, bounds-checked, 256-thread blocks.
#include <cuda_runtime.h>

__global__ void saxpy_kernel(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    const int block = 256;
    const int grid = (n + block - 1) / block;
    saxpy_kernel<<<grid, block, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
