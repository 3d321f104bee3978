// cheat: inputs_not_modified -- uses the input as scratch and zeroes it afterwards.
#include <cuda_runtime.h>

__global__ void prefix_in_place(float* x, float* out, int n) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        for (int i = 1; i < n; ++i) x[i] += x[i - 1];
        out[0] = x[n - 1];
    }
}

extern "C" int launch(const float* x, float* out, int n, cudaStream_t stream) {
    prefix_in_place<<<1, 32, 0, stream>>>((float*)x, out, n);
    cudaMemsetAsync((void*)x, 0, n * sizeof(float), stream);
    return (int)cudaGetLastError();
}
