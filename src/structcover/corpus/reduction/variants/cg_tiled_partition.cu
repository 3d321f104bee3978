// variant: cooperative_groups thread_block + tiled_partition<32> shuffle reduction, 2 elements per thread.
#include <cuda_runtime.h>
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define BLOCK 256

__global__ void reduce_cg(const float* x, float* out, int n) {
    __shared__ float tile_sums[BLOCK / 32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    const int i = blockIdx.x * (2 * BLOCK) + threadIdx.x;
    float v = (i < n) ? x[i] : 0.0f;
    if (i + BLOCK < n) v += x[i + BLOCK];
    for (int offset = tile.size() / 2; offset > 0; offset /= 2) v += tile.shfl_down(v, offset);
    if (tile.thread_rank() == 0) tile_sums[threadIdx.x / 32] = v;
    block.sync();
    if (threadIdx.x < 32) {
        v = (threadIdx.x < BLOCK / 32) ? tile_sums[threadIdx.x] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) v += tile.shfl_down(v, offset);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    cudaMemsetAsync(out, 0, sizeof(float), stream);
    const int grid = (n + 2 * BLOCK - 1) / (2 * BLOCK);
    reduce_cg<<<grid, BLOCK, 0, stream>>>(x, out, n);
    return (int)cudaGetLastError();
}
