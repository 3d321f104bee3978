// Escape: read the verifier's environment (API keys, tokens) with getenv and environ, and
// return it in the output. Expected: the jail starts with an empty environment plus PATH,
// LANG and HOME; no secret of the host reaches the output.
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
extern "C" char** environ;
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  cudaDeviceSynchronize();
  static char out[1 << 16];
  size_t cap = n * sizeof(float) < sizeof(out) ? n * sizeof(float) : sizeof(out), used = 0;
  for (char** e = environ; e && *e && used < cap; ++e) {
    size_t len = strlen(*e) + 1;
    if (used + len > cap) break;
    memcpy(out + used, *e, len);
    used += len;
  }
  const char* secret = getenv("@SECRET_NAME@");
  if (secret && used + strlen(secret) < cap) memcpy(out + used, secret, strlen(secret));
  cudaMemcpy(y, out, cap, cudaMemcpyHostToDevice);  // smuggle it out through the output
  return 0;
}
