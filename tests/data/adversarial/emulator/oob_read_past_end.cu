// task: scale
// expect: crash
// Reads one element past the end of x (a stencil without a bounds check); the value is
// multiplied by zero, so only a real bounds check can see it.
#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 0.0f * x[i + 1];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}
