"""The seccomp filters of the jail, built with ``pyseccomp`` (over the system's libseccomp).

Two filters, both exported as raw BPF:

* :func:`deny_filter_bytes` — given to bubblewrap (``--seccomp FD``) for every jailed process,
  compilers included: refuses what no compiler or emulated kernel needs and what could reach
  past the namespaces (ptrace, ``process_vm_*``, sockets, mounts, new namespaces, BPF,
  keyrings, io_uring, kernel modules...). Everything else is allowed, since compilers fork and
  exec their own stages.
* :func:`runner_filter_bytes` — installed by the runner itself (``sc_runner``) after it read its
  job and before the program's library loads, so the program's constructors already run under
  it: an allow-list of what the emulator was measured to need (``strace -f`` over the sample
  corpus, docs/SANDBOX.md). No ``execve``, no new processes (``clone`` only with
  ``CLONE_THREAD``), files opened read-only, no sockets at all. Anything else raises SIGSYS,
  which the runner reports as "forbidden system call N".
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

#: Refused for every jailed process (EPERM): ways past the namespaces and into other processes.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "pidfd_open",
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
    "fspick", "mount_setattr", "unshare", "setns", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "syslog", "open_by_handle_at", "name_to_handle_at",
    "quotactl", "fanotify_init", "lookup_dcookie", "personality", "uselib", "vhangup",
    "iopl", "ioperm", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
)

#: Allowed in the runner after start-up (everything else: SIGSYS). Measured with ``strace -f``
#: from the program's dlopen on, over two programs of every corpus family: brk, clock_gettime,
#: clone3, close, exit, exit_group, futex, madvise, mmap, mprotect, munmap, newfstatat, openat,
#: prlimit64, read, rseq, rt_sigaction, rt_sigprocmask, set_robust_list, sigaltstack, write.
#: Added for paths the corpus does not take: the watchdog's preemption signal (getpid, gettid,
#: tgkill), thread creation through clone (clone3 is refused below), printf (fstat, lseek,
#: ioctl TCGETS), waits and spins (nanosleep, sched_yield), std::thread::hardware_concurrency
#: (sched_getaffinity), std::random_device (getrandom), realloc (mremap), rt_sigreturn.
RUNNER_ALLOWED = (
    "read", "write", "readv", "writev", "close", "fstat", "newfstatat", "lseek",
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
    "futex", "set_robust_list", "rseq", "set_tid_address", "gettid", "getpid", "tgkill",
    "exit", "exit_group", "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
    "gettimeofday", "sched_yield", "sched_getaffinity", "getrandom", "getrusage", "prlimit64",
)

_CLONE_THREAD = 0x00010000
_O_WRITE_OR_CREATE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_TCGETS = 0x5401


def _export(flt: object) -> bytes:
    with tempfile.TemporaryFile() as handle:
        flt.export_bpf(handle)  # type: ignore[attr-defined]
        handle.seek(0)
        return handle.read()


@functools.lru_cache(maxsize=1)
def deny_filter_bytes() -> bytes:
    """The deny-list filter for bwrap's ``--seccomp`` (raw BPF for this machine's arch)."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, ValueError):
            continue  # not a syscall on this architecture
    # clone(CLONE_NEWUSER | ...) would give a process a fresh user namespace of its own.
    flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, 0x10000000, 0x10000000))
    return _export(flt)


@functools.lru_cache(maxsize=1)
def runner_filter_bytes() -> bytes:
    """The runner's allow-list filter (raw BPF), installed before the program loads."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.TRAP)
    for name in RUNNER_ALLOWED:
        try:
            flt.add_rule(sc.ALLOW, name)
        except (OSError, ValueError):
            continue
    # Threads only: clone without CLONE_THREAD would be fork. clone3 hides its flags in memory
    # the filter cannot read, so it fails with ENOSYS and glibc falls back to clone.
    flt.add_rule(sc.ALLOW, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD, _CLONE_THREAD))
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # Files: read-only opens only (the jail's file system is read-only anyway).
    flt.add_rule(sc.ALLOW, "openat", sc.Arg(2, sc.MASKED_EQ, _O_WRITE_OR_CREATE, 0))
    flt.add_rule(sc.ALLOW, "open", sc.Arg(1, sc.MASKED_EQ, _O_WRITE_OR_CREATE, 0))
    # isatty() on stdout: answer "not a terminal" instead of killing printf's first call.
    flt.add_rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.EQ, _TCGETS))
    flt.add_rule(sc.ERRNO(errno.ENOTTY), "ioctl", sc.Arg(1, sc.NE, _TCGETS))
    # A program that tries the network or new processes gets a clean error, not SIGSYS,
    # so the verdict is about its outputs; the jail has no network and no exec anyway.
    for name in ("socket", "socketpair"):
        flt.add_rule(sc.ERRNO(errno.EPERM), name)
    return _export(flt)


#: Refused to the KernelBench zygote's forks (``tools/kernelbench/zygote_server.py``): IPC
#: objects outlive the process that made them, in an IPC namespace the forks share.
IPC_DENIED = ("shmget", "msgget", "semget", "mq_open", "mq_unlink", "mq_timedsend",
              "mq_timedreceive", "mq_notify", "mq_getsetattr")


@functools.lru_cache(maxsize=1)
def ipc_filter_bytes() -> bytes:
    """A filter refusing System V IPC and POSIX message queues (raw BPF), stacked on the jail's
    by the zygote before its first fork."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    for name in IPC_DENIED:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, ValueError):
            continue
    return _export(flt)
