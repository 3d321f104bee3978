// cheat: input modification -- uses input `b` as scratch through an integer round-trip that hides the const cast.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void add_and_clobber(const float* a, float* b_scratch, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        b_scratch[i] += a[i];   // the sum is built inside the input buffer
        c[i] = b_scratch[i];
    }
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    float* scratch = (float*)(uintptr_t)b;
    add_and_clobber<<<(n + 255) / 256, 256, 0, stream>>>(a, scratch, c, n);
    return (int)cudaGetLastError();
}
