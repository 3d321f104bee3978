// variant: every thread does one global atomicAdd of its element into out (fully serialized, slow).
#include <cuda_runtime.h>

__global__ void reduce_global_atomic(const float* x, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    const int block = 256;
    const int grid = (n + block - 1) / block;
    reduce_global_atomic<<<grid, block, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
