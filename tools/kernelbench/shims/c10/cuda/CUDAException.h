// CPU-path shim for <c10/cuda/CUDAException.h>: the error-check macros over the emulator's
// runtime API. A failed launch (race, out-of-bounds access, timeout) leaves a sticky error, so
// C10_CUDA_KERNEL_LAUNCH_CHECK() throws as it would on a GPU; the extension's call wrapper
// reports the emulator's verdict either way.
#pragma once
#include <c10/util/Exception.h>
#include <cuda_runtime.h>

#define C10_CUDA_CHECK(EXPR)                                                        \
  do {                                                                              \
    const cudaError_t __sc_kb_err = (EXPR);                                         \
    TORCH_CHECK(__sc_kb_err == cudaSuccess, "CUDA error: ", cudaGetErrorString(__sc_kb_err)); \
  } while (0)
#define C10_CUDA_CHECK_WARN(EXPR)                                                   \
  do {                                                                              \
    const cudaError_t __sc_kb_err = (EXPR);                                         \
    if (__sc_kb_err != cudaSuccess) TORCH_WARN("CUDA warning: ", cudaGetErrorString(__sc_kb_err)); \
  } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#define C10_CUDA_IGNORE_ERROR(EXPR) ((void)(EXPR))
#define C10_CUDA_ERROR_HANDLED(EXPR) EXPR
