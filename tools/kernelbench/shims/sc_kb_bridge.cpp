// The emulator runtime as torch sees it (linked, with the runtime's objects, into the shared
// runtime library every CPU-built extension uses; trusted code, built outside the jail).
//
// * torch's CPU allocator is replaced, when the library loads, by one that allocates through
//   the emulator's device allocator (sc_devmem.cpp, as "managed" memory: host code may touch
//   it): every tensor created from then on has PROT_NONE guard pages on both sides, canary
//   bytes in its alignment slack (checked after each launch) and holds the run's poison word
//   until written, so out-of-bounds accesses and reads of never-written memory in a kernel are
//   found as for cudaMalloc buffers.
// * Kernel pointer arguments must point into such tensors (or cudaMalloc buffers) unless
//   strict pointers are off: a kernel reading host memory would fault on a GPU.
// * sc_kb_begin() starts one extension call: clears the status and the sticky error and sets
//   the deadline; unlike sc_reset() it never frees allocations (they belong to live tensors).
// * Unless a schedule was fixed (sc_kb_configure with schedule 0, 1 or 2), calls rotate through
//   the forward, reverse and random fiber schedules (and their poison words): a harness that
//   calls a function for several trials runs it under each without knowing the emulator, so a
//   missing __syncthreads or a read of never-written memory gives a wrong result on some trial.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Device.h>

#include <chrono>
#include <new>

#include "sc_internal.hpp"

namespace {

void emulator_free(void* p) {
  if (p) sc::dev_free(p);
}

struct EmulatorAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) return {nullptr, nullptr, &emulator_free, c10::Device(c10::DeviceType::CPU)};
    void* p = sc::dev_alloc(n, sc::kManagedMem);
    if (!p) throw std::bad_alloc();
    return {p, p, &emulator_free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &emulator_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

EmulatorAllocator g_allocator;
double g_timeout_s = 60.0;
bool g_strict = true;
bool g_rotate = true;             // schedule -1: rotate per call
unsigned long long g_calls = 0;   // calls started, for the rotation
unsigned long long g_seed = 1;

__attribute__((constructor)) void install() {
  // Above the default CPU allocator's priority (0), so later registrations do not undo it.
  c10::SetCPUAllocator(&g_allocator, 100);
  sc::G().strict_args = g_strict;
}

}  // namespace

extern "C" {

void sc_kb_configure(int workers, int schedule, unsigned long long seed, double timeout_s,
                     int strict_pointers) {
  sc::Global& g = sc::G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.nworkers = workers;
  g_rotate = schedule < 0 || schedule > 2;
  g.schedule = g_rotate ? 0 : schedule;
  g.seed = g_seed = seed ? seed : 1;
  g_calls = 0;
  g.timeout_s = g_timeout_s = timeout_s > 0 ? timeout_s : 60.0;
  g.pattern = sc::pattern_for(g.schedule, g.seed);
  g_strict = strict_pointers != 0;
  g.strict_args = g_strict;
}

void sc_kb_begin(void) {
  sc::Global& g = sc::G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.status = sc::kOk;
  g.detail.clear();
  g.sticky = cudaSuccess;
  g.last_err = cudaSuccess;
  g.abort.store(0);
  g.launches = 0;
  g.kernel_seconds = 0.0;
  g.kernel_cpu_seconds = 0.0;
  g.bad_arg = -1;
  g.strict_args = g_strict;
  g.host_fault.store(0);
  if (g_rotate) {
    g.schedule = (int)(g_calls % 3);
    g.seed = g_seed + g_calls / 3;
    g.pattern = sc::pattern_for(g.schedule, g.seed);
  }
  ++g_calls;
  g.timeout_s = g_timeout_s;
  g.deadline = std::chrono::steady_clock::now() +
               std::chrono::microseconds((long long)(g_timeout_s * 1e6));
}

int sc_kb_status(void) {
  sc::flush_host_fault();
  return sc::G().status;
}

// The KernelBench fault-injection call (child.py): while on, every extension call fails at
// entry as a failed launch or sync would make it fail on a GPU.
static int g_inject = 0;
void sc_kb_inject(int on) { g_inject = on; }
int sc_kb_injecting(void) { return g_inject; }

}  // extern "C"
