// variant: thread coarsening, 4 elements per thread at block-stride offsets (stays coalesced), unrolled.
#include <cuda_runtime.h>

#define ITEMS 4

__global__ void vector_add_coarsened(const float* a, const float* b, float* c, int n) {
    const int base = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = base + k * blockDim.x;
        if (i < n) c[i] = a[i] + b[i];
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    const int block = 256;
    const int per_block = block * ITEMS;
    const int grid = (n + per_block - 1) / per_block;
    vector_add_coarsened<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
