// Escape: read host files at compile time and get them back in the compiler's messages:
// #include inside an initializer, of /etc/passwd and of the verifier's /proc/self/environ.
// Expected: compile error; neither file is visible to the jailed compiler and the message
// carries no text of either.
#include <cuda_runtime.h>
static const char passwd[] = {
#include "/etc/passwd"
};
static const char env[] = {
#include "/proc/self/environ"
};
static const char secret[] = {
#include "@SECRET_FILE@"
};
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + passwd[0] + env[0] + secret[0];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
