// variant: block per row; max and sum reduced per warp in smem with __syncwarp steps, warp results combined by thread 0.
#include <cuda_runtime.h>
#include <math.h>

#define BLOCK 128
#define WARPS (BLOCK / 32)

__global__ void softmax_warp_smem(const float* x, float* y, int rows, int cols) {
    __shared__ float buf[BLOCK];
    __shared__ float stat;
    const int tid = threadIdx.x, lane = tid & 31;
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = tid; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
    buf[tid] = m;
    __syncwarp();
    for (int s = 16; s > 0; s >>= 1) {
        if (lane < s) buf[tid] = fmaxf(buf[tid], buf[tid + s]);
        __syncwarp();
    }
    __syncthreads();
    if (tid == 0) {
        float t = buf[0];
        for (int w = 1; w < WARPS; ++w) t = fmaxf(t, buf[w * 32]);
        stat = t;
    }
    __syncthreads();
    m = stat;
    float sum = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) sum += expf(xr[c] - m);
    buf[tid] = sum;
    __syncwarp();
    for (int s = 16; s > 0; s >>= 1) {
        if (lane < s) buf[tid] += buf[tid + s];
        __syncwarp();
    }
    __syncthreads();
    if (tid == 0) {
        float t = 0.0f;
        for (int w = 0; w < WARPS; ++w) t += buf[w * 32];
        stat = t;
    }
    __syncthreads();
    const float inv = 1.0f / stat;
    for (int c = tid; c < cols; c += BLOCK) yr[c] = expf(xr[c] - m) * inv;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    softmax_warp_smem<<<rows, BLOCK, 0, stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
