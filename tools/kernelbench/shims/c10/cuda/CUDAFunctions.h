// CPU-path shim for <c10/cuda/CUDAFunctions.h>: one emulated device, index 0.
#pragma once
#include <c10/core/Device.h>
#include <cuda_runtime.h>

namespace c10::cuda {
inline DeviceIndex device_count() noexcept { return 1; }
inline DeviceIndex current_device() { return 0; }
// One device, as the GPU child sees one (its CUDA_VISIBLE_DEVICES): another index fails there,
// so it fails here, in torch's words.
inline void sc_check_device(DeviceIndex device) {
  TORCH_CHECK(device < 1, "CUDA error: invalid device ordinal (device ", static_cast<int>(device),
              " of 1 visible)");
}
inline void set_device(DeviceIndex device, bool /*force*/ = false) { sc_check_device(device); }
inline void device_synchronize() { cudaDeviceSynchronize(); }
}  // namespace c10::cuda

namespace at::cuda {
using namespace c10::cuda;  // NOLINT
}  // namespace at::cuda
