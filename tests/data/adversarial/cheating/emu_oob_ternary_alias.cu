// cheat: out-of-bounds read through a pointer alias, masked by a ternary -- `nb` is a + 1
// (volatile, so the load is really issued), its value is selected away for the last element.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const volatile float* nb = a + 1;
    if (i < n) {
        float next = nb[i];
        c[i] = a[i] + b[i] + (i + 1 < n ? fminf(fmaxf(next, 0.0f), 0.0f) : 0.0f);
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
