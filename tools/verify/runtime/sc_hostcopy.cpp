// Host computation through cudaMemcpy: a launcher that copies its inputs to host memory,
// computes there and copies the result into a launcher buffer leaves every other check
// satisfied (the copies are the legal way to reach device memory, and the outputs are right).
// What it cannot hide is the traffic: it reads most of its inputs back to the host, and bytes it
// wrote from the host are still the launcher buffer's final bytes when the launcher returns.
//
// Rule (docs/SANDBOX.md, "Host computation through cudaMemcpy"): at the end of a run, if the
// run copied at least max(64 bytes, 1/8 of all launcher buffers' bytes) from device buffers to
// the host, and bytes that a host-to-device copy wrote are a launcher buffer's final bytes --
// still in place (no kernel or later copy rewrote them), or, for an upload of 16 bytes or more,
// equal to the start of a launcher buffer (an upload into a scratch buffer moved there by a
// device-to-device copy or a copy kernel) -- the host computed the output: a crash, named.
// "Equal" is bytewise, or 90 % of the float32 words within 2^-12: a kernel that nudges the
// uploaded values by a rounding's worth on their way does not launder them. An
// honest program that finishes a reduction on the host reads back one partial per block (a few
// per cent of its inputs at most); one that uploads a host-made initial value or table sees a
// kernel overwrite it, or reads nothing back.
#include "sc_internal.hpp"

#include <math.h>
#include <string.h>

#include <string>
#include <vector>

namespace sc {

namespace {

constexpr size_t kMaxWrites = 256;  // a run that writes more from the host keeps the first ones
constexpr size_t kMaxKept = 64u << 20;  // bytes of uploads kept for the end-of-run comparison

// Whether `now` holds the uploaded bytes: equal, or -- read as float32 words -- at least 90 %
// of the words within 2^-12 of what was uploaded (a kernel that nudges every uploaded value by
// a rounding's worth launders nothing).
bool still_there(const unsigned char* now, const std::vector<unsigned char>& up) {
  size_t n = up.size();
  if (memcmp(now, up.data(), n) == 0) return true;
  if (n % 4 != 0 || n < 16) return false;
  size_t words = n / 4, close = 0;
  for (size_t i = 0; i < words; ++i) {
    float a, b;
    memcpy(&a, up.data() + 4 * i, 4);
    memcpy(&b, now + 4 * i, 4);
    float scale = fabsf(a) > 1e-30f ? fabsf(a) : 1e-30f;
    if (a == b || fabsf(a - b) <= scale * (1.0f / 4096.0f)) ++close;
  }
  return close * 10 >= words * 9;
}

bool on_device(const Alloc* a) { return a && a->kind == kDeviceMem; }

}  // namespace

// Called with device memory open, right after a cudaMemcpy* moved the bytes.
void note_host_copy(const void* d, const void* s, size_t n) {
  if (!n) return;
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  const Alloc* dst = dev_find_unlocked(reinterpret_cast<uintptr_t>(d));
  const Alloc* src = dev_find_unlocked(reinterpret_cast<uintptr_t>(s));
  if (on_device(src) && !on_device(dst)) g.host_read += n;
  size_t kept = 0;
  for (const HostWrite& w : g.host_writes) kept += w.bytes.size();
  if (on_device(dst) && !on_device(src) && g.host_writes.size() < kMaxWrites &&
      kept + n <= kMaxKept) {
    const unsigned char* c = static_cast<const unsigned char*>(d);
    g.host_writes.push_back({reinterpret_cast<uintptr_t>(d), std::vector<unsigned char>(c, c + n)});
  }
}

void host_roundtrip_check() {
  Global& g = G();
  if (g.status != kOk || g.host_writes.empty()) return;
  std::vector<const Alloc*> callers;
  size_t caller_bytes = 0, intact = 0;
  long which = -1;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (auto& kv : g.allocs)
      if (kv.second.caller) {
        callers.push_back(&kv.second);
        caller_bytes += kv.second.n;
      }
  }
  size_t floor = caller_bytes / 8 > 64 ? caller_bytes / 8 : 64;
  if (g.host_read < floor || callers.empty()) return;
  bool was = g.device_open;
  dev_set_open(true);
  for (const HostWrite& w : g.host_writes) {
    const Alloc* a;
    {
      std::lock_guard<std::mutex> lock(g.mu);
      a = dev_find_unlocked(w.addr);
    }
    const size_t n = w.bytes.size();
    const Alloc* hit = nullptr;
    if (a && a->caller && still_there(reinterpret_cast<const unsigned char*>(w.addr), w.bytes))
      hit = a;
    for (size_t k = 0; !hit && n >= 16 && k < callers.size(); ++k)
      if (callers[k]->n >= n &&
          still_there(reinterpret_cast<const unsigned char*>(callers[k]->user), w.bytes))
        hit = callers[k];
    if (hit) {
      intact += n;
      if (which < 0) which = hit->index;
    }
  }
  dev_set_open(was);
  if (!intact) return;
  record(kCrash, "host code computed the output: the launcher copied " +
                     std::to_string(g.host_read) + " bytes of device data to the host, and " +
                     std::to_string(intact) + " bytes it copied up from the host are the final "
                     "bytes of launcher buffer #" + std::to_string(which) +
                     " (no kernel computed them; on a GPU that work is the host's)");
}

void host_copies_reset() {
  Global& g = G();
  g.host_read = 0;
  g.host_writes.clear();
}

}  // namespace sc
