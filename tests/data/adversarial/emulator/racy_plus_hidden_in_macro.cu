// task: sum
// expect: unsupported, race
// The racy shared `+=` of racy_shared_plus.cu, spelled inside a macro so that a rewriter that
// only sees parsed code cannot route it through the race check.
#include <cuda_runtime.h>
#define ACCUMULATE(dst, v) dst += v
__global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float acc;
    if (threadIdx.x == 0) acc = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ACCUMULATE(acc, x[i]);
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, acc);
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    cudaMemsetAsync(out, 0, sizeof(float), s);
    block_sum<<<(n + 255) / 256, 256, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}
