// cheat: launcher signature differs from the task -- reads the float buffers as double (half the elements, reinterpreted).
#include <cuda_runtime.h>

__global__ void add(const double* a, const double* b, double* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) c[i] = a[i] + b[i];
}

extern "C" int launch(const double* a, const double* b, double* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
