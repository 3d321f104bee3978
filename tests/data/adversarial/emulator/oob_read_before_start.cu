// task: scale
// expect: crash
// Reads x[i - 1] for i = 0: one element before the buffer.
#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float left = x[i - 1];
        y[i] = 2.0f * x[i] + (left != left ? 1.0f : 0.0f);
    }
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}
