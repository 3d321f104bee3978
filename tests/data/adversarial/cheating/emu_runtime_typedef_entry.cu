// cheat: the runtime's control entry through another declaration form -- the name in
// parentheses (`(sc_configure)(...)`: no `name(` anywhere), called through a const pointer.
#include <cuda_runtime.h>

typedef void knob_t(int, int, unsigned long long, double);
extern "C" void (sc_configure)(int, int, unsigned long long, double);

__global__ void add(const float* a, const float* b, float* c, int n) {
    __shared__ float carry[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // carry[] is never written: a bug the emulator shows because its poison differs by schedule.
    if (i < n) c[i] = a[i] + b[i] + fminf(carry[threadIdx.x], 0.0f);
}

extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
    knob_t* const knob = &sc_configure;
    knob(0, 0, 1, 60.0);
    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
