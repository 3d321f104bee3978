// variant: warp __shfl_up_sync scans + smem warp totals; block sums scanned by one block looping with a carry.
#include <cuda_runtime.h>

#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ float block_inclusive_scan(float v, float* wsum) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const float t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = (lane < WARPS) ? wsum[lane] : 0.0f;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float u = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o) t += u;
        }
        if (lane < WARPS) wsum[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v += wsum[warp - 1];
    __syncthreads();  // wsum is rewritten by the next call
    return v;
}

__global__ void block_scan_shfl(const float* x, float* y, float* sums, int n) {
    __shared__ float wsum[WARPS];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    const float v = block_inclusive_scan((i < n) ? x[i] : 0.0f, wsum);
    if (i < n) y[i] = v;
    if (threadIdx.x == BLOCK - 1) sums[blockIdx.x] = v;
}

__global__ void scan_sums_looped(float* sums, int count) {
    __shared__ float wsum[WARPS];
    __shared__ float carry_s;
    float carry = 0.0f;
    for (int base = 0; base < count; base += BLOCK) {
        const int idx = base + threadIdx.x;
        const float v = block_inclusive_scan((idx < count) ? sums[idx] : 0.0f, wsum) + carry;
        if (idx < count) sums[idx] = v;
        if (threadIdx.x == BLOCK - 1) carry_s = v;
        __syncthreads();
        carry = carry_s;
        __syncthreads();
    }
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
    block_scan_shfl<<<blocks, BLOCK, 0, stream>>>(x, y, sums, n);
    scan_sums_looped<<<1, BLOCK, 0, stream>>>(sums, blocks);
    add_block_offsets<<<blocks, BLOCK, 0, stream>>>(y, sums, n);
    err = cudaGetLastError();
    cudaStreamSynchronize(stream);
    cudaFree(sums);
    return (int)err;
}
