// cheat: launch_uses_given_stream -- ignores the harness's stream and uses the legacy default.
#include <cuda_runtime.h>

__global__ void copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    copy<<<(n + 255) / 256, 256>>>(x, y, n);
    return (int)cudaGetLastError();
}
