// variant: each thread computes two adjacent outputs in one tap loop; each tap w[j + R] feeds both sums.
#include <cuda_runtime.h>

__device__ __forceinline__ float at_or_zero(const float* x, int k, int n) {
    return (k >= 0 && k < n) ? x[k] : 0.0f;
}

__global__ void conv1d_two_outputs(const float* x, const float* w, float* y, int n, int radius) {
    const int i0 = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i0 >= n) return;
    float acc0 = 0.0f, acc1 = 0.0f;
    for (int j = -radius; j <= radius; ++j) {
        acc0 += w[j + radius] * at_or_zero(x, i0 + j, n);
        acc1 += w[j + radius] * at_or_zero(x, i0 + 1 + j, n);
    }
    y[i0] = acc0;
    if (i0 + 1 < n) y[i0 + 1] = acc1;
}

extern "C" int launch(const float* x, const float* w, float* y, int n, int radius, cudaStream_t stream) {
    const int block = 128;
    const int pairs = (n + 1) / 2;
    const int grid = (pairs + block - 1) / block;
    conv1d_two_outputs<<<grid, block, 0, stream>>>(x, w, y, n, radius);
    return (int)cudaGetLastError();
}
