// Reduction ladder, step 07: shuffle-only block reduction. Every warp reduces its values with
// shuffles and writes one partial to a 32-entry shared array; the first warp reduces those.
// Shared memory holds 8 values instead of 256, with one barrier.
// moves: smem.static_bytes down
// moves: sync.block_barriers down
#define BLOCK 256

__device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

__global__ void reduce_warps(const float* __restrict__ in, float* out, int n) {
    __shared__ float partial[BLOCK / 32];
    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    float v = 0.0f;
    for (int i = blockIdx.x * BLOCK + tid; i < n / 4; i += BLOCK * gridDim.x) {
        const float4 q = in4[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? partial[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(out, v);
    }
}

void launch(const float* in, float* out, int n) {
    reduce_warps<<<264, BLOCK>>>(in, out, n);
}
