// variant: one sub-histogram per warp in smem (less shared-atomic contention), summed across warps before the global merge.
#include <cuda_runtime.h>

#define BLOCK 128
#define WARPS (BLOCK / 32)

__global__ void histogram_warp_private(const int* data, int* hist, int n, int nbins) {
    extern __shared__ int sub[];  // WARPS * nbins counters
    for (int t = threadIdx.x; t < WARPS * nbins; t += BLOCK) sub[t] = 0;
    __syncthreads();
    int* mine = sub + (threadIdx.x / 32) * nbins;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) {
        const int b = data[i];
        if (b >= 0 && b < nbins) atomicAdd(mine + b, 1);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += BLOCK) {
        int c = 0;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) c += sub[w * nbins + b];
        if (c) atomicAdd(hist + b, c);
    }
}

extern "C" int launch(const int* data, int* hist, int n, int nbins, cudaStream_t stream) {
    cudaMemsetAsync(hist, 0, nbins * sizeof(int), stream);
    int grid = (n + BLOCK * 8 - 1) / (BLOCK * 8);
    if (grid < 1) grid = 1;
    histogram_warp_private<<<grid, BLOCK, WARPS * nbins * sizeof(int), stream>>>(data, hist, n, nbins);
    return (int)cudaGetLastError();
}
