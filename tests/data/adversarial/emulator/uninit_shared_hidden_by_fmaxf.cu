// task: max
// expect: race, wrong
// A 256-slot shared max tree filled by only 192 threads: slots 192..255 are never written.
// fmaxf drops a NaN poison, so an emulator that poisons with NaN (or a small value) passes.
#include <cuda_runtime.h>
__global__ void maxk(const float* x, float* out, int n) {
    __shared__ float m[256];
    int tid = threadIdx.x;
    float v = -3.0e38f;
    for (int i = tid; i < n; i += blockDim.x) v = fmaxf(v, x[i]);
    m[tid] = v;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (tid < s && tid + s < 256) m[tid] = fmaxf(m[tid], m[tid + s]);
        __syncthreads();
    }
    if (tid == 0) out[0] = m[0];
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    maxk<<<1, 192, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}
