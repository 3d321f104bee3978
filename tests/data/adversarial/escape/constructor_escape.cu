// Escape: act before any launcher runs, from a static constructor that runs when the library
// loads (open a socket, write a file outside). Expected: the runner installs its seccomp
// filter before loading the library, so the constructor is already confined: the marker
// never appears.
#include <cuda_runtime.h>
extern "C" int open(const char*, int, ...);
__attribute__((constructor)) static void early(void) {
  open("@MARKER@", 0101, 0644);
}
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
