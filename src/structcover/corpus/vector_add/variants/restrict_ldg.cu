// variant: one thread per element with __restrict__ pointers and read-only __ldg loads, 512-thread blocks.
#include <cuda_runtime.h>

__global__ void vector_add_ldg(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = __ldg(a + i) + __ldg(b + i);
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    const int block = 512;
    const int grid = (n + block - 1) / block;
    vector_add_ldg<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
