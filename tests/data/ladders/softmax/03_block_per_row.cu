// Softmax ladder, step 03: one block per row. The block's threads stride along the row
// (coalesced), and the max and the sum are combined with shared-memory tree reductions.
// moves: pattern.global_access = coalesced
// moves: reduce.shared_tree = true
#define BLOCK 256

__global__ void softmax_block(const float* x, float* y, int cols) {
    __shared__ float red[BLOCK];
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    const int tid = threadIdx.x;
    float m = -INFINITY;
    for (int c = tid; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = tid; c < cols; c += BLOCK) sum += expf(row[c] - m);
    red[tid] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    sum = red[0];
    for (int c = tid; c < cols; c += BLOCK) out[c] = expf(row[c] - m) / sum;
}

void launch(const float* x, float* y, int rows, int cols) {
    softmax_block<<<rows, BLOCK>>>(x, y, cols);
}
