// variant: one thread per row; sum and sum of squares in two separate loops (var = E[x^2] - mean^2), then normalize.
#include <cuda_runtime.h>
#include <math.h>

__global__ void layernorm_sumsq(const float* x, const float* gamma, const float* beta, float* y,
                                int rows, int cols, float eps) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f, ss = 0.0f;
    for (int c = 0; c < cols; ++c) {
        s += x[(size_t)r * cols + c];
    }
    for (int c = 0; c < cols; ++c) {
        ss += x[(size_t)r * cols + c] * x[(size_t)r * cols + c];
    }
    const float mean = s / cols;
    const float var = fmaxf(ss / cols - mean * mean, 0.0f);
    const float inv_std = rsqrtf(var + eps);
    for (int c = 0; c < cols; ++c) y[(size_t)r * cols + c] = (x[(size_t)r * cols + c] - mean) * inv_std * gamma[c] + beta[c];
}

extern "C" int launch(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols, float eps, cudaStream_t stream) {
    const int block = 64;
    const int grid = (rows + block - 1) / block;
    layernorm_sumsq<<<grid, block, 0, stream>>>(x, gamma, beta, y, rows, cols, eps);
    return (int)cudaGetLastError();
}
