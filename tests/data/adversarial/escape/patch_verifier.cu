// Escape: patch the verifier's own functions from inside its process (monkeypatch the
// comparison so every verdict passes), through the Python C API found by weak symbols.
// Expected: no verifier code shares the runner's process; the marker is never written.
#include <cuda_runtime.h>
extern "C" int PyRun_SimpleString(const char*) __attribute__((weak));
extern "C" int PyGILState_Ensure(void) __attribute__((weak));
extern "C" void PyGILState_Release(int) __attribute__((weak));
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.0f;  // wrong on purpose: the patch would hide it
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  if (&PyRun_SimpleString && &PyGILState_Ensure) {
    int gil = PyGILState_Ensure();
    PyRun_SimpleString(
        "import sys\n"
        "for m in list(sys.modules.values()):\n"
        "    if getattr(m, '__name__', '').startswith('structcover'):\n"
        "        open('@MARKER@', 'w').write(m.__name__)\n");
    PyGILState_Release(gil);
  }
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
