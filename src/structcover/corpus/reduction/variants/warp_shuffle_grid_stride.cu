// variant: grid-stride accumulation, warp __shfl_down_sync reduction, per-warp partials in smem, one atomic per block.
#include <cuda_runtime.h>

#define BLOCK 256
#define WARPS (BLOCK / 32)

__inline__ __device__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void reduce_warp_shuffle(const float* x, float* out, int n) {
    __shared__ float warp_sums[WARPS];
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) v += x[i];
    // Every thread of the block reaches the shuffles, so the full mask is valid.
    v = warp_sum(v);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < WARPS) ? warp_sums[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    int grid = (n + BLOCK - 1) / BLOCK;
    if (grid > 120) grid = 120;
    if (grid < 1) grid = 1;
    reduce_warp_shuffle<<<grid, BLOCK, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
