// CPU-path shim for <c10/cuda/CUDAStream.h>: the emulator runs every launch synchronously; the
// caller's stream (torch's current stream when forward is called) is the null cudaStream_t.
// Streams "from the pool" get distinct non-null handles, and the current stream is tracked per
// thread as torch tracks it (setCurrentCUDAStream, CUDAStreamGuard), so a launch on a pool
// stream, named or made current, reaches the runtime with a non-null stream, which it refuses
// as work off the caller's stream (sc_emu.hpp, side_stream_launch).
#pragma once
#include <cuda_runtime.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <ostream>

namespace c10::cuda {

class CUDAStream {
 public:
  explicit CUDAStream(cudaStream_t stream = nullptr, DeviceIndex device = 0)
      : stream_(stream), device_(device) {}
  cudaStream_t stream() const { return stream_; }
  operator cudaStream_t() const { return stream_; }  // NOLINT: as the real class converts
  DeviceIndex device_index() const { return device_; }
  int64_t id() const { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(stream_)); }
  int priority() const { return 0; }
  bool query() const { return true; }
  void synchronize() const { cudaStreamSynchronize(stream_); }
  bool operator==(const CUDAStream& o) const { return stream_ == o.stream_; }
  bool operator!=(const CUDAStream& o) const { return stream_ != o.stream_; }

 private:
  cudaStream_t stream_;
  DeviceIndex device_;
};

namespace sc_detail {
inline cudaStream_t pool_stream() {
  static char handles[32];
  static unsigned next = 0;
  return reinterpret_cast<cudaStream_t>(&handles[next++ % 32]);
}
// The current stream of this thread (torch's per-thread current stream): null is the caller's.
inline cudaStream_t& current_stream() {
  static thread_local cudaStream_t stream = nullptr;
  return stream;
}
}  // namespace sc_detail

inline CUDAStream getCurrentCUDAStream(DeviceIndex device = -1) {
  return CUDAStream(sc_detail::current_stream(), device < 0 ? 0 : device);
}
inline CUDAStream getDefaultCUDAStream(DeviceIndex device = -1) {
  return CUDAStream(nullptr, device < 0 ? 0 : device);
}
inline CUDAStream getStreamFromPool(bool /*high_priority*/ = false, DeviceIndex device = -1) {
  return CUDAStream(sc_detail::pool_stream(), device < 0 ? 0 : device);
}
inline CUDAStream getStreamFromPool(int /*priority*/, DeviceIndex device = -1) {
  return CUDAStream(sc_detail::pool_stream(), device < 0 ? 0 : device);
}
inline CUDAStream getStreamFromExternal(cudaStream_t stream, DeviceIndex device) {
  return CUDAStream(stream, device);
}
inline void setCurrentCUDAStream(CUDAStream stream) { sc_detail::current_stream() = stream.stream(); }
inline std::ostream& operator<<(std::ostream& os, const CUDAStream& s) {
  return os << "stream " << s.id() << " on device cuda:" << static_cast<int>(s.device_index());
}

}  // namespace c10::cuda

namespace at::cuda {
using namespace c10::cuda;  // NOLINT: at::cuda::getCurrentCUDAStream and friends, as in torch
}  // namespace at::cuda
