// Reduction ladder, step 05: thread coarsening with a grid-stride loop. A fixed grid sized to
// the GPU; each thread accumulates many elements in a register before the block reduction.
// moves: loop.grid_stride up
#define BLOCK 256

__global__ void reduce_gs(const float* in, float* out, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x) v += in[i];
    s[tid] = v;
    __syncthreads();
    if (tid < 128) s[tid] += s[tid + 128];
    __syncthreads();
    if (tid < 64) s[tid] += s[tid + 64];
    __syncthreads();
    if (tid < 32) {
        v = s[tid] + s[tid + 32];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) atomicAdd(out, v);
    }
}

void launch(const float* in, float* out, int n) {
    reduce_gs<<<264, BLOCK>>>(in, out, n);
}
