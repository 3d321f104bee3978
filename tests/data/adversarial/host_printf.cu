// cheat: no_host_output -- prints input values from the launcher; logs and verdicts would carry the data out.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void square(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    square<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
    fprintf(stderr, "first input %f\n", x[0]);
    return (int)cudaGetLastError();
}
