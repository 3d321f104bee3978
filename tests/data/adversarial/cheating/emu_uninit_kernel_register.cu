// cheat: an uninitialised register in the kernel itself -- the sum starts from whatever `s`
// held (nothing sets it), written by a multiply-add chain the compiler keeps in a register.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s;
    unsigned bias;
    if (i < n) {
        s += a[i];
        s += b[i];
        c[i] = s + (float)(bias & 0u);
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
