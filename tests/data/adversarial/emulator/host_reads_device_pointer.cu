// task: sum
// expect: crash
// The launcher computes the answer on the host straight from the device pointer x (only
// cudaMemcpy may move device data to the host), then copies it to out.
#include <cuda_runtime.h>
__global__ void nop(float*) {}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    double total = 0.0;
    for (int i = 0; i < n; ++i) total += x[i];
    float f = (float)total;
    cudaMemcpy(out, &f, sizeof(float), cudaMemcpyHostToDevice);
    nop<<<1, 1, 0, s>>>(out);
    return (int)cudaGetLastError();
}
