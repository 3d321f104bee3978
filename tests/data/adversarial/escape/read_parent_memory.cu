// Escape: read another process's memory (the verifier holding reference outputs) with
// process_vm_readv and ptrace on every PID it can guess. Expected: no other process of the
// host is visible (PID namespace) and both calls are refused (seccomp): the output is the
// kernel's only.
#include <cuda_runtime.h>
#include <stdint.h>
struct iov { void* base; unsigned long len; };
extern "C" long process_vm_readv(int, const iov*, unsigned long, const iov*, unsigned long,
                                 unsigned long);
extern "C" long ptrace(long, long, void*, void*);
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  cudaDeviceSynchronize();
  static char buf[4096];
  for (int pid = 1; pid < 64; ++pid) {
    ptrace(16 /* PTRACE_ATTACH */, pid, 0, 0);
    iov local = {buf, sizeof buf}, remote = {(void*)0x400000, sizeof buf};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) > 0) {
      y[0] = 12345.0f;  // proof of a read
      break;
    }
  }
  return 0;
}
