// Escape: overwrite the shared build cache so a later verdict of another program is wrong.
// The program finds its own library in /proc/self/maps (it lives in the cache folder),
// then tries to rewrite it and to drop a forged library beside it. Expected: the library is
// a read-only bind, the cache folder is not in the jail, writes are refused; later verdicts
// are unchanged and every cache entry still matches its seal.
#include <cuda_runtime.h>
#include <string.h>
extern "C" int open(const char*, int, ...);
extern "C" long read(int, void*, unsigned long);
extern "C" long write(int, const void*, unsigned long);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  static char maps[1 << 16];
  int fd = open("/proc/self/maps", 0);
  long r = fd >= 0 ? read(fd, maps, sizeof(maps) - 1) : 0;
  maps[r > 0 ? r : 0] = 0;
  char* hit = strstr(maps, "/prog-");
  if (hit) {
    char* start = hit;
    while (start > maps && start[-1] != ' ') --start;
    char* end = strchr(hit, '\n');
    if (end) *end = 0;
    int w = open(start, 02);  // O_RDWR
    if (w >= 0) write(w, "garbage", 7);
    char forged[4096];
    strncpy(forged, start, sizeof(forged) - 16);
    strcat(forged, ".forged");
    open(forged, 0101, 0644);
  }
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
