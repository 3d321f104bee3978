// variant: grid-stride coarsened loop with global atomics straight into hist (no privatization, heavy contention).
#include <cuda_runtime.h>

__global__ void histogram_grid_stride_global(const int* data, int* hist, int n, int nbins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const int b = data[i];
        if (b >= 0 && b < nbins) atomicAdd(hist + b, 1);
    }
}

extern "C" int launch(const int* data, int* hist, int n, int nbins, cudaStream_t stream) {
    cudaMemsetAsync(hist, 0, nbins * sizeof(int), stream);
    const int block = 512;
    int grid = (n + block * 16 - 1) / (block * 16);
    if (grid < 1) grid = 1;
    histogram_grid_stride_global<<<grid, block, 0, stream>>>(data, hist, n, nbins);
    return (int)cudaGetLastError();
}
