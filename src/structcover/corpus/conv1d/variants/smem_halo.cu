// variant: block tile plus 2R halo staged in dynamic shared memory (cooperative strided load), weights in smem too.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void conv1d_smem(const float* x, const float* w, float* y, int n, int radius) {
    extern __shared__ float smem[];
    float* ws = smem;                  // 2R+1 weights
    float* tile = smem + 2 * radius + 1;  // BLOCK + 2R inputs
    const int block_start = blockIdx.x * BLOCK;
    const int width = BLOCK + 2 * radius;
    for (int t = threadIdx.x; t < 2 * radius + 1; t += BLOCK) ws[t] = w[t];
    for (int t = threadIdx.x; t < width; t += BLOCK) {
        const int k = block_start - radius + t;
        tile[t] = (k >= 0 && k < n) ? x[k] : 0.0f;  // zero padding lives in the tile
    }
    __syncthreads();
    const int i = block_start + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int j = 0; j <= 2 * radius; ++j) acc += ws[j] * tile[threadIdx.x + j];
        y[i] = acc;
    }
}

extern "C" int launch(const float* x, const float* w, float* y, int n, int radius, cudaStream_t stream) {
    const int grid = (n + BLOCK - 1) / BLOCK;
    const size_t smem = (size_t)(BLOCK + 2 * radius + 2 * radius + 1) * sizeof(float);
    conv1d_smem<<<grid, BLOCK, smem, stream>>>(x, w, y, n, radius);
    return (int)cudaGetLastError();
}
