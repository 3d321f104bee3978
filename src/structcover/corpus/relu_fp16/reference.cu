// reference: one thread per __half element, comparison with __hgt, 256-thread blocks.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void relu_half(const __half* x, __half* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const __half zero = __float2half(0.0f);
        const __half v = x[i];
        y[i] = __hgt(v, zero) ? v : zero;
    }
}

extern "C" int launch(const __half* x, __half* y, int n, cudaStream_t stream) {
    const int block = 256;
    const int grid = (n + block - 1) / block;
    relu_half<<<grid, block, 0, stream>>>(x, y, n);
    return (int)cudaGetLastError();
}
