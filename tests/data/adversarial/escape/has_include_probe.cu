// Escape: probe the host's file system at compile time with __has_include (no error, no
// text: one bit per probe, carried out in the output). Expected: the jailed compiler sees
// none of the probed host files, so every bit is 0.
#include <cuda_runtime.h>
#if __has_include("@SECRET_FILE@")
#define FOUND_SECRET 1.0f
#else
#define FOUND_SECRET 0.0f
#endif
#if __has_include("/etc/passwd")
#define FOUND_PASSWD 1.0f
#else
#define FOUND_PASSWD 0.0f
#endif
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) y[0] = FOUND_SECRET;
  else if (i == 1) y[1] = FOUND_PASSWD;
  else if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
