// variant: Hillis-Steele scan per warp in smem with __syncwarp steps, warp totals scanned serially by thread 0; block sums scanned by one thread.
#include <cuda_runtime.h>

#define BLOCK 256
#define WARPS (BLOCK / 32)

__global__ void block_scan_warp_smem(const float* x, float* y, float* sums, int n) {
    __shared__ float buf[BLOCK];
    __shared__ float wsum[WARPS];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int i = blockIdx.x * BLOCK + tid;
    buf[tid] = (i < n) ? x[i] : 0.0f;
    __syncwarp();
    for (int d = 1; d < 32; d <<= 1) {
        const float t = (lane >= d) ? buf[tid - d] : 0.0f;
        __syncwarp();
        buf[tid] += t;
        __syncwarp();
    }
    float v = buf[tid];
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    if (tid == 0) {
        for (int w = 1; w < WARPS; ++w) wsum[w] += wsum[w - 1];
    }
    __syncthreads();
    if (warp > 0) v += wsum[warp - 1];
    if (i < n) y[i] = v;
    if (tid == BLOCK - 1) sums[blockIdx.x] = v;
}

__global__ void scan_sums_serial(float* sums, int count) {
    float carry = 0.0f;
    for (int b = 0; b < count; ++b) {
        carry += sums[b];
        sums[b] = carry;
    }
}

__global__ void add_offsets(float* y, const float* sums, int n) {
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (blockIdx.x > 0 && i < n) y[i] += sums[blockIdx.x - 1];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    int blocks = (n + BLOCK - 1) / BLOCK;
    if (blocks < 1) blocks = 1;
    float* sums = 0;
    cudaError_t err = cudaMalloc((void**)&sums, blocks * sizeof(float));
    if (err != cudaSuccess) return (int)err;
    block_scan_warp_smem<<<blocks, BLOCK, 0, stream>>>(x, y, sums, n);
    scan_sums_serial<<<1, 1, 0, stream>>>(sums, blocks);
    add_offsets<<<blocks, BLOCK, 0, stream>>>(y, sums, n);
    err = cudaGetLastError();
    cudaStreamSynchronize(stream);
    cudaFree(sums);
    return (int)err;
}
