// cheat: a partly initialised local array -- part[1] is added into but never set first.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float part[2];
    if (i < n) {
        part[0] = a[i];
        part[1] += b[i];
        c[i] = part[0] + part[1];
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
