// cheat: out-of-bounds read before the start -- every thread reads its left neighbour, the
// first one reads a[-1]; the value goes through fmaxf/fminf and a ternary, never to the output.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const volatile float* left = a - 1;
    if (i < n) {
        float l = left[i];
        float keep = i > 0 ? fminf(fmaxf(l, 0.0f), 0.0f) : 0.0f;
        c[i] = a[i] + b[i] + keep;
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
