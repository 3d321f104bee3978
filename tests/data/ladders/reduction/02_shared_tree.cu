// Reduction ladder, step 02: block-level tree in shared memory with sequential addressing
// (the active threads stay contiguous); one atomic per block instead of one per element.
// moves: reduce.shared_tree = true
// moves: sync.block_barriers up
#define BLOCK 256

__global__ void reduce_tree(const float* in, float* out, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * BLOCK + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}

void launch(const float* in, float* out, int n) {
    reduce_tree<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n);
}
