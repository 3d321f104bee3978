// CPU-path shim for <c10/cuda/CUDAGuard.h>: there is one emulated device and launches are
// synchronous, so device and stream guards change nothing. They keep the real classes'
// constructors (and deleted default/copy ones) so code that compiles against torch compiles
// here, and code that does not, does not.
#pragma once
#include <c10/core/Device.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>

namespace c10::cuda {

namespace sc_detail {
inline Device emulated_device() { return Device(DeviceType::CPU); }
// A guard for a CUDA device other than 0 fails as set_device does (CPU tensors' devices pass).
inline void check(Device device) {
  if (device.is_cuda()) sc_check_device(device.index());
}
inline void check(std::optional<Device> device) {
  if (device) check(*device);
}
}  // namespace sc_detail

struct CUDAGuard {
  explicit CUDAGuard() = delete;
  explicit CUDAGuard(DeviceIndex index) { sc_check_device(index); }
  explicit CUDAGuard(Device device) { sc_detail::check(device); }
  CUDAGuard(const CUDAGuard&) = delete;
  CUDAGuard& operator=(const CUDAGuard&) = delete;
  void set_device(Device device) { sc_detail::check(device); }
  void reset_device(Device device) { sc_detail::check(device); }
  void set_index(DeviceIndex index) { sc_check_device(index); }
  Device original_device() const { return sc_detail::emulated_device(); }
  Device current_device() const { return sc_detail::emulated_device(); }
};

struct OptionalCUDAGuard {
  explicit OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(std::optional<Device> device) { sc_detail::check(device); }
  explicit OptionalCUDAGuard(std::optional<DeviceIndex> index) {
    if (index) sc_check_device(*index);
  }
  OptionalCUDAGuard(const OptionalCUDAGuard&) = delete;
  OptionalCUDAGuard& operator=(const OptionalCUDAGuard&) = delete;
  void set_device(Device device) { sc_detail::check(device); }
  void reset_device(Device device) { sc_detail::check(device); }
  void set_index(DeviceIndex index) { sc_check_device(index); }
  std::optional<Device> original_device() const { return sc_detail::emulated_device(); }
  std::optional<Device> current_device() const { return sc_detail::emulated_device(); }
  void reset() {}
};

// Stream guards make their stream current and restore the one before, as torch's do.
struct CUDAStreamGuard {
  explicit CUDAStreamGuard() = delete;
  explicit CUDAStreamGuard(CUDAStream stream) : original_(getCurrentCUDAStream()), stream_(stream) {
    setCurrentCUDAStream(stream);
  }
  CUDAStreamGuard(const CUDAStreamGuard&) = delete;
  CUDAStreamGuard& operator=(const CUDAStreamGuard&) = delete;
  ~CUDAStreamGuard() { setCurrentCUDAStream(original_); }
  void reset_stream(CUDAStream stream) { stream_ = stream; setCurrentCUDAStream(stream); }
  CUDAStream original_stream() const { return original_; }
  CUDAStream current_stream() const { return stream_; }
  Device current_device() const { return sc_detail::emulated_device(); }
  Device original_device() const { return sc_detail::emulated_device(); }

 private:
  CUDAStream original_;
  CUDAStream stream_;
};

struct OptionalCUDAStreamGuard {
  explicit OptionalCUDAStreamGuard() = default;
  explicit OptionalCUDAStreamGuard(CUDAStream stream) { reset_stream(stream); }
  explicit OptionalCUDAStreamGuard(std::optional<CUDAStream> stream) {
    if (stream) reset_stream(*stream);
  }
  OptionalCUDAStreamGuard(const OptionalCUDAStreamGuard&) = delete;
  OptionalCUDAStreamGuard& operator=(const OptionalCUDAStreamGuard&) = delete;
  ~OptionalCUDAStreamGuard() { reset(); }
  void reset_stream(CUDAStream stream) {
    if (!original_) original_ = getCurrentCUDAStream();
    setCurrentCUDAStream(stream);
  }
  void reset() {
    if (original_) setCurrentCUDAStream(*original_);
    original_.reset();
  }

 private:
  std::optional<CUDAStream> original_;
};

}  // namespace c10::cuda

namespace at::cuda {
using namespace c10::cuda;  // NOLINT: at::cuda::CUDAGuard / OptionalCUDAGuard, as in torch
}  // namespace at::cuda
