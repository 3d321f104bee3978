// Escape (denial of service): a fork bomb in host code, through vfork/clone names the host
// policy does not know (declared by hand). Expected: the first fork is a forbidden
// system call (crash); the host's process count does not grow.
#include <cuda_runtime.h>
extern "C" int fork(void);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  for (int i = 0; i < 100000; ++i) fork();
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
