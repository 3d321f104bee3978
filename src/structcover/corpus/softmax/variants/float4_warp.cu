// variant: warp per row with float4 vectorized loads/stores when cols % 4 == 0 (scalar warp kernel otherwise).
#include <cuda_runtime.h>
#include <math.h>

#define WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void softmax_vec4(const float* x, float* y, int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;
    const int c4 = cols / 4;
    const float4* xr = reinterpret_cast<const float4*>(x + (size_t)r * cols);
    float4* yr = reinterpret_cast<float4*>(y + (size_t)r * cols);
    float m = -INFINITY;
    for (int c = lane; c < c4; c += 32) {
        const float4 v = xr[c];
        m = fmaxf(fmaxf(m, fmaxf(v.x, v.y)), fmaxf(v.z, v.w));
    }
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < c4; c += 32) {
        const float4 v = xr[c];
        s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
    }
    const float inv = 1.0f / warp_sum(s);
    for (int c = lane; c < c4; c += 32) {
        const float4 v = xr[c];
        yr[c] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv);
    }
}

__global__ void softmax_scalar(const float* x, float* y, int rows, int cols) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
    const float inv = 1.0f / warp_sum(s);
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = expf(xr[c] - m) * inv;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    const int grid = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    // Rows start on a 16-byte boundary only when cols is a multiple of 4.
    if (cols % 4 == 0) softmax_vec4<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(x, y, rows, cols);
    else softmax_scalar<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
