// Strictness checks of the CUDA emulator that need no extra scheduling: plain read-modify-writes
// that race (the rewriter routes `a[i] += v` and `s[j]++` on shared/global memory here), global
// atomics used as inter-block signals without a fence, and the per-run poison pattern.
//
// A plain read-modify-write is three steps on a GPU (load, op, store): two threads doing one on
// the same address with no barrier between them lose updates. Fibers only switch at barriers
// and collectives, so the emulator would run each one whole, like an atomic. Instead of relying
// on a schedule to expose the lost update, every such RMW leaves (block, thread, barrier epoch,
// warp epoch) for its address, and a second RMW on that address conflicts when it comes from
// another block of the same launch, or from another thread of the block between the same two
// barriers (and, within a warp, between the same two warp collectives). That verdict does not
// depend on the schedule.
#include "sc_internal.hpp"

#include <mutex>
#include <string>
#include <unordered_map>

namespace sc {

namespace {

struct RmwEntry {
  unsigned long long launch;
  unsigned block, thread, epoch, warp_epoch;
  int line;
};

constexpr int kShards = 64;
struct Shard {
  std::mutex mu;
  std::unordered_map<uintptr_t, RmwEntry> map;
};
Shard g_shards[kShards];

}  // namespace

void race_reset_launch() {
  for (auto& s : g_shards) {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.map.empty()) s.map.clear();
  }
}

void rmw_note(const volatile void* p, int line) {
  Worker* w = tls_worker;
  if (!w || !w->in_fiber) return;  // host code (a __host__ __device__ function called on the host)
  Fiber* f = cur();
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  // A thread's own stack (locals, local arrays) is never shared.
  uintptr_t st = reinterpret_cast<uintptr_t>(w->stacks);
  if (a >= st && a < st + w->stack_cap * kStackSize) return;
  uintptr_t sm = reinterpret_cast<uintptr_t>(w->smem);
  bool shared = a >= sm && a < sm + w->arena_store.size();
  Global& g = G();
  unsigned long long launch = g.launch_id;
  unsigned block = w->bid.x + g.grid.x * (w->bid.y + g.grid.y * w->bid.z);
  unsigned thread = f->linear, warp = f->linear / 32;
  unsigned wep = w->warps.empty() ? 0 : w->warps[warp].epoch;
  Shard& s = g_shards[(a >> 2) % kShards];
  RmwEntry prev{};
  bool conflict = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    RmwEntry& e = s.map[a];
    // A block's shared arena is reused by the next block on this worker: not a conflict.
    bool live = e.launch == launch + 1 && !(shared && e.block != block);
    if (live && e.block != block) conflict = true;
    else if (live && e.thread != thread && e.epoch == w->epoch &&
             (e.thread / 32 != warp || e.warp_epoch == wep))
      conflict = true;
    if (conflict) prev = e;
    e = RmwEntry{launch + 1, block, thread, w->epoch, wep, line};
  }
  if (!conflict) return;
  std::string lines = prev.line == line ? "line " + std::to_string(line)
                                         : "lines " + std::to_string(prev.line) + " and " + std::to_string(line);
  std::string msg;
  if (prev.block != block) {
    msg = "data race: blocks " + std::to_string(prev.block) + " and " + std::to_string(block) +
          " both do a plain read-modify-write of the same global address (" + lines +
          ") in one launch; use an atomic";
  } else {
    msg = "data race: threads " + std::to_string(prev.thread) + " and " + std::to_string(thread) +
          " of block " + fmt3(w->bid) + " do a plain read-modify-write of the same " +
          (shared ? "shared" : "global") + " address (" + lines +
          ") with no barrier between them; use an atomic or __syncthreads()";
  }
  fail_in_fiber(f, kRace, msg);
}

void threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  Worker* w = tls_worker;
  if (w && w->in_fiber) cur()->fenced = G().launch_id;
}

void unfenced_signal(int line, const volatile void* addr) {
  Worker* w = tls_worker;
  if (!w || !w->in_fiber) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  uintptr_t sm = reinterpret_cast<uintptr_t>(w->smem);
  if (a && a >= sm && a < sm + w->arena_store.size()) return;  // block-local: barriers order it
  Global& g = G();
  Fiber* f = cur();
  if (f->fenced == g.launch_id) return;
  if ((unsigned long long)g.grid.x * g.grid.y * g.grid.z < 2) return;
  fail_in_fiber(f, kUnsupported,
                "unsupported: line " + std::to_string(line) +
                    ": a thread acts on the result of a global atomic (a signal between blocks, "
                    "e.g. a last-block reduction) without a __threadfence() before it; CUDA does "
                    "not order the block's earlier global stores before the atomic, and the CPU's "
                    "stronger ordering would hide that, so the emulator cannot check it");
}

uint32_t poison_word() { return G().pattern; }

// The poison word for this run's fresh memory: large finite values (they survive fmaxf or
// fminf, unlike NaN, which both drop) or NaN, differing by schedule and seed, never zero.
uint32_t pattern_for(int schedule, unsigned long long seed) {
  unsigned long long s = seed * 0x9E3779B97F4A7C15ull + (unsigned long long)schedule + 1;
  uint32_t mant = (uint32_t)(xorshift(s) & 0x7FFFFFu) | 0x400000u;
  switch (schedule) {
    case kForward: return 0x7E800000u | mant;   // about +1e38: fmaxf keeps it
    case kReverse: return 0xFE800000u | mant;   // about -1e38: fminf keeps it
    default: {
      switch (xorshift(s) % 3) {
        case 0: return 0x7E800000u | mant;
        case 1: return 0xFE800000u | mant;
        default: return 0x7FC00000u | mant;     // a NaN
      }
    }
  }
}

}  // namespace sc
