// cheat: writes the runtime's internal state -- declares the runtime's C++ accessor of its
// global state and overwrites the poison word (word 84) with one large positive value, so the
// never-written shared memory the kernel reads is hidden by fminf under every schedule.
#include <cuda_runtime.h>

namespace sc { struct Global; Global& G(); }

__global__ void add(const float* a, const float* b, float* c, int n) {
    __shared__ float carry[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // carry[] is never written: a bug the emulator shows because its poison differs by schedule.
    if (i < n) c[i] = a[i] + b[i] + fminf(carry[threadIdx.x], 0.0f);
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    reinterpret_cast<unsigned*>(&sc::G())[84] = 0x7E800001u;
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
