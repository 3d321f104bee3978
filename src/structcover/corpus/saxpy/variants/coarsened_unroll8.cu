// variant: 8 elements per thread at block-stride offsets, #pragma unroll, loads hoisted before stores.
#include <cuda_runtime.h>

#define ITEMS 8

__global__ void saxpy_coarsened(const float* x, float* y, float a, int n) {
    const int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    float vx[ITEMS];
    float vy[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = base + k * blockDim.x;
        vx[k] = (i < n) ? x[i] : 0.0f;
        vy[k] = (i < n) ? y[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = base + k * blockDim.x;
        if (i < n) y[i] = a * vx[k] + vy[k];
    }
}

extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    const int block = 128;
    const int grid = (n + block * ITEMS - 1) / (block * ITEMS);
    saxpy_coarsened<<<grid, block, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
