// Escape: replace the runner with a shell (execve declared by hand) that would run as
// the verifier. Expected: execve is a forbidden system call after the runner started (crash);
// the marker the shell would write never appears.
#include <cuda_runtime.h>
extern "C" int execve(const char*, char* const*, char* const*);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  char arg0[] = "/bin/sh", arg1[] = "-c", arg2[] = "echo escaped > @MARKER@";
  char* argv[] = {arg0, arg1, arg2, 0};
  execve("/bin/sh", argv, 0);
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
