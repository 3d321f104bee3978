// variant: grid-stride loop, __restrict__ + __ldg read-only loads, interior/edge split to drop bounds checks inside.
#include <cuda_runtime.h>

__global__ void conv1d_grid_stride(const float* __restrict__ x, const float* __restrict__ w,
                                   float* __restrict__ y, int n, int radius) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float acc = 0.0f;
        if (i >= radius && i + radius < n) {
            for (int j = 0; j <= 2 * radius; ++j) acc += __ldg(w + j) * __ldg(x + i - radius + j);
        } else {
            for (int j = 0; j <= 2 * radius; ++j) {
                const int k = i - radius + j;
                if (k >= 0 && k < n) acc += __ldg(w + j) * __ldg(x + k);
            }
        }
        y[i] = acc;
    }
}

extern "C" int launch(const float* x, const float* w, float* y, int n, int radius, cudaStream_t stream) {
    const int block = 128;
    int grid = (n + block - 1) / block;
    if (grid > 80) grid = 80;
    if (grid < 1) grid = 1;
    conv1d_grid_stride<<<grid, block, 0, stream>>>(x, w, y, n, radius);
    return (int)cudaGetLastError();
}
