// variant: thread coarsening, each thread computes 4 adjacent outputs from a contiguous window (lanes 4 floats apart).
#include <cuda_runtime.h>

#define OUTS 4

__global__ void conv1d_coarsened(const float* x, const float* w, float* y, int n, int radius) {
    const int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * OUTS;
    if (i0 >= n) return;
    float acc[OUTS] = {0.0f, 0.0f, 0.0f, 0.0f};
    // Each input in the window feeds up to OUTS outputs: load it once.
    for (int t = 0; t < 2 * radius + OUTS; ++t) {
        const int k = i0 - radius + t;
        const float v = (k >= 0 && k < n) ? x[k] : 0.0f;
#pragma unroll
        for (int o = 0; o < OUTS; ++o) {
            const int j = t - o;
            if (j >= 0 && j <= 2 * radius) acc[o] += w[j] * v;
        }
    }
#pragma unroll
    for (int o = 0; o < OUTS; ++o)
        if (i0 + o < n) y[i0 + o] = acc[o];
}

extern "C" int launch(const float* x, const float* w, float* y, int n, int radius, cudaStream_t stream) {
    const int block = 128;
    const int threads = (n + OUTS - 1) / OUTS;
    const int grid = (threads + block - 1) / block;
    conv1d_coarsened<<<grid, block, 0, stream>>>(x, w, y, n, radius);
    return (int)cudaGetLastError();
}
