// Internal state shared by the emulator runtime's translation units (not for programs).
#pragma once
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sc_emu.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <vector>

// Defined (in assembly) by sc_switch.hpp, which only sc_emu.cpp includes.
extern "C" void sc_switch_ctx(void** save_sp, void* to_sp);

namespace sc {

enum State { kRunnable = 0, kAtBarrier, kAtWarp, kExited };
enum Status { kOk = 0, kDeadlock = 1, kCrash = 2, kTimeout = 3, kUnsupported = 4 };
enum Schedule { kForward = 0, kReverse = 1, kRandom = 2 };

constexpr size_t kGuard = 4096;
constexpr size_t kMaxStaticShared = 48 * 1024;
constexpr size_t kMaxDynShared = 227 * 1024;
constexpr int kMaxSites = 1024;

struct WarpGroup {
  bool active;
  int kind, width, line;
  unsigned mask, need, arrived;
  unsigned long long vals[32];
  int args[32];
};

struct Warp {
  unsigned exist, exited;
  unsigned pending;  // lanes named by an active group (fast path for exits)
  unsigned active;   // bit i: groups[i] is waiting for lanes
  WarpGroup groups[32];
};

// A worker thread's state; it *is* the Block its fibers point to.
struct Worker : Block {
  char* stacks = nullptr;  // kStackSize-aligned regions, guard page at the bottom of each
  size_t stack_cap = 0;
  void* map_base = nullptr;
  size_t map_len = 0;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<int> order;
  std::vector<long> site_off;
  std::vector<char> arena_store;
  size_t static_used = 0, static_hw = 0;
  void* sched_sp = nullptr;
  void* dead_sp = nullptr;
  volatile int in_fiber = 0;
  bool serial = false;     // block runs its threads one after another on one fiber
  size_t nthreads = 0;
  int live = 0, arrived = 0;
  // The barrier being gathered: predicate sum, first source line, and a different line if
  // threads wait at two __syncthreads (a divergent barrier, reported at release).
  int bar_count = 0, bar_line = 0, bar_other = 0;
  std::atomic<int>* abort = nullptr;  // &G().abort, read on every switch without G()'s guard
  size_t pos = 0, pass_len = 0;  // position in the current scheduling pass
  int ran = 0;                   // fibers resumed in the current pass
  int pending_active = 0;        // lanes waiting in __activemask()
  unsigned long long rng = 1;
  pthread_t thread{};
  char* altstack = nullptr;
};

struct Event { std::chrono::steady_clock::time_point t; };

struct Global {
  std::mutex mu;
  int status = kOk;
  std::string detail;
  int sticky = cudaSuccess;
  int last_err = cudaSuccess;
  std::atomic<int> abort{0};
  int nworkers = 0;
  int schedule = kForward;
  unsigned long long seed = 1;
  double timeout_s = 60.0;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  std::vector<Worker*> workers;
  std::set<void*> allocations;
  double kernel_seconds = 0.0;
  double kernel_cpu_seconds = 0.0;  // CPU time of the worker threads inside launches
  long launches = 0;
  // The launch in progress.
  dim3 grid, block;
  size_t dyn = 0;
  ThreadFn fn = nullptr;
  void* ctx = nullptr;
  std::vector<unsigned> block_order;
  std::atomic<size_t> next{0};
  unsigned char poison = 0xFF;
  bool serial = false;
};

//: The process-wide (per loaded library) runtime state.
Global& G();

//: The worker the calling thread is (null outside launches).
extern thread_local Worker* tls_worker;

inline Worker* worker_of(Fiber* f) { return static_cast<Worker*>(f->blk); }

// Shared between the scheduler (sc_emu.cpp), the warp collectives (sc_warp.cpp) and the
// launcher (sc_launch.cpp).
void record(int code, const std::string& msg);
[[noreturn]] void fail_in_fiber(Fiber* f, int code, const std::string& msg);
[[noreturn]] void serial_violation(Fiber* f, const char* what);
void switch_out(Fiber* f);
void warp_lane_exited(Fiber* f);
bool settle_activemasks(Worker* w);
void run_block(Worker* w, unsigned linear);
unsigned long long xorshift(unsigned long long& s);
std::string fmt3(uint3 v);
std::string where(Fiber* f);

}  // namespace sc
