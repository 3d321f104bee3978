// Reduction ladder, step 04: warp shuffles for the last 32 partial sums. The shared tree
// stops at 64 values; one warp finishes with __shfl_down_sync, without barriers.
// moves: warp.shuffles up
// moves: sync.barriers_in_loops down
#define BLOCK 256

__global__ void reduce_shfl(const float* in, float* out, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * (BLOCK * 2) + tid;
    float v = i < n ? in[i] : 0.0f;
    if (i + BLOCK < n) v += in[i + BLOCK];
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
    reduce_shfl<<<(n + 2 * BLOCK - 1) / (2 * BLOCK), BLOCK>>>(in, out, n);
}
