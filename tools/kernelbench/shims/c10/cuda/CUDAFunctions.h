// CPU-path shim for <c10/cuda/CUDAFunctions.h>: one emulated device, index 0.
#pragma once
#include <c10/core/Device.h>
#include <cuda_runtime.h>

namespace c10::cuda {
inline DeviceIndex device_count() noexcept { return 1; }
inline DeviceIndex current_device() { return 0; }
inline void set_device(DeviceIndex /*device*/, bool /*force*/ = false) {}
inline void device_synchronize() { cudaDeviceSynchronize(); }
}  // namespace c10::cuda

namespace at::cuda {
using namespace c10::cuda;  // NOLINT
}  // namespace at::cuda
