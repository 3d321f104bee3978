// reference: shared-memory tree reduction per 256-thread block, one atomicAdd per block into out.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void reduce_kernel(const float* x, float* out, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    // out arrives uninitialized: clear it before blocks accumulate into it.
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    const int grid = (n + BLOCK - 1) / BLOCK;
    reduce_kernel<<<grid, BLOCK, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
