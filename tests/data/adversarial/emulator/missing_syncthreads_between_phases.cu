// task: sum
// expect: race
// Two accumulation phases into one shared slot per warp-pair, with the barrier between them
// left out: threads of phase 2 update the slots phase 1 is still updating.
#include <cuda_runtime.h>
__global__ void sum(const float* x, float* out, int n) {
    __shared__ float slot[4];
    int tid = threadIdx.x, i = blockIdx.x * 256 + tid;
    if (tid < 4) slot[tid] = 0.0f;
    __syncthreads();
    float v = i < n ? x[i] : 0.0f;
    if (tid < 128) slot[tid / 32] += v;          // phase 1: lanes of a warp take turns
    // __syncthreads() missing here
    if (tid >= 128) slot[(tid - 128) / 32] += v; // phase 2 reuses the same slots
    __syncthreads();
    if (tid == 0) atomicAdd(out, slot[0] + slot[1] + slot[2] + slot[3]);
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    cudaMemsetAsync(out, 0, sizeof(float), s);
    sum<<<(n + 255) / 256, 256, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}
