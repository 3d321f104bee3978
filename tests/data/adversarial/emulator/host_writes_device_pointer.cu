// task: scale
// expect: crash
// Copies x to the host properly, computes on the host, then stores the result straight
// through the device pointer y.
#include <cuda_runtime.h>
#include <stdlib.h>
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    float* h = (float*)malloc(n * sizeof(float));
    cudaMemcpy(h, x, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) y[i] = 2.0f * h[i];
    free(h);
    return 0;
}
