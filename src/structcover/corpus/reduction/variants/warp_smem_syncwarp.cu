// variant: grid-stride partial sums; each warp reduces its 32 partials in smem with __syncwarp steps, thread 0 adds the warp totals and one atomic per block.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void reduce_warp_smem(const float* x, float* out, int n) {
    __shared__ float buf[BLOCK];
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x) v += x[i];
    buf[tid] = v;
    __syncwarp();
    for (int s = 16; s > 0; s >>= 1) {
        if (lane < s) buf[tid] += buf[tid + s];
        __syncwarp();
    }
    __syncthreads();
    if (tid == 0) {
        float total = 0.0f;
        for (int w = 0; w < BLOCK / 32; ++w) total += buf[w * 32];
        atomicAdd(out, total);
    }
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    int grid = (n + BLOCK - 1) / BLOCK;
    if (grid > 128) grid = 128;
    if (grid < 1) grid = 1;
    reduce_warp_smem<<<grid, BLOCK, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
