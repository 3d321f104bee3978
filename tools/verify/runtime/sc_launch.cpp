// Launching a grid: worker threads, block dispatch in schedule order, the watchdog that stops
// kernels past the deadline, and the fault handler that turns a kernel's SIGSEGV into a verdict.
#include "sc_internal.hpp"

#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>

#include <algorithm>
#include <condition_variable>
#include <thread>

namespace sc {

// The handlers that were installed before ours (Python's faulthandler, for one).
static struct sigaction g_old_segv, g_old_bus, g_old_usr2, g_old_trap;

// Async-signal-safe: it only reads the worker and the allocation table, stores plain fields,
// calls mprotect/sigaction, and switches stacks; the scheduler (report_fault) and the host API
// (flush_host_fault) turn what it stored into a verdict.
void on_signal(int sig, siginfo_t* si, void* ucv) {
  Worker* w = tls_worker;
  ucontext_t* uc = static_cast<ucontext_t*>(ucv);
#if defined(__x86_64__)
  uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#else
  uintptr_t sp = (uintptr_t)uc->uc_mcontext.sp;
#endif
  bool on_fiber = w && w->in_fiber && w->stacks && sp >= (uintptr_t)w->stacks &&
                  sp < (uintptr_t)w->stacks + w->stack_cap * kStackSize;
  uintptr_t addr = (uintptr_t)si->si_addr;
#if defined(__x86_64__)
  if (sig == SIGTRAP) {  // the single step over a trap page is done: close the page again
    if (!w || !w->step_page[0]) {
      sigaction(SIGTRAP, &g_old_trap, nullptr);
      raise(SIGTRAP);
      return;
    }
    for (char*& page : w->step_page)
      if (page) mprotect(page, kGuard, PROT_NONE), page = nullptr;
    uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
    return;
  }
#endif
  if (sig == SIGUSR2) {
    if (!on_fiber || !G().abort.load()) return;
    w->fault_kind = 3;
  } else if (!on_fiber) {
    Global& g = G();
    Alloc* a = sig == SIGSEGV && !g.device_open ? dev_find_unlocked(addr) : nullptr;
    uintptr_t body = a ? reinterpret_cast<uintptr_t>(a->map) + kDevGuard : 0;
    if (a && a->kind == kDeviceMem && !a->open && addr >= body && addr < body + a->body) {
      // Host code touched a device buffer: note it and open the buffer so the run finishes.
      uintptr_t none = 0;
      g.host_fault.compare_exchange_strong(none, addr);
      mprotect(a->map + kDevGuard, a->body, PROT_READ | PROT_WRITE);
      a->open = true;
      return;
    }
    // Not ours: reinstate the previous handler; the fault recurs and reaches it.
    sigaction(sig, sig == SIGSEGV ? &g_old_segv : &g_old_bus, nullptr);
    return;
  } else {
    Fiber* f = *reinterpret_cast<Fiber**>(fiber_slot((sp | (kStackSize - 1)) + 1));
    size_t off = (addr - (uintptr_t)w->stacks) % kStackSize;
    bool guard = addr >= (uintptr_t)w->stacks && addr < (uintptr_t)w->stacks + w->stack_cap * kStackSize &&
                 off < kGuard;
#if defined(__x86_64__)
    if (sig == SIGSEGV && !guard && dev_trap_access(w, addr)) {
      uc->uc_mcontext.gregs[REG_EFL] |= 0x100;  // trap flag: back here after one instruction
      return;
    }
#endif
    w->fault_addr = addr;
    w->fault_fiber = f;
    w->fault_kind = guard ? 1 : 2;
  }
  sc_switch_ctx(&w->dead_sp, w->sched_sp);  // abandon the fiber: back to the scheduler
}

// Installs on_signal unless it is already the handler (another program library loaded in the
// same process may have put its own copy in front since).
void install_fault_handler() {
  struct sigaction cur{};
  sigaction(SIGSEGV, nullptr, &cur);
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal) return;
  struct sigaction sa{};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_old_segv);
  sigaction(SIGBUS, &sa, &g_old_bus);
  sigaction(SIGUSR2, &sa, &g_old_usr2);
  sigaction(SIGTRAP, &sa, &g_old_trap);
}

// Puts back the handlers that were there before ours, when ours is the one installed. Two
// program libraries in one process each carry this runtime; if each chained to the other
// (A installed over B, then B over A), a fault neither owns would bounce between them forever
// and a watchdog signal would reach the wrong library. The host releases after every run, so
// at most one runtime's handler is ever installed and it chains to the process's own.
void release_fault_handler() {
  struct sigaction cur{};
  sigaction(SIGSEGV, nullptr, &cur);
  if (!((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)) return;
  sigaction(SIGSEGV, &g_old_segv, nullptr);
  sigaction(SIGBUS, &g_old_bus, nullptr);
  sigaction(SIGUSR2, &g_old_usr2, nullptr);
  sigaction(SIGTRAP, &g_old_trap, nullptr);
}

// Worker threads for a launch: the requested count (0 = one per core), at most one per block,
// and no more than the address-space budget allows: each worker maps (threads + 1) stacks of
// kStackSize, so 32 workers of 1024-thread blocks would need 4 GiB. The budget is half of
// RLIMIT_AS when one is set, else 16 GiB.
int worker_count(int requested, size_t blocks, size_t fibers) {
  size_t nw = requested > 0 ? (size_t)requested : std::max(1u, std::thread::hardware_concurrency());
  nw = std::min(nw, blocks);
  struct rlimit rl{};
  size_t budget = (size_t)16 << 30;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) budget = (size_t)rl.rlim_cur / 2;
  size_t per = (fibers + 1) * kStackSize;
  size_t fit = std::max<size_t>(1, budget / per);
  return (int)std::max<size_t>(1, std::min(nw, fit));
}

void worker_main(Worker* w) {
  Global& g = G();
  tls_worker = w;
  stack_t ss{};
  if (!w->altstack) w->altstack = static_cast<char*>(malloc(64 * 1024));
  ss.ss_sp = w->altstack;
  ss.ss_size = 64 * 1024;
  sigaltstack(&ss, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, SIGSEGV);
  sigaddset(&set, SIGBUS);
  sigaddset(&set, SIGTRAP);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  struct timespec c0, c1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  for (;;) {
    if (g.abort.load()) break;
    size_t k = g.next.fetch_add(1);
    if (k >= g.block_order.size()) break;
    run_block(w, g.block_order[k]);
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  {
    std::lock_guard<std::mutex> lock(g.mu);
    g.kernel_cpu_seconds += (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
  }
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, nullptr);
}

int check_config(dim3 grid, dim3 block, size_t smem) {
  unsigned long long n = (unsigned long long)block.x * block.y * block.z;
  if (!grid.x || !grid.y || !grid.z || !n || n > 1024 || block.z > 64 || grid.y > 65535 ||
      grid.z > 65535 || smem > kMaxDynShared)
    return cudaErrorInvalidConfiguration;
  return cudaSuccess;
}

void side_stream_launch(const void* stream) {
  char where[32];
  snprintf(where, sizeof where, "%p", stream);
  record(kCrash, std::string("no_timing_tampering: a kernel was launched on stream ") + where +
                     ", not the caller's (a stream the program made or took from a pool): work "
                     "off the caller's stream is what the caller's timer does not see");
}

int launch_impl(dim3 grid, dim3 block, size_t smem, ThreadFn fn, void* ctx, bool serial) {
  Global& g = G();
  if (tls_worker && tls_worker->in_fiber) {
    record(kUnsupported, "unsupported: kernel launch inside device code (dynamic parallelism)");
    return cudaErrorNotSupported;
  }
  flush_host_fault();
  if (g.bad_arg >= 0) {
    record(kCrash, "kernel argument #" + std::to_string(g.bad_arg) +
                       " points to host memory (not from cudaMalloc*): a GPU kernel cannot read it");
    g.bad_arg = -1;
    g.sticky = g.last_err = cudaErrorIllegalAddress;
  }
  if (g.sticky) { g.last_err = g.sticky; return g.sticky; }
  // Fault injection: the launch is refused as a GPU refuses one it has no resources for.
  // Not sticky, like the real error, so the program's own error path runs as it would.
  if (g.schedule == kFailLaunch) return g.last_err = cudaErrorLaunchOutOfResources;
  int err = check_config(grid, block, smem);
  if (err) { g.last_err = err; return err; }
  auto t0 = std::chrono::steady_clock::now();
  g.grid = grid; g.block = block; g.dyn = smem; g.fn = fn; g.ctx = ctx; g.serial = serial;
  size_t nb = (size_t)grid.x * grid.y * grid.z;
  g.block_order.resize(nb);
  for (size_t i = 0; i < nb; ++i) g.block_order[i] = g.schedule == kReverse ? (unsigned)(nb - 1 - i) : (unsigned)i;
  if (g.schedule == kRandom) {
    unsigned long long s = g.seed * 0x2545F4914F6CDD1Dull + (unsigned long long)g.launches + 1;
    for (size_t i = nb - 1; i > 0; --i) std::swap(g.block_order[i], g.block_order[xorshift(s) % (i + 1)]);
  }
  g.next.store(0);
  int nw = worker_count(g.nworkers, nb, serial ? 1 : (size_t)block.x * block.y * block.z);
  while ((int)g.workers.size() < nw) g.workers.push_back(new Worker());
  for (int i = 0; i < nw; ++i) g.workers[i]->static_hw = 0;
  // Idle workers give their stacks back, so the budget above holds across launches.
  for (size_t i = (size_t)nw; i < g.workers.size(); ++i) unmap_stacks(g.workers[i]);
  install_fault_handler();
  ++g.launch_id;
  race_reset_launch();
  prof_launch_start();
  threads_check("at the start of a launch");
  dev_set_open(true);
  dev_arm_traps(true);

  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < nw; ++i) {
    Worker* w = g.workers[i];
    threads.emplace_back([w, &mu, &cv, &done] {
      worker_main(w);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      cv.notify_all();
    });
    g.workers[i]->thread = threads.back().native_handle();
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_until(lock, g.deadline, [&] { return done == nw; })) {
      record(kTimeout, "kernel ran past the time limit (" + std::to_string(g.timeout_s) +
                           " s): an infinite loop or a spin-wait no other block can release");
      // Preempt fibers stuck in loops without barriers until every worker is back.
      while (!cv.wait_for(lock, std::chrono::milliseconds(10), [&] { return done == nw; })) {
        for (int i = 0; i < nw; ++i) pthread_kill(g.workers[i]->thread, SIGUSR2);
      }
    }
  }
  for (auto& t : threads) t.join();
  threads_check("at the end of a launch");
  prof_launch_end(nw);
  dev_arm_traps(false);
  std::string overrun = dev_check_slack();
  dev_set_open(false);
  if (!overrun.empty()) record(kCrash, overrun + " (during a launch of grid " + fmt3(grid) + ")");
  fflush(stdout);
  ++g.launches;
  g.kernel_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g.status != kOk) {
    int code = g.status == kTimeout ? cudaErrorLaunchTimeout
             : g.status == kUnsupported ? cudaErrorNotSupported : cudaErrorLaunchFailure;
    if (g.detail.find("assert") != std::string::npos) code = cudaErrorAssert;
    g.sticky = code;
    g.last_err = code;
    return code;
  }
  return cudaSuccess;
}

}  // namespace sc
