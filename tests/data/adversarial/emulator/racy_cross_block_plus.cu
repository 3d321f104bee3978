// task: sum
// expect: race
// A correct block reduction, then thread 0 of every block adds the block's sum into out[0]
// with a plain `+=`: blocks run concurrently on a GPU and lose each other's updates.
#include <cuda_runtime.h>
__global__ void sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x, i = blockIdx.x * 256 + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) *out += s[0];
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    cudaMemsetAsync(out, 0, sizeof(float), s);
    sum<<<(n + 255) / 256, 256, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}
