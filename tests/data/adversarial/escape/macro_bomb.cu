// Escape (denial of service): a macro bomb that expands to about 16^8 tokens, taking the
// host's memory at compile time. Expected: the jailed compiler hits its memory or time limit
// and the verdict is a compile error, with the machine's memory untouched.
#include <cuda_runtime.h>
#define A0 x = x * 1.0001f + 1.0f;
#define A1 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0 A0
#define A2 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1
#define A3 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2 A2
#define A4 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3 A3
#define A5 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4 A4
#define A6 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5 A5
#define A7 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6 A6
#define A8 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7 A7
__global__ void k(const float* xs, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = 0.0f;
  A8
  if (i < n) y[i] = 2.0f * xs[i] + 0.0f * x;
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
