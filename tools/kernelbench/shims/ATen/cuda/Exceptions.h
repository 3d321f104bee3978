// CPU-path shim for <ATen/cuda/Exceptions.h>: AT_CUDA_CHECK over the emulator's runtime API.
#pragma once
#include <c10/cuda/CUDAException.h>

#define AT_CUDA_CHECK(EXPR) C10_CUDA_CHECK(EXPR)
