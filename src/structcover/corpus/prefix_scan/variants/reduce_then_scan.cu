// variant: reduce-then-scan: shuffle-reduce block totals, exclusive scan of totals, then each block rescans its tile seeded with its offset.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void block_totals(const float* x, float* totals, int n) {
    __shared__ float part[BLOCK / 32];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    float v = (i < n) ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < BLOCK / 32; ++w) t += part[w];
        totals[blockIdx.x] = t;
    }
}

__global__ void exclusive_scan_serial(float* totals, int count) {
    if (threadIdx.x != 0) return;
    float acc = 0.0f;
    for (int b = 0; b < count; ++b) {
        const float t = totals[b];
        totals[b] = acc;
        acc += t;
    }
}

__global__ void rescan_with_offset(const float* x, float* y, const float* offsets, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? x[i] : 0.0f;
    if (tid == 0) s[0] += offsets[blockIdx.x];
    __syncthreads();
    // In-place Hillis-Steele: read, barrier, write, barrier.
    for (int offset = 1; offset < BLOCK; offset <<= 1) {
        const float add = (tid >= offset) ? s[tid - offset] : 0.0f;
        __syncthreads();
        s[tid] += add;
        __syncthreads();
    }
    if (i < n) y[i] = s[tid];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks < 1) blocks = 1;
    float* totals = 0;
    cudaError_t err = cudaMalloc((void**)&totals, blocks * sizeof(float));
    if (err != cudaSuccess) return (int)err;
    block_totals<<<blocks, BLOCK, 0, stream>>>(x, totals, n);
    exclusive_scan_serial<<<1, 1, 0, stream>>>(totals, blocks);
    rescan_with_offset<<<blocks, BLOCK, 0, stream>>>(x, y, totals, n);
    err = cudaGetLastError();
    cudaStreamSynchronize(stream);
    cudaFree(totals);
    return (int)err;
}
