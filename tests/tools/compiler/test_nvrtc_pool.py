"""The warm, jailed NVRTC workers: same results as the one-shot child, time limits, deaths,
threads, forks, recycling and the jail's file view."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from structcover.tools.compiler import nvrtc_pool, toolchain
from structcover.tools.compiler.jailed import compile_nvrtc_jailed, compile_nvrtc_one_shot
from structcover.tools.compiler.nvrtc import nvrtc_options
from structcover.tools.compiler.raw import RawCompile
from structcover.tools.verify import jail

from .conftest import needs_nvrtc

pytestmark = [needs_nvrtc, pytest.mark.skipif(not jail.jail_status()[0],
                                               reason=f"no jail here: {jail.jail_status()[1]}")]

SIMPLE = "__global__ void k(float* x) { x[threadIdx.x] *= 2.f; }\n"
TEMPLATE = ("template <int N> __global__ void scale(float* x) { x[threadIdx.x] *= N; }\n"
            "template __global__ void scale<3>(float*);\n")
COOPERATIVE = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
               "__global__ void red(float* x) {\n  auto b = cg::this_thread_block();\n"
               "  __shared__ float s[128];\n  s[b.thread_rank()] = x[b.thread_rank()];\n"
               "  b.sync();\n  x[b.thread_rank()] = s[127 - b.thread_rank()];\n}\n")
BROKEN = "__global__ void k(float* x) {\n  x[0] = undefined_thing * 2.0f;\n}\n"
WARNING = "__global__ void k(float* x) {\n  int unused = 3;\n  x[0] = 1.f;\n}\n"
EXPLOSIVE = """template <int N> __device__ __forceinline__ float blow(float x) {
  return blow<N - 1>(x * 1.5f) + blow<N - 1>(x + 0.5f);
}
template <> __device__ __forceinline__ float blow<0>(float x) { return x; }
__global__ void heavy(float* out) { out[threadIdx.x] = blow<40>(out[threadIdx.x]); }
"""


@pytest.fixture(autouse=True)
def fresh_pool():
    """Each test starts without workers and leaves none behind."""
    nvrtc_pool.shutdown()
    yield
    nvrtc_pool.shutdown()


def _compile(source: str, *, one_shot: bool = False, timeout_s: float = 60.0,
             exprs: tuple[str, ...] = ()) -> RawCompile:
    dirs = toolchain.cuda_include_dirs()
    fn = compile_nvrtc_one_shot if one_shot else compile_nvrtc_jailed
    return fn(source, "program.cu", nvrtc_options("sm_80", dirs), dirs, list(exprs), timeout_s)


def _same(a: RawCompile, b: RawCompile) -> bool:
    """Equal results up to ptxas's own timing line ("Compile time = 1.9 ms")."""
    def norm(r: RawCompile) -> RawCompile:
        return dataclasses.replace(r, log=re.sub(r"Compile time = [\d.]+ ms", "", r.log))
    return norm(a) == norm(b)


def _workers() -> list:
    pool = nvrtc_pool._POOL
    return pool.workers() if pool is not None else []


def _pids() -> set[int]:
    return {w.proc.pid for w in _workers()}


@pytest.mark.parametrize(("source", "exprs"), [
    pytest.param(SIMPLE, (), id="simple"), pytest.param(TEMPLATE, ("scale<3>",), id="template"),
    pytest.param(COOPERATIVE, (), id="cooperative-groups", marks=pytest.mark.slow),
    pytest.param(BROKEN, (), id="broken"), pytest.param(WARNING, (), id="warning"),
])
def test_worker_gives_the_one_shot_result(source: str, exprs: tuple[str, ...]) -> None:
    warm = _compile(source, exprs=exprs)
    assert _workers(), "the compile did not go through a worker"
    cold = _compile(source, one_shot=True, exprs=exprs)
    assert _same(warm, cold)
    assert warm.ok == (source is not BROKEN)
    if source is BROKEN:
        assert "undefined_thing" in warm.log
    else:
        assert warm.cubin[:4] == b"\x7fELF" and ".entry" in warm.ptx


def test_one_worker_serves_many_jobs() -> None:
    first = _compile(SIMPLE)
    pids = _pids()
    again = [_compile(SIMPLE + f"// {i}\n") for i in range(3)]
    assert first.ok and all(r.ok for r in again)
    assert _pids() == pids and len(pids) == 1


@pytest.mark.slow
def test_a_job_past_its_time_limit_kills_the_worker_and_the_next_job_gets_a_fresh_one() -> None:
    assert _compile(SIMPLE).ok
    (old,) = _workers()
    start = time.monotonic()
    slow = _compile(EXPLOSIVE, timeout_s=1.5)
    assert time.monotonic() - start < 8
    assert slow == RawCompile(ok=False, log="compile timed out after 1.5 s", timed_out=True)
    assert old.proc.poll() is not None and not _workers()  # killed, not kept
    after = _compile(SIMPLE)
    assert after.ok and _pids() and old.proc.pid not in _pids()


def test_a_worker_killed_while_idle_is_replaced() -> None:
    assert _compile(SIMPLE).ok
    (old,) = _workers()
    jail.kill_session(old.proc.pid)
    old.proc.wait(5)
    again = _compile(TEMPLATE, exprs=("scale<3>",))
    assert again.ok, again.log
    assert old.proc.pid not in _pids()


@pytest.mark.slow
def test_a_worker_killed_mid_job_reports_a_dead_process_and_is_replaced() -> None:
    assert _compile(SIMPLE).ok
    (old,) = _workers()
    box: dict[str, RawCompile] = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", _compile(EXPLOSIVE)))
    thread.start()
    time.sleep(1.0)  # the explosive compile takes far longer than this
    jail.kill_session(old.proc.pid)
    thread.join(30)
    assert not thread.is_alive()
    assert box["r"].log.startswith("NVRTC process died (killed by signal 9")
    assert not box["r"].ok and not box["r"].timed_out
    assert _compile(SIMPLE).ok and old.proc.pid not in _pids()


def test_concurrent_compiles_from_four_threads() -> None:
    sources = [SIMPLE + f"// thread {i}\n" for i in range(4)]
    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(_compile, sources))
    assert all(r.ok and r.cubin[:4] == b"\x7fELF" for r in results), [r.log for r in results]
    assert 1 <= len(_workers()) <= nvrtc_pool._POOL.size


def test_a_worker_outlives_the_thread_that_first_used_it() -> None:
    """bwrap --die-with-parent follows the forking thread; workers are forked by the pool's
    own long-lived thread, so a campaign thread that ends takes no worker with it."""
    thread = threading.Thread(target=_compile, args=(SIMPLE,))
    thread.start()
    thread.join()
    pids = _pids()
    time.sleep(0.5)
    assert all(w.alive() for w in _workers())
    assert _compile(SIMPLE + "// later\n").ok and _pids() == pids


def test_host_files_are_not_visible_to_a_worker() -> None:
    res = _compile('#include "/etc/passwd"\n' + SIMPLE)
    assert _workers()
    assert not res.ok
    assert "/etc/passwd" in res.log and "root:" not in res.log


def test_workers_are_recycled_after_their_job_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvrtc_pool, "RECYCLE_JOBS", 2)
    assert _compile(SIMPLE).ok
    first = _pids()
    assert _compile(SIMPLE + "// 2\n").ok  # the second job ends this worker's service
    assert not _workers()
    assert _compile(SIMPLE + "// 3\n").ok and _pids() and not (_pids() & first)


def test_a_worker_is_replaced_before_its_cpu_budget_could_end_a_job(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Budget = one job's (2 x timeout + 5): after start-up CPU the worker no longer fits.
    monkeypatch.setattr(nvrtc_pool, "WORKER_CPU_S", 0)
    assert _compile(SIMPLE).ok
    first = _pids()
    assert _compile(SIMPLE + "// 2\n").ok and not (_pids() & first)


def test_worker_switch_off_uses_the_one_shot_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(nvrtc_pool.ENV_SWITCH, "0")
    assert _compile(SIMPLE).ok
    assert nvrtc_pool._POOL is None


def test_a_worker_that_cannot_start_falls_back_to_the_one_shot_child(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(nvrtc_pool, "SCRIPT", tmp_path / "missing.py")
    res = _compile(TEMPLATE, exprs=("scale<3>",))
    assert res.ok, res.log
    assert _same(res, _compile(TEMPLATE, one_shot=True, exprs=("scale<3>",)))
    assert not _workers()
    assert "can't open file" in caplog.text  # the worker's own stderr names the reason


def test_without_a_jail_the_worker_path_refuses_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    jail.jail_status.cache_clear()
    try:
        monkeypatch.setattr(jail, "bwrap_path", lambda: None)
        monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", False)
        res = _compile(SIMPLE)
    finally:
        monkeypatch.undo()
        jail.jail_status.cache_clear()
    assert not res.ok and not res.timed_out
    assert res.log.startswith("untrusted code refused: bubblewrap (bwrap) is not installed")
    assert not _workers()


def _compile_in_forked_child(out) -> None:  # noqa: ANN001
    res = _compile(SIMPLE + "// child\n")
    out.send((res.ok, sorted(_pids()), nvrtc_pool._POOL.pid))


def test_a_forked_child_builds_its_own_workers() -> None:
    assert _compile(SIMPLE).ok
    parent = _pids()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_compile_in_forked_child, args=(send,))
    child.start()
    ok, child_pids, owner = recv.recv()
    child.join(30)
    assert ok and child_pids and not (set(child_pids) & parent) and owner == child.pid
    assert _pids() == parent and all(w.alive() for w in _workers())
    assert _compile(SIMPLE + "// parent again\n").ok and _pids() == parent
