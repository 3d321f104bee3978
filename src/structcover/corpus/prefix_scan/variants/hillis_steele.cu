// variant: scan-then-propagate: Hillis-Steele double-buffered smem block scan (barrier per step), serial scan of block sums, add pass.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void block_scan_hs(const float* x, float* y, float* sums, int n) {
    __shared__ float buf[2][BLOCK];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * BLOCK + tid;
    int out = 0;
    buf[out][tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        const int in = out;
        out = 1 - out;
        float v = buf[in][tid];
        if (tid >= offset) v += buf[in][tid - offset];
        buf[out][tid] = v;
        __syncthreads();
    }
    if (i < n) y[i] = buf[out][tid];
    if (tid == BLOCK - 1) sums[blockIdx.x] = buf[out][tid];
}

__global__ void scan_sums_serial(float* sums, int count) {
    if (threadIdx.x != 0) return;
    for (int b = 1; b < count; ++b) sums[b] += sums[b - 1];
}

__global__ void add_block_offsets(float* y, const float* sums, int n) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (blockIdx.x > 0 && i < n) y[i] += sums[blockIdx.x - 1];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks < 1) blocks = 1;
    float* sums = 0;
    cudaError_t err = cudaMalloc((void**)&sums, blocks * sizeof(float));
    if (err != cudaSuccess) return (int)err;
    block_scan_hs<<<blocks, BLOCK, 0, stream>>>(x, y, sums, n);
    scan_sums_serial<<<1, 32, 0, stream>>>(sums, blocks);
    add_block_offsets<<<blocks, BLOCK, 0, stream>>>(y, sums, n);
    err = cudaGetLastError();
    cudaStreamSynchronize(stream);
    cudaFree(sums);
    return (int)err;
}
