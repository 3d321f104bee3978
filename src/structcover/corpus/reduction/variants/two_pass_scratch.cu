// variant: two kernels, no atomics: per-block sums into a cudaMalloc scratch buffer, then one block reduces them.
#include <cuda_runtime.h>

#define BLOCK 256

__device__ float block_tree_sum(float v, float* s) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    return s[0];
}

__global__ void partial_sums(const float* x, float* partial, int n) {
    __shared__ float s[BLOCK];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    const float total = block_tree_sum((i < n) ? x[i] : 0.0f, s);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void final_sum(const float* partial, float* out, int count) {
    __shared__ float s[BLOCK];
    float v = 0.0f;
    for (int i = threadIdx.x; i < count; i += BLOCK) v += partial[i];
    const float total = block_tree_sum(v, s);
    if (threadIdx.x == 0) out[0] = total;
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    int grid = (n + BLOCK - 1) / BLOCK;
    if (grid < 1) grid = 1;
    float* partial = 0;
    cudaError_t err = cudaMalloc((void**)&partial, grid * sizeof(float));
    if (err != cudaSuccess) return (int)err;
    partial_sums<<<grid, BLOCK, 0, stream>>>(x, partial, n);
    final_sum<<<1, BLOCK, 0, stream>>>(partial, out, grid);
    err = cudaGetLastError();
    cudaStreamSynchronize(stream);
    cudaFree(partial);
    return (int)err;
}
