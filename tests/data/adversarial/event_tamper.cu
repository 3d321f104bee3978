// cheat: no_timing_tampering -- records its own events around nothing, to confuse event timing.
#include <cuda_runtime.h>

__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start, stream);
    cudaEventRecord(stop, stream);
    scale<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
