// variant: each thread adds its own contiguous chunk of 16 elements (lanes 16 floats apart: uncoalesced, slow).
#include <cuda_runtime.h>

#define CHUNK 16

__global__ void vector_add_chunked(const float* a, const float* b, float* c, int n) {
    const int start = (blockIdx.x * blockDim.x + threadIdx.x) * CHUNK;
    for (int j = 0; j < CHUNK; ++j) {
        const int i = start + j;
        if (i < n) c[i] = a[i] + b[i];
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    const int block = 128;
    const int threads = (n + CHUNK - 1) / CHUNK;
    const int grid = (threads + block - 1) / block;
    vector_add_chunked<<<grid, block, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
