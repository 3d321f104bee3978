// reference: a single thread walks the array in order (sequential running sum); slow but unambiguous.
#include <cuda_runtime.h>

__global__ void scan_serial(const float* x, float* y, int n) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
        acc += x[i];
        y[i] = acc;
    }
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    scan_serial<<<1, 1, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
