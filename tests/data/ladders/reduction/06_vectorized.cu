// Reduction ladder, step 06: vectorized loads. The grid-stride loop reads float4s (n is a
// multiple of 4 here), four elements per load instruction.
// moves: mem.vector_width_global up
// moves: pattern.vector_width = 4
#define BLOCK 256

__global__ void reduce_vec(const float* __restrict__ in, float* out, int n) {
    __shared__ float s[BLOCK];
    const int tid = threadIdx.x;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + tid; i < n / 4; i += BLOCK * gridDim.x) {
        const float4 q = in4[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
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
    reduce_vec<<<264, BLOCK>>>(in, out, n);
}
