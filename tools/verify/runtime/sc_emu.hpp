// STRUCT-COVER CUDA emulator: the device and host API that rewritten CUDA programs compile
// against with a plain C++ compiler (docs/EMULATOR.md). Each CUDA thread runs as a fiber; a
// block's fibers run on one worker thread; blocks spread over worker threads.
//
// The rewriter (tools/verify/rewriter.py) turns `k<<<g,b,s,st>>>(args)` into sc::launch(...)
// and `__shared__` declarations into per-block arena slots; everything else compiles as is
// against the definitions below.
#pragma once
// A classic guard as well: a program that includes this header after the precompiled copy was
// force-included (emulator.py) must see it as already included. It is the real
// <cuda_runtime.h>'s guard name, so testing for it tells a program nothing about the emulator.
#ifndef __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_H__

// <float.h> and <limits.h>: nvcc's implicit host headers declare FLT_MAX, INT_MAX and friends,
// so CUDA that uses them without an include builds there and must build here.
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <cmath>
#include <type_traits>
#include <utility>

#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 800
#endif
// What nvcc predefines (no emulator-specific macro: a program must not be able to tell).
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
#define CUDART_VERSION 13000

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
// A `__shared__` the rewriter did not turn into an arena slot would silently become a
// per-thread variable: make it a compile error instead.
#define __shared__ __sc_unrewritten_shared_declaration__

// ---------------------------------------------------------------- vector types
struct __attribute__((aligned(8))) float2 { float x, y; };
struct float3 { float x, y, z; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(16))) double2 { double x, y; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct int3 { int x, y, z; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
struct uint3 { unsigned x, y, z; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
struct __attribute__((aligned(4))) char4 { signed char x, y, z, w; };
struct __attribute__((aligned(4))) uchar4 { unsigned char x, y, z, w; };
struct __attribute__((aligned(16))) longlong2 { long long x, y; };

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int3 make_int3(int x, int y, int z) { return {x, y, z}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline char4 make_char4(signed char x, signed char y, signed char z, signed char w) { return {x, y, z, w}; }
inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) { return {x, y, z, w}; }

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

static constexpr int warpSize = 32;

// ---------------------------------------------------------------- runtime core (sc_emu.cpp)
namespace sc {

//: Size (and alignment) of one fiber's stack region. The Fiber* sits near the region's top at a
//: per-region "colour" offset, so the current fiber is found from the stack pointer alone (no
//: TLS lookups on the hot path) and the tops of many stacks do not all fall in one cache set.
static constexpr size_t kStackSize = 128 * 1024;
inline uintptr_t fiber_slot(uintptr_t region_top) {
  return region_top - 64 - ((region_top / kStackSize) & 63) * 320;
}

struct Block;

struct Fiber {
  uint3 tid;          // threadIdx
  unsigned linear;    // linear index in the block
  Block* blk;
  void* sp;           // saved stack pointer while switched out
  int state;          // see sc_emu.cpp
  int wait_line;      // source line of the barrier / collective it waits at
  const char* wait_what;
  unsigned long long result;  // result of the last collective
  unsigned long long fenced;  // launch in which this thread last ran __threadfence()
};

struct Block {
  uint3 bid;          // blockIdx
  dim3 bdim;          // blockDim
  dim3 gdim;          // gridDim
  char* smem;         // this block's shared arena
  size_t dyn_bytes;   // dynamic shared memory size
};

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "sc_emu supports x86-64 and aarch64 only"
#endif
inline Fiber* cur() {
  // Any address in the current frame lies in the current fiber's stack region. The address of
  // a local is loop-invariant to the optimizer (an asm read of the stack pointer is not: GCC's
  // loop-invariant motion never moves asm), so `threadIdx` inside a kernel's loop is loaded once
  // instead of on every iteration (5 of 14 instructions per step of a tiled GEMM's inner loop).
  char probe;
  uintptr_t sp = reinterpret_cast<uintptr_t>(&probe);
  return *reinterpret_cast<Fiber**>(fiber_slot((sp | (kStackSize - 1)) + 1));
}

// Block-wide barrier; op 0 plain, 1 count, 2 and, 3 or. Returns the reduced predicate.
int syncthreads(int line, int pred, int op);
// Warp collectives. kind: see WarpOp. Returns the lane's result bits.
enum WarpOp { kShflIdx = 0, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll, kSyncWarp,
              kMatchAny, kMatchAll, kActiveMask };
unsigned long long warp_op(int kind, unsigned mask, unsigned long long value, int arg,
                           int width, int line);
unsigned activemask();
int new_site();
void* shared_slot(int site, size_t size, size_t align);
// Race check of a plain read-modify-write (`a[i] += v`, `s[j]++`) on shared or global memory:
// two threads of a block between the same barriers, or two blocks of one launch, doing one on
// the same address is a race (sc_race.cpp). The rewriter routes such statements here.
void rmw_note(const volatile void* p, int line);
// A kernel pointer argument (checked before the launch: host memory is a crash).
void arg_pointer(int index, uintptr_t p);
// The result of a global atomic decided what a block does next, in a program without
// __threadfence: x86 ordering would hide the missing fence, so this is not checked (rewriter).
void unfenced_signal(int line, const volatile void* addr);
// __threadfence(): a full fence, noted for unfenced_signal.
void threadfence();
void* dynamic_shared();
[[noreturn]] void device_trap(const char* what, const char* file, int line);

using ThreadFn = void (*)(void*);
// serial: the program has no barrier or warp collective anywhere (the rewriter checks), so
// each block's threads may run one after another as plain calls on a single fiber.
int launch_impl(dim3 grid, dim3 block, size_t smem, ThreadFn fn, void* ctx, bool serial);
// A launch on a stream other than the caller's (the runner and the KernelBench module give the
// null stream): work the caller's timer does not see. Fails the run (sc_launch.cpp).
void side_stream_launch(const void* stream);

template <class F>
static void thunk(void* p) { (*static_cast<F*>(p))(); }

template <class T, class F>
inline decltype(auto) rmw(T& ref, int line, F&& op) {
  rmw_note(__builtin_addressof(ref), line);
  return op(ref);
}

template <class T>
inline void check_arg(int index, const T& v) {
  if constexpr (std::is_pointer<T>::value) arg_pointer(index, reinterpret_cast<uintptr_t>(v));
}
template <class... A>
inline void check_kernel_args(const A&... a) {
  int i = 0;
  (check_arg(i++, a), ...);
}

template <class T>
inline T signal_result(T v, int line, const volatile void* addr) {
  unfenced_signal(line, addr);
  return v;
}

// Profile counters: what the profile build of a program calls (inline parts in sc_prof.hpp,
// the rest in sc_prof.cpp). Declared here, with the rest of the runtime a program may call.
struct ProfThread;
int prof_enable();
void prof_kernel(const char* name);
__attribute__((const)) ProfThread* prof_ctx();
void prof_grow(ProfThread* t, uintptr_t addr, unsigned size, int site, int kind);

}  // namespace sc

#define threadIdx (::sc::cur()->tid)
#define blockIdx (::sc::cur()->blk->bid)
#define blockDim (::sc::cur()->blk->bdim)
#define gridDim (::sc::cur()->blk->gdim)

// ---------------------------------------------------------------- CUDA host API shim
typedef int cudaError_t;
enum : int {
  cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9, cudaErrorInvalidDevice = 101, cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702, cudaErrorAssert = 710, cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
};
typedef int cudaError;
struct CUstream_st;
typedef CUstream_st* cudaStream_t;
struct CUevent_st;
typedef CUevent_st* cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
                      cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3,
                      cudaMemcpyDefault = 4 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxSharedMemoryPerBlock = 8,
                      cudaDevAttrWarpSize = 10, cudaDevAttrMultiProcessorCount = 16,
                      cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
  int multiProcessorCount, major, minor, maxThreadsPerMultiProcessor;
  size_t sharedMemPerMultiprocessor, sharedMemPerBlockOptin;
  int l2CacheSize, clockRate, memoryClockRate, memoryBusWidth;
};
#define cudaStreamNonBlocking 1
#define cudaStreamDefault 0
#define cudaEventDefault 0
#define cudaEventDisableTiming 2

extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t);
const char* cudaGetErrorName(cudaError_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamCreate(cudaStream_t*);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t*, unsigned);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaEventCreate(cudaEvent_t*);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t*, unsigned);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t cudaMalloc(void** p, size_t n);
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned flags);
cudaError_t cudaMallocHost(void** p, size_t n);
cudaError_t cudaFree(void* p);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemset(void* p, int v, size_t n);
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s);
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaGetDevice(int*);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceCount(int*);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int);
cudaError_t cudaDeviceGetAttribute(int*, cudaDeviceAttr, int);
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n) { return cudaMemsetAsync(p, v, n, nullptr); }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  return cudaMemcpyAsync(d, s, n, k, nullptr);
}
inline cudaError_t cudaEventRecord(cudaEvent_t e) { return cudaEventRecord(e, nullptr); }
template <class T> inline cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc((void**)p, n); }
template <class T> inline cudaError_t cudaMallocHost(T** p, size_t n) { return cudaMallocHost((void**)p, n); }
template <class T> inline cudaError_t cudaMallocManaged(T** p, size_t n, unsigned f = 1) {
  return cudaMallocManaged((void**)p, n, f);
}
template <class F> inline cudaError_t cudaFuncSetAttribute(F*, cudaFuncAttribute, int) { return cudaSuccess; }
template <class F> inline cudaError_t cudaFuncSetCacheConfig(F*, int) { return cudaSuccess; }
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F*, int block, size_t) {
  *n = block > 0 ? (2048 / block > 0 ? 2048 / block : 1) : 1;
  return cudaSuccess;
}
// Through cudaMemcpy: the other side may be a device buffer (closed to plain host code).
template <class T>
inline cudaError_t cudaMemcpyToSymbol(T& sym, const void* src, size_t n, size_t off = 0,
                                      cudaMemcpyKind k = cudaMemcpyHostToDevice) {
  return cudaMemcpy(reinterpret_cast<char*>(&sym) + off, src, n, k);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& sym, size_t n, size_t off = 0,
                                        cudaMemcpyKind k = cudaMemcpyDeviceToHost) {
  return cudaMemcpy(dst, reinterpret_cast<const char*>(&sym) + off, n, k);
}
#define cudaFuncCachePreferShared 1
#define cudaFuncCachePreferL1 2

namespace sc {
// The rewritten form of `kernel<<<grid, block, smem, stream>>>(args)`: `f` runs the kernel
// body for the current fiber; launches are synchronous (streams are serialized).
// `serial` comes from the rewriter (true when the program has no barrier or warp collective)
// as an argument, not a macro, so this header can be precompiled once for every program.
template <class F>
inline void launch(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, F f,
                   bool serial = false) {
  if (stream) side_stream_launch(stream);
  launch_impl(grid, block, smem, &thunk<F>, &f, serial);
}
}  // namespace sc

// ---------------------------------------------------------------- device intrinsics
#define __syncthreads() ::sc::syncthreads(__LINE__, 1, 0)
#define __syncthreads_count(p) ::sc::syncthreads(__LINE__, (p) ? 1 : 0, 1)
#define __syncthreads_and(p) ::sc::syncthreads(__LINE__, (p) ? 1 : 0, 2)
#define __syncthreads_or(p) ::sc::syncthreads(__LINE__, (p) ? 1 : 0, 3)
// `, ##__VA_ARGS__` keeps its comma under -std=c++17 when the macro has no named parameter,
// so a bare __syncwarp() would not compile: the (optional) mask is a whole argument list.
#define __syncwarp(...) ::sc::syncwarp_at(__LINE__, ::sc::mask_or_full(__VA_ARGS__))
#define __activemask() ::sc::activemask()

namespace sc {
inline unsigned mask_or_full() { return 0xffffffffu; }
inline unsigned mask_or_full(unsigned mask) { return mask; }
inline void syncwarp_at(int line, unsigned mask) {
  warp_op(kSyncWarp, mask, 0, 0, 32, line);
}
template <class T>
inline T shfl(int kind, unsigned mask, T v, int arg, int width, int line) {
  static_assert(sizeof(T) <= 8, "__shfl_sync needs a type of at most 8 bytes");
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof(T));
  bits = warp_op(kind, mask, bits, arg, width, line);
  T out;
  memcpy(&out, &bits, sizeof(T));
  return out;
}
}  // namespace sc

#define __shfl_sync(mask, v, lane, ...) ::sc::shfl(::sc::kShflIdx, mask, v, lane, ::sc::width_or_32(__VA_ARGS__), __LINE__)
#define __shfl_up_sync(mask, v, d, ...) ::sc::shfl(::sc::kShflUp, mask, v, d, ::sc::width_or_32(__VA_ARGS__), __LINE__)
#define __shfl_down_sync(mask, v, d, ...) ::sc::shfl(::sc::kShflDown, mask, v, d, ::sc::width_or_32(__VA_ARGS__), __LINE__)
#define __shfl_xor_sync(mask, v, m, ...) ::sc::shfl(::sc::kShflXor, mask, v, m, ::sc::width_or_32(__VA_ARGS__), __LINE__)
#define __ballot_sync(mask, p) ((unsigned)::sc::warp_op(::sc::kBallot, mask, (p) ? 1 : 0, 0, 32, __LINE__))
#define __any_sync(mask, p) ((int)::sc::warp_op(::sc::kAny, mask, (p) ? 1 : 0, 0, 32, __LINE__))
#define __all_sync(mask, p) ((int)::sc::warp_op(::sc::kAll, mask, (p) ? 1 : 0, 0, 32, __LINE__))
#define __uni_sync(mask, p) __all_sync(mask, p)
namespace sc {
inline int width_or_32() { return 32; }
inline int width_or_32(int w) { return w; }
template <class T>
inline unsigned long long match_bits(T v) {
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return b;
}
}  // namespace sc
#define __match_any_sync(mask, v) ((unsigned)::sc::warp_op(::sc::kMatchAny, mask, ::sc::match_bits(v), 0, 32, __LINE__))
#define __match_all_sync(mask, v, pred) ((unsigned)::sc::match_all(mask, ::sc::match_bits(v), pred, __LINE__))
namespace sc {
inline unsigned match_all(unsigned mask, unsigned long long v, int* pred, int line) {
  unsigned r = (unsigned)warp_op(kMatchAll, mask, v, 0, 32, line);
  *pred = r != 0;
  return r;
}
}  // namespace sc

#define __threadfence() ::sc::threadfence()
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_system() ::sc::threadfence()
#define __trap() ::sc::device_trap("__trap()", __FILE__, __LINE__)
#define __brkpt() ((void)0)
#define __nanosleep(ns) ((void)(ns))

#include "sc_math.hpp"
#include "sc_atomic.hpp"
#include "sc_fp16.hpp"
#include "sc_cg.hpp"
#include "sc_prof.hpp"  // profile builds' counters (only they call it)
#include "sc_poison.hpp"

// Device-side assert reports a verdict instead of aborting the whole process.
#include <assert.h>
#undef assert
#define assert(e) ((e) ? (void)0 : ::sc::device_trap("assert(" #e ")", __FILE__, __LINE__))

#endif  // __CUDA_RUNTIME_H__
