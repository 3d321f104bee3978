// The CUDA runtime API as seen by emulated host code (memory, streams, events, errors) and the
// C status API that tools/verify/emulator.py calls through ctypes.
#include "sc_internal.hpp"

#include <stdlib.h>
#include <string.h>

namespace {
// Runs a host-side copy or fill with device buffers mapped; both ranges must lie inside one
// allocation each (or in host memory), as the CUDA runtime checks.
template <class F>
cudaError_t with_device_open(const void* a, const void* b, size_t n, F op) {
  sc::Global& g = sc::G();
  sc::flush_host_fault();
  if ((a && sc::dev_range(a, n) < 0) || (b && sc::dev_range(b, n) < 0))
    return g.last_err = cudaErrorInvalidValue;
  sc::threads_check("before a copy or fill opened device memory");
  bool was = g.device_open;
  sc::dev_set_open(true);
  op();
  sc::dev_set_open(was);
  return g.sticky;
}
}  // namespace

// ---------------------------------------------------------------- C API for the Python side
extern "C" {

void sc_configure(int workers, int schedule, unsigned long long seed, double timeout_s) {
  sc::Global& g = sc::G();
  g.nworkers = workers;
  g.schedule = schedule;
  g.seed = seed ? seed : 1;
  g.timeout_s = timeout_s;
  g.deadline = std::chrono::steady_clock::now() +
               std::chrono::microseconds((long long)(timeout_s * 1e6));
  // Each schedule poisons fresh memory differently (large positive, large negative, NaN), so a
  // read of never-written memory changes the output between schedules and shows up as a race
  // even behind fmaxf/fminf.
  g.pattern = sc::pattern_for(schedule, g.seed);
  // Buffers end at their upper guard under forward and start at their lower one under reverse
  // (random: by seed), so every run of the default schedules checks both ends.
  g.end_layout = schedule == sc::kForward || (schedule == sc::kRandom && (g.seed & 1));
  sc::threads_baseline();
}

void sc_reset(void) {
  sc::Global& g = sc::G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.status = sc::kOk;
  g.detail.clear();
  g.sticky = cudaSuccess;
  g.last_err = cudaSuccess;
  g.abort.store(0);
  g.kernel_seconds = 0.0;
  g.kernel_cpu_seconds = 0.0;
  g.launches = 0;
  g.strict_args = false;
  g.bad_arg = -1;
  g.host_fault.store(0);
  g.prof_launches.clear();
  g.prof_name.clear();
  sc::host_copies_reset();
  sc::dev_free_all();
}

int sc_status(void) {
  sc::flush_host_fault();
  sc::threads_check("when the launcher had returned");
  sc::host_roundtrip_check();
  return sc::G().status;
}
const char* sc_detail(void) { return sc::G().detail.c_str(); }
double sc_kernel_seconds(void) { return sc::G().kernel_seconds; }
double sc_kernel_cpu_seconds(void) { return sc::G().kernel_cpu_seconds; }
long sc_launch_count(void) { return sc::G().launches; }
// Profile counters of the launches since sc_reset, as a JSON array (sc_prof.cpp); "" unless
// the library is a profile build.
const char* sc_profile_json(void) { return sc::prof_json(); }
// The host calls this after each run (see release_fault_handler).
void sc_release_handlers(void) { sc::release_fault_handler(); }

// ---------------------------------------------------------------- CUDA runtime shim
cudaError_t cudaGetLastError(void) {
  sc::Global& g = sc::G();
  int e = g.last_err;
  g.last_err = g.sticky;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return sc::G().last_err; }
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return "unspecified launch failure";
  }
}
const char* cudaGetErrorName(cudaError_t e) { return cudaGetErrorString(e); }
cudaError_t cudaDeviceSynchronize(void) { return sc::G().sticky; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return sc::G().sticky; }
cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = reinterpret_cast<cudaStream_t>(new char[1]); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) { delete[] reinterpret_cast<char*>(s); return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = reinterpret_cast<cudaEvent_t>(new sc::Event()); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  reinterpret_cast<sc::Event*>(e)->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(reinterpret_cast<sc::Event*>(b)->t -
                                                 reinterpret_cast<sc::Event*>(a)->t).count();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete reinterpret_cast<sc::Event*>(e); return cudaSuccess; }
cudaError_t cudaMalloc(void** p, size_t n) {
  void* q = sc::dev_alloc(n, sc::kDeviceMem);
  if (!q) return sc::G().last_err = cudaErrorMemoryAllocation;
  *p = q;
  return cudaSuccess;
}
// Managed and pinned host memory are reachable from host code as well as from kernels.
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned) {
  void* q = sc::dev_alloc(n, sc::kManagedMem);
  if (!q) return sc::G().last_err = cudaErrorMemoryAllocation;
  *p = q;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t n) {
  void* q = sc::dev_alloc(n, sc::kPinnedMem);
  if (!q) return sc::G().last_err = cudaErrorMemoryAllocation;
  *p = q;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  int e = sc::dev_free(p);
  if (e) sc::G().last_err = e;
  return e;
}
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }


cudaError_t cudaMemset(void* p, int v, size_t n) {
  return with_device_open(p, nullptr, n, [&] { memset(p, v, n); });
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) { return cudaMemset(p, v, n); }
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  return with_device_open(d, s, n, [&] {
    memmove(d, s, n);
    sc::note_host_copy(d, s, n);
  });
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t) {
  return cudaMemcpy(d, s, n, k);
}
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
// One emulated device, as the KernelBench GPU child sees one: another index is an error there.
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : (sc::G().last_err = cudaErrorInvalidDevice); }
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  memset(p, 0, sizeof *p);
  // The properties of the GPU the corpus targets (an H100 SXM), so nothing here reveals the
  // emulator.
  snprintf(p->name, sizeof p->name, "NVIDIA H100 80GB HBM3");
  p->totalGlobalMem = (size_t)85024112640ull;
  p->clockRate = 1980000;
  p->memoryClockRate = 2619000;
  p->memoryBusWidth = 5120;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 227 * 1024;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->multiProcessorCount = 132;
  p->major = 9; p->minor = 0;
  p->maxThreadsPerMultiProcessor = 2048;
  p->l2CacheSize = 50 << 20;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = 48 * 1024; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = 227 * 1024; break;
    default: *v = 0;
  }
  return cudaSuccess;
}

}  // extern "C"

// Device code's clock64(): declared in sc_math.hpp, out of line so that programs link no host
// clock themselves (link_check.py refuses that as timing tampering).
long long sc_device_clock() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
