// variant: one 128-thread block per row, row cached in dynamic smem, shared-memory tree reductions with barriers in loops.
#include <cuda_runtime.h>
#include <math.h>

#define BLOCK 128

__device__ float tree_sum(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();  // every thread has read red[0] before it is overwritten
    return total;
}

__global__ void layernorm_block(const float* x, const float* gamma, const float* beta, float* y,
                                int rows, int cols, float eps) {
    extern __shared__ float row[];  // cols floats
    __shared__ float red[BLOCK];
    const size_t base = (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        const float v = x[base + c];
        row[c] = v;
        s += v;
    }
    const float mean = tree_sum(s, red) / cols;
    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        const float d = row[c] - mean;  // each thread rereads only the elements it wrote
        q += d * d;
    }
    const float inv_std = 1.0f / sqrtf(tree_sum(q, red) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK) y[base + c] = (row[c] - mean) * inv_std * gamma[c] + beta[c];
}

extern "C" int launch(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols, float eps, cudaStream_t stream) {
    layernorm_block<<<rows, BLOCK, cols * sizeof(float), stream>>>(x, gamma, beta, y, rows, cols, eps);
    return (int)cudaGetLastError();
}
