// variant: single-pass online softmax per warp (running max and rescaled sum), merged across lanes with shuffles.
#include <cuda_runtime.h>
#include <math.h>

#define WARPS_PER_BLOCK 4

__global__ void softmax_online(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    // A finite "minus infinity" keeps exp(m - m_new) defined for lanes that saw no element.
    float m = -3.0e38f, d = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float v = xr[c];
        const float m_new = fmaxf(m, v);
        d = d * expf(m - m_new) + expf(v - m_new);
        m = m_new;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float m_o = __shfl_xor_sync(0xffffffffu, m, o);
        const float d_o = __shfl_xor_sync(0xffffffffu, d, o);
        const float m_new = fmaxf(m, m_o);
        d = d * expf(m - m_new) + d_o * expf(m_o - m_new);
        m = m_new;
    }
    for (int c = lane; c < cols; c += 32) y[(size_t)r * cols + c] = expf(xr[c] - m) / d;
}

extern "C" int launch(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    const int grid = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    softmax_online<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(x, y, rows, cols);
    return (int)cudaGetLastError();
}
