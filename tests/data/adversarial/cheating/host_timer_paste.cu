// cheat: timing tampering via a pasted host timer -- clock_gettime is spelled by token pasting and spun on.
#include <cuda_runtime.h>
#include <time.h>
#define CAT(a, b) a##b

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    struct timespec t;
    CAT(clock_get, time)(CLOCK_MONOTONIC, &t);
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
