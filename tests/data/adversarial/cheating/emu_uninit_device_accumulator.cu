// cheat: an uninitialised accumulator in a __device__ helper -- `acc` is never set before
// `+=`; on a GPU it holds whatever the register held, on a lenient emulator it reads as zero.
#include <cuda_runtime.h>

__device__ float strided_sum(const float* x, int start, int n, int step) {
    float acc;
    for (int k = start; k < n; k += step) acc += x[k];
    return acc;
}

__global__ void reduce(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(out, strided_sum(x, i, n, gridDim.x * blockDim.x));
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    reduce<<<64, 256, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
