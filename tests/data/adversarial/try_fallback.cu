// cheat: no_fallback -- runs a broken fast kernel and falls back when anything throws.
#include <cuda_runtime.h>
#include <stdexcept>

__global__ void fast_but_wrong(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) y[i] = x[i];
}

__global__ void slow_correct(const float* x, float* y, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    try {
        fast_but_wrong<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
        if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("fast path failed");
    } catch (...) {
        slow_correct<<<1, 1024, 0, stream>>>(x, y, n);
    }
    return (int)cudaGetLastError();
}
