// variant: grid-stride loop over a capped grid of 256-thread blocks, explicit fmaf.
#include <cuda_runtime.h>

__global__ void saxpy_grid_stride(const float* x, float* y, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = fmaf(a, x[i], y[i]);
    }
}

extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    const int block = 256;
    int grid = (n + block - 1) / block;
    if (grid > 64) grid = 64;
    if (grid < 1) grid = 1;
    saxpy_grid_stride<<<grid, block, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
