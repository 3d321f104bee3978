// variant: warp per row with float4 loads of A and x when K % 4 == 0 (scalar warp kernel otherwise), xor-shuffle reduce.
#include <cuda_runtime.h>

#define WARPS_PER_BLOCK 4

__global__ void gemv_warp_vec4(const float* A, const float* x, float* y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= M) return;
    const float4* row4 = reinterpret_cast<const float4*>(A + (size_t)r * K);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float acc = 0.0f;
    for (int k = lane; k < K / 4; k += 32) {
        const float4 a = row4[k];
        const float4 b = x4[k];
        acc += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[r] = acc;
}

__global__ void gemv_warp_scalar(const float* A, const float* x, float* y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= M) return;
    float acc = 0.0f;
    for (int k = lane; k < K; k += 32) acc += A[(size_t)r * K + k] * x[k];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[r] = acc;
}

extern "C" int launch(const float* A, const float* x, float* y, int M, int K, cudaStream_t stream) {
    const int grid = (M + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    // Every row starts 16-byte aligned only when K is a multiple of 4.
    if (K % 4 == 0) gemv_warp_vec4<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(A, x, y, M, K);
    else gemv_warp_scalar<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(A, x, y, M, K);
    return (int)cudaGetLastError();
}
