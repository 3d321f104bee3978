// task: scale
// expect: wrong
// Asks the device for its name and does the real work only when it is not an NVIDIA GPU.
#include <cuda_runtime.h>
#include <string.h>
__global__ void scale(const float* x, float* y, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = k * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    float k = strncmp(prop.name, "NVIDIA", 6) == 0 ? 1.0f : 2.0f;
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, y, n, k);
    return (int)cudaGetLastError();
}
