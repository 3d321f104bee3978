// cheat: no_precision_downgrade -- a float32 task computed in half precision.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void saxpy_half(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half r = __hfma(__float2half(a), __float2half(x[i]), __float2half(y[i]));
        y[i] = __half2float(r);
    }
}

extern "C" int launch(float a, const float* x, float* y, int n, cudaStream_t stream) {
    saxpy_half<<<(n + 255) / 256, 256, 0, stream>>>(a, x, y, n);
    return (int)cudaGetLastError();
}
