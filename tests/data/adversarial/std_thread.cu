// cheat: no_threads -- returns at once; a detached host thread launches the work later.
#include <cuda_runtime.h>
#include <thread>

__global__ void negate(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = -x[i];
}

extern "C" int launch(const float* x, float* y, int n, cudaStream_t stream) {
    std::thread worker([=] {
        negate<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
    });
    worker.detach();
    return 0;
}
