// task: sum
// expect: race
// One block, grid-stride loop, every thread does `out[0] += x[i]` on global memory: no barrier
// or warp collective anywhere, so the emulator would run the threads one after another.
#include <cuda_runtime.h>
__global__ void sum(const float* x, float* out, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[0] += x[i];
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    cudaMemsetAsync(out, 0, sizeof(float), s);
    sum<<<1, 256, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}
