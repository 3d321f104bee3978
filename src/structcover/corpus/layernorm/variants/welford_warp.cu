// variant: warp per row with Welford running mean/M2 per lane, merged pairwise across lanes via __shfl_down_sync.
#include <cuda_runtime.h>
#include <math.h>

#define WARPS_PER_BLOCK 8

__global__ void layernorm_welford(const float* __restrict__ x, const float* __restrict__ gamma,
                                  const float* __restrict__ beta, float* __restrict__ y,
                                  int rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;
    const float* xr = x + (size_t)r * cols;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float v = __ldg(xr + c);
        n += 1.0f;
        const float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    // Chan's parallel merge of (n, mean, m2) partial states.
    for (int o = 16; o > 0; o >>= 1) {
        const float n_b = __shfl_down_sync(0xffffffffu, n, o);
        const float mean_b = __shfl_down_sync(0xffffffffu, mean, o);
        const float m2_b = __shfl_down_sync(0xffffffffu, m2, o);
        const float n_ab = n + n_b;
        if (n_b > 0.0f) {
            const float d = mean_b - mean;
            mean += d * (n_b / n_ab);
            m2 += m2_b + d * d * (n * n_b / n_ab);
            n = n_ab;
        }
    }
    mean = __shfl_sync(0xffffffffu, mean, 0);
    m2 = __shfl_sync(0xffffffffu, m2, 0);
    const float inv_std = rsqrtf(m2 / cols + eps);
    for (int c = lane; c < cols; c += 32)
        y[(size_t)r * cols + c] = (__ldg(xr + c) - mean) * inv_std * __ldg(gamma + c) + __ldg(beta + c);
}

extern "C" int launch(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols, float eps, cudaStream_t stream) {
    const int grid = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    layernorm_welford<<<grid, WARPS_PER_BLOCK * 32, 0, stream>>>(x, gamma, beta, y, rows, cols, eps);
    return (int)cudaGetLastError();
}
