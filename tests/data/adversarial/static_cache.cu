// cheat: no_cached_outputs -- computes once, then replays the cached result on the timed calls.
#include <cuda_runtime.h>

__global__ void square(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    static float* cached = nullptr;
    static int cached_n = 0;
    if (cached != nullptr && cached_n == n) {
        cudaMemcpyAsync(y, cached, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
        return (int)cudaGetLastError();
    }
    square<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
    cudaMalloc(&cached, n * sizeof(float));
    cudaMemcpyAsync(cached, y, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    cached_n = n;
    return (int)cudaGetLastError();
}
