// CPU-path shim for <c10/cuda/CUDAGuard.h>: there is one emulated device and launches are
// synchronous, so device and stream guards change nothing. They keep the real classes'
// constructors (and deleted default/copy ones) so code that compiles against torch compiles
// here, and code that does not, does not.
#pragma once
#include <c10/core/Device.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>

namespace c10::cuda {

namespace sc_detail {
inline Device emulated_device() { return Device(DeviceType::CPU); }
}  // namespace sc_detail

struct CUDAGuard {
  explicit CUDAGuard() = delete;
  explicit CUDAGuard(DeviceIndex /*index*/) {}
  explicit CUDAGuard(Device /*device*/) {}
  CUDAGuard(const CUDAGuard&) = delete;
  CUDAGuard& operator=(const CUDAGuard&) = delete;
  void set_device(Device /*device*/) {}
  void reset_device(Device /*device*/) {}
  void set_index(DeviceIndex /*index*/) {}
  Device original_device() const { return sc_detail::emulated_device(); }
  Device current_device() const { return sc_detail::emulated_device(); }
};

struct OptionalCUDAGuard {
  explicit OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(std::optional<Device> /*device*/) {}
  explicit OptionalCUDAGuard(std::optional<DeviceIndex> /*index*/) {}
  OptionalCUDAGuard(const OptionalCUDAGuard&) = delete;
  OptionalCUDAGuard& operator=(const OptionalCUDAGuard&) = delete;
  void set_device(Device /*device*/) {}
  void reset_device(Device /*device*/) {}
  void set_index(DeviceIndex /*index*/) {}
  std::optional<Device> original_device() const { return sc_detail::emulated_device(); }
  std::optional<Device> current_device() const { return sc_detail::emulated_device(); }
  void reset() {}
};

struct CUDAStreamGuard {
  explicit CUDAStreamGuard() = delete;
  explicit CUDAStreamGuard(CUDAStream stream) : stream_(stream) {}
  CUDAStreamGuard(const CUDAStreamGuard&) = delete;
  CUDAStreamGuard& operator=(const CUDAStreamGuard&) = delete;
  void reset_stream(CUDAStream stream) { stream_ = stream; }
  CUDAStream original_stream() const { return getDefaultCUDAStream(); }
  CUDAStream current_stream() const { return stream_; }
  Device current_device() const { return sc_detail::emulated_device(); }
  Device original_device() const { return sc_detail::emulated_device(); }

 private:
  CUDAStream stream_;
};

struct OptionalCUDAStreamGuard {
  explicit OptionalCUDAStreamGuard() = default;
  explicit OptionalCUDAStreamGuard(CUDAStream /*stream*/) {}
  explicit OptionalCUDAStreamGuard(std::optional<CUDAStream> /*stream*/) {}
  OptionalCUDAStreamGuard(const OptionalCUDAStreamGuard&) = delete;
  OptionalCUDAStreamGuard& operator=(const OptionalCUDAStreamGuard&) = delete;
  void reset_stream(CUDAStream /*stream*/) {}
  void reset() {}
};

}  // namespace c10::cuda

namespace at::cuda {
using namespace c10::cuda;  // NOLINT: at::cuda::CUDAGuard / OptionalCUDAGuard, as in torch
}  // namespace at::cuda
