// CPU-path shim for <cuda.h> (the driver API header; load_inline prepends it to every CUDA
// source). The emulator has no driver API: this gives the version macro and the few types
// programs name, and pulls in the emulator's runtime API (<cuda_runtime.h>).
#pragma once
#include <cuda_runtime.h>

#ifndef CUDA_VERSION
#define CUDA_VERSION 13000
#endif
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef cudaStream_t CUstream;
#define CUDA_SUCCESS 0
