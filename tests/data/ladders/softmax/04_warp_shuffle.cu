// Softmax ladder, step 04: warp-shuffle reductions. Each warp reduces with __shfl_xor_sync;
// shared memory only carries one partial per warp, and the barrier-per-step trees are gone.
// moves: warp.shuffles up
// moves: sync.block_barriers down
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void softmax_warp(const float* x, float* y, int cols) {
    __shared__ float part[2][WARPS];
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    float m = -INFINITY;
    for (int c = tid; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    m = warp_max(m);
    if (lane == 0) part[0][warp] = m;
    __syncthreads();
    m = warp_max(lane < WARPS ? part[0][lane] : -INFINITY);
    float sum = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) sum += expf(row[c] - m);
    sum = warp_sum(sum);
    if (lane == 0) part[1][warp] = sum;
    __syncthreads();
    sum = warp_sum(lane < WARPS ? part[1][lane] : 0.0f);
    for (int c = tid; c < cols; c += BLOCK) out[c] = expf(row[c] - m) / sum;
}

void launch(const float* x, float* y, int rows, int cols) {
    softmax_warp<<<rows, BLOCK>>>(x, y, cols);
}
