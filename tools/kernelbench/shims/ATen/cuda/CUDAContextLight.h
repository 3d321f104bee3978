// CPU-path shim for <ATen/cuda/CUDAContextLight.h>: device properties of the emulated device
// (the emulator's cudaGetDeviceProperties, an H100), the stream look-ups of the CUDAStream
// shim. Library handles (cuBLAS, cuSPARSE, cuBLASLt) are not declared: sources that use them
// are refused before the build as unsupported constructs.
#pragma once
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace at::cuda {

inline cudaDeviceProp* getDeviceProperties(c10::DeviceIndex /*device*/) {
  static cudaDeviceProp prop = [] {
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    return p;
  }();
  return &prop;
}
inline cudaDeviceProp* getCurrentDeviceProperties() { return getDeviceProperties(0); }
inline int warp_size() { return 32; }
inline int64_t getNumGPUs() { return 1; }
inline bool is_available() { return true; }
inline bool canDeviceAccessPeer(c10::DeviceIndex /*device*/, c10::DeviceIndex /*peer*/) {
  return false;
}

}  // namespace at::cuda
