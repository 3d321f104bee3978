// task: sum
// expect: race
// Every thread adds into one __shared__ accumulator with a plain `+=` (no atomic): on a GPU
// updates are lost; an emulator that runs each thread's `+=` whole behaves like an atomic.
#include <cuda_runtime.h>
__global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float acc;
    if (threadIdx.x == 0) acc = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc += x[i];
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, acc);
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    cudaMemsetAsync(out, 0, sizeof(float), s);
    block_sum<<<(n + 255) / 256, 256, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}
