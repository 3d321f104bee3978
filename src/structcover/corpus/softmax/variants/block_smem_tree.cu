// variant: one 256-thread block per row, max and sum reduced by shared-memory trees (barriers inside loops).
#include <cuda_runtime.h>
#include <math.h>

#define BLOCK 256

__global__ void softmax_block(const float* x, float* y, int rows, int cols) {
    __shared__ float red[BLOCK];
    const int r = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = tid; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();  // red is reused for the sum
    float sum = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) sum += expf(xr[c] - row_max);
    red[tid] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float total = red[0];
    for (int c = tid; c < cols; c += BLOCK) y[(size_t)r * cols + c] = expf(xr[c] - row_max) / total;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    softmax_block<<<rows, BLOCK, 0, stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
