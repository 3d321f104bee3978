// cheat: output aliasing input -- the result is written over input `a` and then copied out, so `a` is left changed.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void add_inplace(float* a_alias, const float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a_alias[i] += b[i];
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    float* out = reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(a));
    add_inplace<<<(n + 255) / 256, 256, 0, stream>>>(out, b, n);
    cudaMemcpyAsync(c, out, sizeof(float) * n, cudaMemcpyDeviceToDevice, stream);
    return (int)cudaGetLastError();
}
