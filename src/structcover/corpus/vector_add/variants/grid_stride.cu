// variant: grid-stride loop over a fixed, capped grid of 128-thread blocks (coalesced).
#include <cuda_runtime.h>

__global__ void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        c[i] = a[i] + b[i];
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    const int block = 128;
    int grid = (n + block - 1) / block;
    if (grid > 132) grid = 132;  // a few waves' worth; the loop covers the rest
    if (grid < 1) grid = 1;
    vector_add_grid_stride<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
