// Internal state shared by the emulator runtime's translation units (not for programs).
#pragma once
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sc_emu.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

// Defined (in assembly) by sc_switch.hpp, which only sc_emu.cpp includes.
extern "C" void sc_switch_ctx(void** save_sp, void* to_sp);

namespace sc {

enum State { kRunnable = 0, kAtBarrier, kAtWarp, kExited };
enum Status { kOk = 0, kDeadlock = 1, kCrash = 2, kTimeout = 3, kUnsupported = 4, kRace = 5 };
// kFailLaunch is the fault-injection run: every launch fails as if the GPU had refused it
// (sc_launch.cpp), so host code that only runs when a kernel fails shows what it does.
enum Schedule { kForward = 0, kReverse = 1, kRandom = 2, kFailLaunch = 3 };

constexpr size_t kGuard = 4096;
// PROT_NONE on each side of a device buffer: an access up to this far outside faults.
constexpr size_t kDevGuard = 64 * 1024;
constexpr size_t kStackPoison = 8192;  // poisoned bytes at the top of each fresh fiber stack
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
  unsigned epoch;    // completed collectives: lanes on either side of one are ordered
  unsigned pending;  // lanes named by an active group (fast path for exits)
  unsigned active;   // bit i: groups[i] is waiting for lanes
  WarpGroup groups[32];
};

// Profile counters (sc_prof.cpp; ProfEntry and ProfThread in sc_prof.hpp).
//: Counters of one static site (or of a whole launch, summed over its sites).
struct ProfSite {
  int kind = -1;        // ProfKind of the site; -1 unseen
  int space = 0;        // bit 0 global, bit 1 shared, bit 2 local (thread stack)
  unsigned long long requests = 0, units = 0, ideal = 0, lanes = 0, bytes = 0, worst = 0;
};

//: Counters of one launch (per worker while it runs, then summed).
#define SC_PROF_SUMS(X)                                                                   \
  X(gld_req) X(gld_sect) X(gld_bytes) X(gst_req) X(gst_sect) X(gst_bytes) X(sld_req)      \
  X(sld_wave) X(sld_ideal) X(sst_req) X(sst_wave) X(sst_ideal) X(gatom_req) X(gatom_lanes) \
  X(gatom_serial) X(satom_req) X(satom_lanes) X(satom_serial) X(local_acc) X(br_req)      \
  X(br_div) X(br_lanes) X(barriers) X(warp_syncs) X(warp_collectives) X(blocks) X(gld_l1_miss)
#define SC_PROF_DECL(n) unsigned long long n = 0;
struct ProfStats {
  SC_PROF_SUMS(SC_PROF_DECL)
  unsigned long long gatom_worst = 0, satom_worst = 0;  // maxima over requests
  unsigned long long ops[kProfOps] = {};                 // executed operations (ProfThread::ops)
  std::vector<ProfSite> sites;
  void add(const ProfStats& o);
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
  unsigned epoch = 0;             // barriers released in the current block
  // A fault the signal handler saw on a fiber; recorded by the scheduler (the handler itself
  // only stores these, to stay async-signal-safe).
  uintptr_t fault_addr = 0;
  int fault_kind = 0;             // 0 none, 1 stack overflow, 2 invalid access, 3 preempted
  // Trap pages (sc_devmem.cpp) opened for the one instruction being single-stepped (x86-64).
  char* step_page[2] = {nullptr, nullptr};
  Fiber* fault_fiber = nullptr;
  // Profile counters (profile builds only): each thread's log of accesses since the last flush
  // (prof_threads[i] points into its warp's prof_buf[i / 32]) and its executed operations.
  std::vector<ProfThread> prof_threads;
  std::vector<std::vector<ProfEntry>> prof_buf;
  bool prof_any = false;
  ProfStats prof;
  // The block's L1 data cache as load sectors see it (sc_prof.cpp, l1_misses): a direct-mapped
  // tag array of kProfL1Sectors 32-byte sectors, emptied at every block start. Tag 0 is empty.
  std::vector<unsigned long long> prof_l1;
};

enum AllocKind { kDeviceMem = 0, kManagedMem = 1, kPinnedMem = 2 };

//: One device allocation (sc_devmem.cpp): [map, map+len) = guard, body, guard (kDevGuard each).
struct Alloc {
  char* map;
  size_t len, body;   // whole mapping; the read-write part between the guards
  char* user;         // what cudaMalloc returned: at the body's start, or ending at its end (or
                      // its last 16-byte granule starting the trap page) by Global::end_layout
  size_t n, cap;      // requested bytes; bytes from user to the body's end
  int kind;           // AllocKind: only kDeviceMem is closed while host code runs
  bool open;
  long index;         // allocation order since the last sc_reset
  bool trappable;     // laid out with a trap page (dev_alloc)
  char* trap;         // that page while it is closed (dev_arm_traps), or null
  bool caller;        // a launcher argument's buffer (sc_device_alloc), not the program's own
};

//: A host-to-device copy into a device buffer (sc_hostcopy.cpp).
struct HostWrite {
  uintptr_t addr;
  std::vector<unsigned char> bytes;  // what was written: (nearly) equal at the end = no kernel
                                     // computed them
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
  std::map<uintptr_t, Alloc> allocs;  // by buffer start
  long alloc_count = 0;
  bool device_open = false;            // device buffers are mapped (a launch or copy is running)
  bool strict_args = false;            // the driver's buffers are device memory (sc_device_alloc)
  int bad_arg = -1;                    // first kernel pointer argument into host memory
  std::atomic<uintptr_t> host_fault{0};  // host code touched device memory here (signal handler)
  unsigned long long launch_id = 0;    // kernel launches since the library was loaded
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
  uint32_t pattern = 0x7EFFFFFFu;  // poison word for fresh shared, device and stack memory
  // Device buffers of this run end at their upper guard (true) or start at their lower one:
  // a read past the end or before the start faults under one layout or the other.
  bool end_layout = true;
  bool serial = false;
  // Profile counters: on in profile builds (prof_enable); one JSON object per launch.
  bool prof_on = false;
  std::string prof_name;                 // kernel of the next launch (prof_kernel)
  std::vector<std::string> prof_launches;
  // Copies between host and device memory this run (sc_hostcopy.cpp).
  size_t host_read = 0;                // bytes copied from device buffers to host memory
  std::vector<HostWrite> host_writes;  // copies from host memory into device buffers
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
void report_fault(Worker* w);
bool ensure_stacks(Worker* w, size_t n);
void unmap_stacks(Worker* w);
unsigned long long xorshift(unsigned long long& s);
void install_fault_handler();
void release_fault_handler();
// sc_devmem.cpp
void fill_pattern(void* p, size_t n, uint32_t word);
void* dev_alloc(size_t n, int kind);
int dev_free(void* p);
void dev_free_all();
Alloc* dev_find_unlocked(uintptr_t addr);
void dev_set_open(bool open);
std::string dev_check_slack();
int dev_range(const void* p, size_t n);  // 0 host memory, 1 inside one allocation, -1 straddles
void flush_host_fault();
void dev_arm_traps(bool on);
// sc_hostcopy.cpp
void note_host_copy(const void* d, const void* s, size_t n);
void host_roundtrip_check();
void host_copies_reset();
// sc_hostthreads.cpp
void threads_baseline();
void threads_check(const char* when);
bool dev_trap_access(Worker* w, uintptr_t addr);  // signal handler: an in-bounds access, stepped
// sc_prof.cpp
void prof_block_start(Worker* w, size_t nthreads);
void prof_flush(Worker* w);
void prof_block_end(Worker* w);
void prof_launch_start();
void prof_launch_end(int nworkers);
const char* prof_json();
// sc_race.cpp
void race_reset_launch();
uint32_t pattern_for(int schedule, unsigned long long seed);
std::string fmt3(uint3 v);
std::string where(Fiber* f);

}  // namespace sc
