// reference: one thread per element, global atomicAdd into the histogram (cleared first).
#include <cuda_runtime.h>

__global__ void histogram_global(const int* data, int* hist, int n, int nbins) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const int b = data[i];
        if (b >= 0 && b < nbins) atomicAdd(&hist[b], 1);
    }
}

extern "C" int launch(const int* data, int* hist, int n, int nbins, cudaStream_t stream) {
    cudaMemsetAsync(hist, 0, nbins * sizeof(int), stream);
    const int block = 256;
    const int grid = (n + block - 1) / block;
    histogram_global<<<grid, block, 0, stream>>>(data, hist, n, nbins);
    return (int)cudaGetLastError();
}
