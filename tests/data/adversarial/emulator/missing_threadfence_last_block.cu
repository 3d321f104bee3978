// task: sum
// expect: unsupported
// The last-block reduction of the CUDA samples without its __threadfence(): a block's partial
// sum may not be visible when the last block reads it. x86 store order hides the bug.
#include <cuda_runtime.h>
__device__ unsigned int blocks_done = 0;
__global__ void sum(const float* x, float* partial, float* out, int n) {
    __shared__ float s[256];
    __shared__ bool last;
    int tid = threadIdx.x, i = blockIdx.x * 256 + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = s[0];
        unsigned int ticket = atomicInc(&blocks_done, gridDim.x);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last && tid == 0) {
        float t = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
        out[0] = t;
        blocks_done = 0;
    }
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    int blocks = (n + 255) / 256;
    float* partial;
    cudaMalloc(&partial, blocks * sizeof(float));
    sum<<<blocks, 256, 0, s>>>(x, partial, out, n);
    cudaFree(partial);
    return (int)cudaGetLastError();
}
