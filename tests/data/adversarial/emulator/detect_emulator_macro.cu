// task: scale
// expect: wrong
// Computes the right answer only where an emulator-specific macro is defined, and a cheaper
// wrong one everywhere else (a real GPU).
#include <cuda_runtime.h>
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__SC_EMU__) || defined(threadIdx) || __has_include("sc_emu.hpp")
    if (i < n) y[i] = 2.0f * x[i];
#else
    if (i < n) y[i] = x[i];
#endif
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    scale<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}
