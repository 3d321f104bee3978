// Host threads of the program: a thread that host code starts is host code, and while a launch
// (or a cudaMemcpy*/cudaMemset*) has device memory mapped it could read or write device buffers
// with no fault to show it. The runtime counts the process's threads when the driver configures
// a run and again whenever device memory is about to open, after each launch and when the
// driver reads the status; more threads than at the start (the runtime's own workers exist only
// inside a launch) is a crash verdict, as host access to device memory is. The link check
// (tools/verify/link_check.py) refuses the usual ways to start a thread before anything runs;
// this catches the rest (a library call that starts one internally, a helper thread).
#include "sc_internal.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <string>

namespace sc {

static int g_base_threads = -1;

// The "Threads:" line of /proc/self/status (open/read only: the runner's seccomp allows
// those), or -1 when it cannot be read (no /proc): then nothing is checked.
static int thread_count() {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* p = strstr(buf, "\nThreads:");
  return p ? atoi(p + 9) : -1;
}

void threads_baseline() { g_base_threads = thread_count(); }

void threads_check(const char* when) {
  if (g_base_threads < 0) return;
  int now = thread_count();
  // A joined worker may still be counted for a moment after pthread_join returns (the kernel
  // releases the task after it wakes the joiner): wait up to 20 ms before calling it foreign.
  for (int i = 0; i < 200 && now > g_base_threads; ++i) {
    struct timespec ts{0, 100 * 1000};
    nanosleep(&ts, nullptr);
    now = thread_count();
  }
  if (now < 0 || now <= g_base_threads) return;
  record(kCrash, "host code started a thread of its own (" + std::to_string(now - g_base_threads) +
                     " more than when the run began, seen " + when +
                     "): a host thread can read or write device buffers unseen while a launch or "
                     "copy has them mapped, so it counts as host access to device memory (on a "
                     "GPU only cudaMemcpy*/cudaMemset* reach it)");
  g_base_threads = now;  // one report per thread
}

}  // namespace sc
