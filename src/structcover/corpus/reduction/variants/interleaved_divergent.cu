// variant: interleaved-addressing smem tree (tid % (2*s) == 0, divergent warps, bank conflicts), 2 loads per thread.
#include <cuda_runtime.h>

#define BLOCK 128

__global__ void reduce_interleaved(const float* x, float* out, int n) {
    __shared__ float s[BLOCK];
    const unsigned int tid = threadIdx.x;
    // Each block covers 2*BLOCK elements: the first add happens during the load.
    const int i = blockIdx.x * (2 * BLOCK) + tid;
    float v = (i < n) ? x[i] : 0.0f;
    if (i + BLOCK < n) v += x[i + BLOCK];
    s[tid] = v;
    __syncthreads();
    for (unsigned int stride = 1; stride < BLOCK; stride *= 2) {
        if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    const int grid = (n + 2 * BLOCK - 1) / (2 * BLOCK);
    reduce_interleaved<<<grid, BLOCK, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
