// STRUCT-COVER CUDA emulator runtime: fibers, block scheduler, barriers, shared-memory arena.
// Warp collectives: sc_warp.cpp. Launch and watchdog: sc_launch.cpp. The CUDA host API shim and the C status API
// read by tools/verify/emulator.py are in sc_cudart.cpp.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sc_internal.hpp"
#include "sc_switch.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sc {

Global& G() {
  static Global* g = new Global();  // never destroyed: worker threads may outlive exit paths
  return *g;
}


std::atomic<int> g_sites{0};
thread_local Worker* tls_worker = nullptr;

unsigned long long xorshift(unsigned long long& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

std::string fmt3(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

// Records the first failure of the run; later ones are consequences.
void record(int code, const std::string& msg) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.status == kOk) {
    g.status = code;
    g.detail = msg;
  }
  int expected = 0;
  g.abort.compare_exchange_strong(expected, code);
}

std::string where(Fiber* f) {
  return "block " + fmt3(f->blk->bid) + " thread " + fmt3(f->tid);
}

// Fails the run from inside a fiber: the block is abandoned (its fibers never resume).
[[noreturn]] void fail_in_fiber(Fiber* f, int code, const std::string& msg) {
  record(code, msg);
  Worker* w = worker_of(f);
  sc_switch_ctx(&f->sp, w->sched_sp);
  __builtin_unreachable();
}

// Maps stacks for n fibers (kept for later blocks); false when the address space is exhausted.
// The top of each fresh stack (where kernel frames live) holds the run's poison pattern, so an
// uninitialised local is not reliably zero.
bool ensure_stacks(Worker* w, size_t n) {
  if (w->stack_cap >= n) return true;
  if (w->map_base) munmap(w->map_base, w->map_len);
  w->map_base = nullptr;
  w->stack_cap = 0;
  size_t len = (n + 1) * kStackSize;
  void* base = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return false;
  uintptr_t aligned = (reinterpret_cast<uintptr_t>(base) + kStackSize - 1) & ~(uintptr_t)(kStackSize - 1);
  w->map_base = base;
  w->map_len = len;
  w->stacks = reinterpret_cast<char*>(aligned);
  for (size_t i = 0; i < n; ++i) {
    mprotect(w->stacks + i * kStackSize, kGuard, PROT_NONE);
    uintptr_t slot = fiber_slot(reinterpret_cast<uintptr_t>(w->stacks + (i + 1) * kStackSize));
    fill_pattern(reinterpret_cast<char*>(slot - kStackPoison), kStackPoison, G().pattern);
  }
  w->stack_cap = n;
  return true;
}

void unmap_stacks(Worker* w) {
  if (w->map_base) munmap(w->map_base, w->map_len);
  w->map_base = nullptr;
  w->stacks = nullptr;
  w->stack_cap = 0;
}

// Releases the threads waiting at __syncthreads. Each arrival already added its predicate and
// noted its source line (syncthreads()), so this is one pass over the block's fibers.
void release_barrier(Worker* w, Fiber* self) {
  if (w->bar_other) {
    fail_in_fiber(self, kDeadlock,
                  "divergent __syncthreads in block " + fmt3(w->bid) + ": threads wait at line " +
                      std::to_string(w->bar_line) + " and at line " + std::to_string(w->bar_other));
  }
  unsigned long long packed = (unsigned long long)w->bar_count | ((unsigned long long)w->arrived << 32);
  if (w->prof_any) prof_flush(w);  // profile builds: the interval's warp requests (sc_prof.cpp)
  ++w->epoch;
  Fiber* fibers = w->fibers.data();
  for (size_t i = 0, n = w->fibers.size(); i < n; ++i) {
    if (fibers[i].state != kAtBarrier) continue;
    fibers[i].result = packed;
    fibers[i].state = kRunnable;
  }
  w->arrived = w->bar_count = w->bar_line = 0;
}

void on_exit(Fiber* f) {
  Worker* w = worker_of(f);
  f->state = kExited;
  --w->live;
  warp_lane_exited(f);  // sc_warp.cpp
  if (w->arrived > 0 && w->arrived == w->live) release_barrier(w, f);
}

Fiber* next_runnable(Worker* w) {
  while (w->pos < w->pass_len) {
    size_t k = w->pos++;
    Fiber* f = &w->fibers[w->serial ? 0 : w->order[k]];
    if (f->state == kRunnable) {
      ++w->ran;
      return f;
    }
  }
  return nullptr;
}

// A fiber that blocks or exits hands the worker straight to the next runnable fiber of the
// pass (one switch instead of two through the scheduler); the scheduler runs between passes.
void switch_out(Fiber* f) {
  Worker* w = worker_of(f);
  Fiber* next = w->abort->load(std::memory_order_relaxed) ? nullptr : next_runnable(w);
  sc_switch_ctx(&f->sp, next ? next->sp : w->sched_sp);
}

[[noreturn]] void yield_dead(Fiber* f) {
  switch_out(f);
  __builtin_unreachable();
}

std::string describe_deadlock(Worker* w) {
  std::string s = "deadlock in block " + fmt3(w->bid) + ": no thread can run;";
  int exited = 0;
  std::vector<std::pair<std::string, int>> groups;
  for (auto& f : w->fibers) {
    if (f.state == kExited) { ++exited; continue; }
    std::string key = f.state == kAtBarrier ? "__syncthreads" : (f.wait_what ? f.wait_what : "?");
    key += " (line " + std::to_string(f.wait_line) + ")";
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == key; });
    if (it == groups.end()) groups.push_back({key, 1});
    else ++it->second;
  }
  for (auto& p : groups) s += " " + std::to_string(p.second) + " threads wait at " + p.first + ";";
  s += " " + std::to_string(exited) + " threads exited";
  return s;
}

// Turns what the signal handler noted (sc_launch.cpp) into the run's verdict.
void report_fault(Worker* w) {
  int kind = w->fault_kind;
  w->fault_kind = 0;
  if (kind == 3) return;  // preempted past the deadline: the timeout is already recorded
  char buf[48];
  snprintf(buf, sizeof buf, " at address %p", (void*)w->fault_addr);
  std::string what = kind == 1 ? "fiber stack overflow (" + std::to_string((kStackSize - kGuard) >> 10) +
                                     " KiB per thread)"
                               : std::string("invalid memory access") + buf;
  if (kind == 2)
    if (Alloc* a = dev_find_unlocked(w->fault_addr)) {
      long off = (long)(w->fault_addr - reinterpret_cast<uintptr_t>(a->user));
      std::string name = "device allocation #" + std::to_string(a->index) + " (" + std::to_string(a->n) + " bytes)";
      what = off < 0 ? "out-of-bounds read or write " + std::to_string(-off) + " bytes before the start of " + name
                     : "out-of-bounds read or write past the end of " + name + " (byte +" +
                           std::to_string(off - (long)a->n) + ")";
    }
  record(kCrash, what + " in " + where(w->fault_fiber));
}

void run_block(Worker* w, unsigned linear) {
  Global& g = G();
  dim3 gd = g.grid, bd = g.block;
  w->bid = uint3{linear % gd.x, (linear / gd.x) % gd.y, linear / (gd.x * gd.y)};
  w->bdim = bd;
  w->gdim = gd;
  w->dyn_bytes = g.dyn;
  size_t n = (size_t)bd.x * bd.y * bd.z;
  w->serial = g.serial;
  size_t nf = g.serial ? 1 : n;
  if (!ensure_stacks(w, nf)) {
    record(kCrash, "cannot map fiber stacks for " + std::to_string(nf) + " threads (" +
                       std::to_string(nf * kStackSize >> 20) + " MiB of address space) in block " + fmt3(w->bid));
    return;
  }
  w->fibers.resize(nf);
  for (size_t i = 0; i < nf; ++i) {
    Fiber& f = w->fibers[i];
    unsigned li = (unsigned)i;
    f.tid = uint3{li % bd.x, (li / bd.x) % bd.y, li / (bd.x * bd.y)};
    f.linear = li;
    f.blk = w;
    f.state = kRunnable;
    f.wait_line = 0;
    f.wait_what = nullptr;
    f.result = 0;
    f.fenced = 0;
    char* top = w->stacks + (i + 1) * kStackSize;
    char* slot = reinterpret_cast<char*>(fiber_slot(reinterpret_cast<uintptr_t>(top)));
    *reinterpret_cast<Fiber**>(slot) = &f;
    f.sp = sc_prepare_stack(slot);
  }
  size_t nw = (n + 31) / 32;
  w->warps.resize(nw);
  for (size_t k = 0; k < nw; ++k) {
    size_t lanes = std::min<size_t>(32, n - k * 32);
    w->warps[k].exist = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    w->warps[k].exited = 0;
    w->warps[k].pending = 0;
    w->warps[k].active = 0;
    w->warps[k].epoch = 0;
  }
  w->epoch = 0;
  // Shared memory: dynamic part first, static slots after; poisoned so a read before a write
  // (a missing barrier) produces a huge value or NaN instead of a plausible one.
  size_t need = g.dyn + kMaxStaticShared + 64;
  if (w->arena_store.size() < need) w->arena_store.assign(need, 0);
  w->smem = w->arena_store.data();
  fill_pattern(w->smem, g.dyn + w->static_hw, g.pattern);
  w->static_used = 0;
  if (w->site_off.size() != (size_t)kMaxSites) w->site_off.assign(kMaxSites, -1);
  std::fill_n(w->site_off.begin(), std::min(kMaxSites, g_sites.load()), -1L);
  w->pending_active = 0;
  w->live = (int)nf;
  w->nthreads = n;
  w->arrived = 0;
  w->bar_count = w->bar_line = w->bar_other = 0;
  w->abort = &g.abort;
  w->rng = (g.seed * 0x9E3779B97F4A7C15ull) ^ (linear + 1) * 0xBF58476D1CE4E5B9ull;
  if (!w->rng) w->rng = 1;
  w->order.resize(n);
  for (size_t i = 0; i < n; ++i) w->order[i] = g.schedule == kReverse ? (int)(n - 1 - i) : (int)i;
  if (g.schedule == kRandom)
    for (size_t i = n - 1; i > 0; --i) std::swap(w->order[i], w->order[xorshift(w->rng) % (i + 1)]);
  n = nf;
  prof_block_start(w, w->nthreads);

  while (w->live > 0) {
    if (g.abort.load(std::memory_order_relaxed)) return;
    if (std::chrono::steady_clock::now() > g.deadline) {
      record(kTimeout, "kernel ran past the time limit (" + std::to_string(g.timeout_s) + " s) in block " +
                           fmt3(w->bid));
      return;
    }
    if (g.schedule == kRandom && !w->serial) {
      for (size_t i = n - 1; i > 0; --i) std::swap(w->order[i], w->order[xorshift(w->rng) % (i + 1)]);
    }
    w->pos = 0;
    w->pass_len = n;
    w->ran = 0;
    if (Fiber* f = next_runnable(w)) {
      w->in_fiber = 1;
      sc_switch_ctx(&w->sched_sp, f->sp);
      w->in_fiber = 0;
      if (w->fault_kind) {
        report_fault(w);
        return;
      }
    }
    if (g.abort.load(std::memory_order_relaxed)) return;
    if (w->pending_active && settle_activemasks(w)) continue;
    if (!w->ran && w->live > 0) {
      record(kDeadlock, describe_deadlock(w));
      return;
    }
  }
  prof_block_end(w);
}

[[noreturn]] void serial_violation(Fiber* f, const char* what) {
  fail_in_fiber(f, kUnsupported, std::string("unsupported: ") + what +
                                     " reached in a program the rewriter found free of barriers");
}

int syncthreads(int line, int pred, int op) {
  Fiber* f = cur();
  Worker* w = worker_of(f);
  if (w->serial) serial_violation(f, "__syncthreads");
  f->wait_line = line;
  f->state = kAtBarrier;
  w->bar_count += pred;
  if (line) {  // line 0: a cooperative-groups sync(), which names no source line
    if (!w->bar_line) w->bar_line = line;
    else if (line != w->bar_line) w->bar_other = line;
  }
  ++w->arrived;
  if (w->arrived == w->live) {
    release_barrier(w, f);
  } else {
    switch_out(f);
  }
  int count = (int)(f->result & 0xffffffffu);
  int total = (int)(f->result >> 32);
  switch (op) {
    case 1: return count;
    case 2: return count == total;
    case 3: return count > 0;
    default: return 0;
  }
}


int new_site() { return g_sites.fetch_add(1); }

void* shared_slot(int site, size_t size, size_t align) {
  Fiber* f = cur();
  Worker* w = worker_of(f);
  if (site < 0 || site >= kMaxSites) fail_in_fiber(f, kUnsupported, "unsupported: too many __shared__ declarations");
  long off = w->site_off[site];
  if (off < 0) {
    if (align < 16) align = 16;
    size_t start = (w->static_used + align - 1) & ~(align - 1);
    if (start + size > kMaxStaticShared)
      fail_in_fiber(f, kCrash, "static __shared__ memory exceeds 48 KiB per block (" +
                                   std::to_string(start + size) + " bytes)");
    w->site_off[site] = off = (long)start;
    w->static_used = start + size;
    if (w->static_used > w->static_hw) {
      fill_pattern(w->smem + w->dyn_bytes + w->static_hw, w->static_used - w->static_hw, G().pattern);
      w->static_hw = w->static_used;
    }
  }
  return w->smem + w->dyn_bytes + off;
}

void* dynamic_shared() { return worker_of(cur())->smem; }

void device_trap(const char* what, const char* file, int line) {
  Worker* w = tls_worker;
  std::string msg = std::string("device assertion failed: ") + what + " at " + file + ":" + std::to_string(line);
  if (w && w->in_fiber) {
    Fiber* f = cur();
    fail_in_fiber(f, kCrash, msg + " in " + where(f));
  }
  fprintf(stderr, "%s (host code)\n", msg.c_str());
  abort();
}

}  // namespace sc

extern "C" __attribute__((visibility("hidden"))) void sc_fiber_entry() {
  sc::Fiber* f = sc::cur();
  sc::Worker* w = sc::worker_of(f);
  sc::ThreadFn fn = sc::G().fn;
  void* ctx = sc::G().ctx;
  if (w->serial) {
    dim3 bd = w->bdim;
    for (size_t k = 0; k < w->nthreads; ++k) {
      unsigned li = (unsigned)w->order[k];
      f->tid = uint3{li % bd.x, (li / bd.x) % bd.y, li / (bd.x * bd.y)};
      f->linear = li;
      f->fenced = 0;
      fn(ctx);
    }
    f->linear = 0;
    w->warps[0].exist = 1;  // the one runner fiber exits
  } else {
    fn(ctx);
  }
  sc::on_exit(f);
  sc::yield_dead(f);
}
