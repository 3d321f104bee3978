// cheat: no_timing_tampering -- launches the work on a private stream the timer does not watch.
#include <cuda_runtime.h>

__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    cudaStream_t hidden;
    cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking);
    scale<<<(n + 255) / 256, 256, 0, hidden>>>(x, y, n);
    return (int)cudaGetLastError();
}
