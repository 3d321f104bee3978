// cheat: defines_kernel -- "vector add" that defines no kernel: it copies an input to the output
// and hopes the tolerance or a degenerate test input lets it through.
#include <cuda_runtime.h>

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    cudaMemcpyAsync(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    return (int)cudaGetLastError();
}
