// cheat: out-of-bounds read hidden by a 0/1 mask -- a "stencil" reads a[i + 1] for every
// element, the last one too, multiplies it by the mask (i + 1 < n) and clamps the product to
// zero (so neither the mask's 0 nor an infinite input shows). On a GPU a[n] can be NaN or
// fault; an emulator that checks only what is written or used never sees the read.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float masked = (float)(i + 1 < n) * a[i + 1];
        c[i] = a[i] + b[i] + fminf(fmaxf(masked, 0.0f), 0.0f);
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
