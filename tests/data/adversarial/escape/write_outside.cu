// Escape: write files outside the program's own folder (plant a file in a host folder, append
// to one that exists). Expected: the host folder is not in the jail and opens for writing
// are refused; the planted file never appears and the existing one is unchanged.
#include <cuda_runtime.h>
extern "C" int open(const char*, int, ...);
extern "C" long write(int, const void*, unsigned long);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  int fd = open("@OUTSIDE_DIR@/planted.txt", 0101, 0644);  // O_WRONLY | O_CREAT
  if (fd >= 0) write(fd, "planted", 7);
  fd = open("@OUTSIDE_DIR@/existing.txt", 02001);  // O_WRONLY | O_APPEND
  if (fd >= 0) write(fd, "appended", 8);
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
