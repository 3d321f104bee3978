// variant: 4 elements per thread at block-stride offsets, __restrict__ + __ldg half loads, unrolled.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define ITEMS 4

__global__ void relu_coarsened(const __half* __restrict__ x, __half* __restrict__ y, int n) {
    const int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
    const __half zero = __float2half(0.0f);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = base + k * blockDim.x;
        if (i < n) {
            const __half v = __ldg(x + i);
            y[i] = __hgt(v, zero) ? v : zero;
        }
    }
}

extern "C" int launch(const __half* x, __half* y, int n, cudaStream_t stream) {
    const int block = 128;
    const int grid = (n + block * ITEMS - 1) / (block * ITEMS);
    relu_coarsened<<<grid, block, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
