// Device memory of the CUDA emulator: every cudaMalloc (and every buffer the driver uploads
// through sc_device_alloc) is its own mapping with a kDevGuard PROT_NONE guard on each side.
// Where the buffer sits in its page-rounded body depends on the run's layout: it starts at the
// body's start (the lower guard is right before byte 0: any read or write before the start
// faults) or ends at the body's end (the upper guard follows byte n: any access past the end
// faults; a size that is not a multiple of 16 keeps 16-byte alignment through a trap page, see
// dev_arm_traps). Schedules use both layouts (sc_cudart.cpp), so an out-of-bounds access faults
// in one of them whatever the program does with the value. The rest of the body (the slack) is
// filled with 0xFF, a NaN in every floating type, and checked after every launch for writes.
// Device buffers are mapped PROT_NONE while host code runs and opened only during kernel
// launches and inside cudaMemcpy* / cudaMemset*: host code that reads or writes device memory
// directly faults, the fault is recorded as a crash and the page is opened so the run can
// finish and report. Fresh allocations hold a per-run poison pattern, never zeros.
//
// Everything here runs on the host thread, except dev_find_unlocked(), which the fault handler
// uses (the host thread is the only one that changes the allocation table, and never while a
// device buffer is being touched by host code).
#include "sc_internal.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace sc {

constexpr unsigned char kCanary = 0xFF;  // NaN as float, double, half or bfloat16
constexpr int kRW = PROT_READ | PROT_WRITE;

void fill_pattern(void* p, size_t n, uint32_t word) {
  unsigned char* c = static_cast<unsigned char*>(p);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) memcpy(c + i, &word, 4);
  for (; i < n; ++i) c[i] = reinterpret_cast<unsigned char*>(&word)[i % 4];
}

static void protect(Alloc& a, bool open) {
  if (a.kind != kDeviceMem || a.open == open) return;
  mprotect(a.map + kDevGuard, a.body, open ? kRW : PROT_NONE);
  a.open = open;
}

#if defined(__x86_64__)
constexpr bool kTrapPages = true;
#else
constexpr bool kTrapPages = false;  // no user-space single step: see dev_arm_traps
#endif

void* dev_alloc(size_t n, int kind) {
  Global& g = G();
  size_t n16 = ((n ? n : 1) + 15) & ~(size_t)15;
  // A size that is not a multiple of 16 under the end layout: the last 16-byte granule (the
  // last bytes and the < 16 past them) starts a page of its own, the trap page (dev_arm_traps).
  bool trap = kTrapPages && g.end_layout && kind == kDeviceMem && n % 16 != 0;
  size_t head = trap ? n16 - 16 : n16;  // bytes before the trap page (all of them without one)
  size_t head_pages = (head + kGuard - 1) & ~(kGuard - 1);
  size_t body = head_pages + (trap ? kGuard : 0);
  size_t len = body + 2 * kDevGuard;
  void* m = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Alloc a{};
  a.map = static_cast<char*>(m);
  a.len = len;
  a.body = body;
  a.n = n;
  char* b = a.map + kDevGuard;
  a.user = g.end_layout ? b + head_pages - head : b;
  a.cap = (size_t)(b + body - a.user);
  a.trappable = trap;
  a.kind = kind;
  if (mprotect(b, body, kRW) != 0) {
    munmap(m, len);
    return nullptr;
  }
  a.open = true;
  memset(b, kCanary, (size_t)(a.user - b));
  fill_pattern(a.user, n, g.pattern);
  memset(a.user + n, kCanary, a.cap - n);
  if (!g.device_open) protect(a, false);
  install_fault_handler();
  std::lock_guard<std::mutex> lock(g.mu);
  a.index = g.alloc_count++;
  g.allocs[reinterpret_cast<uintptr_t>(a.user)] = a;
  return a.user;
}

int dev_free(void* p) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  auto it = g.allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == g.allocs.end()) return cudaErrorInvalidValue;
  munmap(it->second.map, it->second.len);
  g.allocs.erase(it);
  return cudaSuccess;
}

void dev_free_all() {
  Global& g = G();
  for (auto& kv : g.allocs) munmap(kv.second.map, kv.second.len);
  g.allocs.clear();
  g.alloc_count = 0;
}

Alloc* dev_find_unlocked(uintptr_t addr) {
  auto& allocs = G().allocs;
  // Keys are buffer starts, less than a guard and a page above their map's start; maps never
  // overlap.
  auto it = allocs.upper_bound(addr + kDevGuard + kGuard);
  while (it != allocs.begin()) {
    --it;
    Alloc& a = it->second;
    uintptr_t m = reinterpret_cast<uintptr_t>(a.map);
    if (addr >= m && addr < m + a.len) return &a;
    if (m + a.len <= addr) break;  // every earlier map lies lower still
  }
  return nullptr;
}

void dev_set_open(bool open) {
  Global& g = G();
  for (auto& kv : g.allocs) protect(kv.second, open);
  g.device_open = open;
}

std::string dev_check_slack() {
  Global& g = G();
  for (auto& kv : g.allocs) {
    Alloc& a = kv.second;
    bool was = a.open;
    protect(a, true);
    const unsigned char* b = reinterpret_cast<unsigned char*>(a.map + kDevGuard);
    size_t front = (size_t)(a.user - a.map - kDevGuard);
    std::string what;
    for (size_t i = 0; i < front; ++i)
      if (b[i] != kCanary) {
        what = "out-of-bounds write " + std::to_string(front - i) + " bytes before the start of";
        break;
      }
    if (what.empty())
      for (size_t i = a.n; i < a.cap; ++i)
        if ((unsigned char)a.user[i] != kCanary) {
          what = "out-of-bounds write past the end (byte +" + std::to_string(i - a.n) + ") of";
          break;
        }
    protect(a, was);
    if (!what.empty())
      return what + " device allocation #" + std::to_string(a.index) + " (" + std::to_string(a.n) + " bytes)";
  }
  return "";
}

int dev_range(const void* p, size_t n) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(G().mu);
  Alloc* a = dev_find_unlocked(addr);
  if (!a) return 0;  // host memory
  uintptr_t u = reinterpret_cast<uintptr_t>(a->user);
  if (addr < u || addr + n > u + a->n) return -1;
  return 1;
}

// Trap pages (x86-64): under the end layout a buffer whose size is not a multiple of 16 cannot
// end at its guard (it must stay 16-aligned), so dev_alloc puts its last 16-byte granule alone
// at the start of one more page, the trap page, closed during launches: an access there faults,
// and the handler lets one that lies inside the buffer run as a single step (dev_trap_access,
// then the trap flag brings the handler back to close the page again); one past the end is
// reported like any other out-of-bounds access. Cost: two signals per access to the buffer's
// last n % 16 bytes, in the schedules with the end layout only.
void dev_arm_traps(bool on) {
#if defined(__x86_64__)
  Global& g = G();
  for (Worker* w : g.workers) w->step_page[0] = w->step_page[1] = nullptr;
  for (auto& kv : g.allocs) {
    Alloc& a = kv.second;
    if (on && a.trappable && a.open) {
      a.trap = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(a.user + a.n - 1) & ~(kGuard - 1));
      mprotect(a.trap, kGuard, PROT_NONE);
    } else if (!on && a.trap) {
      mprotect(a.trap, kGuard, kRW);
      a.trap = nullptr;
    }
  }
#else
  (void)on;  // no user-space single step here: the < 16 bytes past such a buffer stay open
#endif
}

bool dev_trap_access(Worker* w, uintptr_t addr) {
  Alloc* a = dev_find_unlocked(addr);
  if (!a || !a->trap) return false;
  uintptr_t page = reinterpret_cast<uintptr_t>(a->trap);
  uintptr_t u = reinterpret_cast<uintptr_t>(a->user);
  if (addr < page || addr >= page + kGuard || addr < u || addr >= u + a->n) return false;
  int slot = w->step_page[0] == nullptr ? 0 : w->step_page[1] == nullptr ? 1 : -1;
  mprotect(a->trap, kGuard, kRW);
  if (slot >= 0) w->step_page[slot] = a->trap;  // else it stays open for this launch
  return true;
}

void flush_host_fault() {
  Global& g = G();
  uintptr_t addr = g.host_fault.exchange(0);
  if (!addr) return;
  std::string which = "a device buffer";
  if (Alloc* a = dev_find_unlocked(addr))
    which = "device allocation #" + std::to_string(a->index) + " (" + std::to_string(a->n) + " bytes)";
  record(kCrash, "host code read or wrote " + which +
                     " directly: device memory is reachable only through cudaMemcpy*/cudaMemset* "
                     "(on a GPU this is an invalid host access)");
}

void arg_pointer(int index, uintptr_t p) {
  Global& g = G();
  if (!g.strict_args || !p) return;
  std::lock_guard<std::mutex> lock(g.mu);
  if (dev_find_unlocked(p)) return;
  if (g.bad_arg < 0) g.bad_arg = index;
}

}  // namespace sc

// ---------------------------------------------------------------- C API for the driver
extern "C" {

// A device buffer for a launcher argument: the driver's buffers are device memory like any
// cudaMalloc, and from the first one on, kernel pointer arguments must point into device
// memory (a host pointer is a crash, as on a GPU).
void* sc_device_alloc(size_t n) {
  sc::Global& g = sc::G();
  g.strict_args = true;
  void* p = sc::dev_alloc(n, sc::kDeviceMem);
  if (p) {
    std::lock_guard<std::mutex> lock(g.mu);
    g.allocs[reinterpret_cast<uintptr_t>(p)].caller = true;
  }
  return p;
}

// Copies into (upload = 1) or out of (upload = 0) a buffer from sc_device_alloc.
int sc_device_copy(void* dev, void* host, size_t n, int upload) {
  if (sc::dev_range(dev, n) != 1) return cudaErrorInvalidValue;
  sc::Global& g = sc::G();
  bool was = g.device_open;
  sc::dev_set_open(true);
  if (upload) memcpy(dev, host, n);
  else memcpy(host, dev, n);
  sc::dev_set_open(was);
  return cudaSuccess;
}

void sc_device_free(void* p) { sc::dev_free(p); }

}  // extern "C"
