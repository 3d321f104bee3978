// reference: one thread per output, reads its 2R+1 neighbours straight from global memory with edge checks.
#include <cuda_runtime.h>

__global__ void conv1d_naive(const float* x, const float* w, float* y, int n, int radius) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int j = -radius; j <= radius; ++j) {
        const int k = i + j;
        if (k >= 0 && k < n) acc += w[j + radius] * x[k];
    }
    y[i] = acc;
}

extern "C" int launch(const float* x, const float* w, float* y, int n, int radius, cudaStream_t stream) {
    const int block = 256;
    const int grid = (n + block - 1) / block;
    conv1d_naive<<<grid, block, 0, stream>>>(x, w, y, n, radius);
    return (int)cudaGetLastError();
}
