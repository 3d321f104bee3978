// variant: per-block privatized histogram in dynamic smem (shared atomics, grid-stride), merged with one global atomic per bin.
#include <cuda_runtime.h>

__global__ void histogram_private(const int* data, int* hist, int n, int nbins) {
    extern __shared__ int local[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const int b = data[i];
        if (b >= 0 && b < nbins) atomicAdd(&local[b], 1);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
        const int c = local[b];
        if (c != 0) atomicAdd(&hist[b], c);
    }
}

extern "C" int launch(const int* data, int* hist, int n, int nbins, cudaStream_t stream) {
    cudaMemsetAsync(hist, 0, nbins * sizeof(int), stream);
    const int block = 256;
    int grid = (n + block - 1) / block;
    if (grid > 64) grid = 64;
    if (grid < 1) grid = 1;
    histogram_private<<<grid, block, nbins * sizeof(int), stream>>>(data, hist, n, nbins);
    return (int)cudaGetLastError();
}
