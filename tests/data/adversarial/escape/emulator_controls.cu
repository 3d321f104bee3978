// Escape: call the emulator runtime's exported controls to lift its watchdog (a huge
// deadline), then hang in host code. Expected: the outer wall-clock limit ends the run
// (timeout) and no process of it is left.
#include <cuda_runtime.h>
extern "C" void sc_configure(int, int, unsigned long long, double);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  sc_configure(1, 0, 1, 1e9);
  volatile unsigned long spin = 0;
  for (;;) ++spin;
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
