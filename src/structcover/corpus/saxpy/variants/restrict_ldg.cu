// variant: one thread per element, __restrict__ pointers, x read through __ldg, 1024-thread blocks.
#include <cuda_runtime.h>

__global__ void saxpy_ldg(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * __ldg(&x[i]) + y[i];
}

extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    const int block = 1024;
    const int grid = (n + block - 1) / block;
    saxpy_ldg<<<grid, block, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
