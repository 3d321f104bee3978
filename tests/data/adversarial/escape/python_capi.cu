// Escape: run Python through the C API of the process that loaded us (the old sandbox child
// was a Python interpreter). Weak references dodge the link check; names never appear as calls
// the host policy would see as calls. Expected: no Python here (the runner is C++); the marker file
// named in the code is never written.
#include <cuda_runtime.h>
extern "C" int Py_IsInitialized(void) __attribute__((weak));
extern "C" int PyRun_SimpleString(const char*) __attribute__((weak));
extern "C" int PyGILState_Ensure(void) __attribute__((weak));
extern "C" void PyGILState_Release(int) __attribute__((weak));
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
  if (&Py_IsInitialized && &PyRun_SimpleString && &PyGILState_Ensure && Py_IsInitialized()) {
    int gil = PyGILState_Ensure();
    PyRun_SimpleString("open('@MARKER@', 'w').write('escaped')");
    PyGILState_Release(gil);
  }
  k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
  return 0;
}
