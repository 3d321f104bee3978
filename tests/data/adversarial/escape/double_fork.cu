// Escape: leave the run's process group (fork, setsid, fork again) so a daemon outlives the
// verdict and writes later. Expected: fork is a forbidden system call in the runner (crash),
// and the PID namespace would end any process of the run with it; the marker never appears.
#include <cuda_runtime.h>
extern "C" int fork(void);
extern "C" int setsid(void);
extern "C" unsigned sleep(unsigned);
extern "C" int open(const char*, int, ...);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  if (fork() == 0) {
    setsid();
    if (fork() == 0) {
      sleep(3);
      open("@MARKER@", 0101, 0644);  // O_WRONLY | O_CREAT
      for (;;) sleep(1);
    }
    return 0;
  }
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
