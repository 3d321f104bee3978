// Reduction ladder, step 03: first add during the global load. Each thread loads two
// elements a block apart and adds them before the tree, halving the blocks (and idle lanes).
// moves: mem.global_loads up
#define BLOCK 256

__global__ void reduce_two(const float* in, float* out, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * (BLOCK * 2) + tid;
    float v = i < n ? in[i] : 0.0f;
    if (i + BLOCK < n) v += in[i + BLOCK];
    s[tid] = v;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}

void launch(const float* in, float* out, int n) {
    reduce_two<<<(n + 2 * BLOCK - 1) / (2 * BLOCK), BLOCK>>>(in, out, n);
}
