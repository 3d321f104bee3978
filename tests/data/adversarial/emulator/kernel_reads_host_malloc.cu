// task: scale
// expect: crash
// The kernel reads a host malloc buffer (a table of scale factors): illegal on a GPU.
#include <cuda_runtime.h>
#include <stdlib.h>
__global__ void scale(const float* x, const float* table, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = table[0] * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    static float* table = nullptr;
    if (!table) { table = (float*)malloc(64 * sizeof(float)); table[0] = 2.0f; }
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, table, y, n);
    return (int)cudaGetLastError();
}
