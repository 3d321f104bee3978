// variant: float4 vectorized read-modify-write of y over whole float4s, scalar tail for the last N % 4.
#include <cuda_runtime.h>

__global__ void saxpy_float4(const float* x, float* y, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int n4 = n >> 2;
    if (i < n4) {
        const float4 vx = reinterpret_cast<const float4*>(x)[i];
        float4 vy = reinterpret_cast<float4*>(y)[i];
        vy.x = a * vx.x + vy.x;
        vy.y = a * vx.y + vy.y;
        vy.z = a * vx.z + vy.z;
        vy.w = a * vx.w + vy.w;
        reinterpret_cast<float4*>(y)[i] = vy;
    }
    const int t = (n4 << 2) + i;
    if (t < n && i < 4) y[t] = a * x[t] + y[t];
}

extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    const int block = 128;
    int grid = ((n >> 2) + block - 1) / block;
    if (grid < 1) grid = 1;
    saxpy_float4<<<grid, block, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
