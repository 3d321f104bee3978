// reference: one thread per element, bounds-checked, 256-thread blocks.
#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    const int block = 256;
    const int grid = (n + block - 1) / block;
    vector_add_kernel<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
