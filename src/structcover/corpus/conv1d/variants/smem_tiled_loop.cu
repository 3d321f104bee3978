// variant: persistent blocks walk tiles in a loop; each tile+halo staged in static smem with barriers inside the loop.
#include <cuda_runtime.h>

#define BLOCK 128
#define MAX_RADIUS 64

__global__ void conv1d_tiled_loop(const float* x, const float* w, float* y, int n, int radius) {
    __shared__ float tile[BLOCK + 2 * MAX_RADIUS];
    __shared__ float ws[2 * MAX_RADIUS + 1];
    for (int t = threadIdx.x; t <= 2 * radius; t += BLOCK) ws[t] = w[t];
    for (int start = blockIdx.x * BLOCK; start < n; start += BLOCK * gridDim.x) {
        __syncthreads();  // the previous tile is fully consumed (and ws is written on the first pass)
        for (int t = threadIdx.x; t < BLOCK + 2 * radius; t += BLOCK) {
            const int k = start - radius + t;
            tile[t] = (k >= 0 && k < n) ? x[k] : 0.0f;
        }
        __syncthreads();
        const int i = start + threadIdx.x;
        if (i < n) {
            float acc = 0.0f;
            for (int j = 0; j <= 2 * radius; ++j) acc += ws[j] * tile[threadIdx.x + j];
            y[i] = acc;
        }
    }
}

extern "C" int launch(const float* x, const float* w, float* y, int n, int radius, cudaStream_t stream) {
    if (radius > MAX_RADIUS) return (int)cudaErrorInvalidValue;
    int grid = (n + BLOCK - 1) / BLOCK;
    if (grid > 64) grid = 64;
    if (grid < 1) grid = 1;
    conv1d_tiled_loop<<<grid, BLOCK, 0, stream>>>(x, w, y, n, radius);
    return (int)cudaGetLastError();
}
