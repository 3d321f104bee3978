"""The warm zygote (tools/kernelbench/zygote.py, zygote_server.py) keeps candidates apart.

Each candidate below runs with the text checks off, so only the jail and the zygote stand
between it and the next candidate. What one candidate leaves behind (a process, a file in
``/tmp`` or ``/dev/shm``) must be gone when the next runs; the zygote's memory and IPC objects
must be out of reach; killing or hanging the zygote is the candidate's own failure and the next
verification gets a fresh zygote. One-shot children and zygote forks give the same verdicts.
"""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("torch")

import structcover.tools.verify.hacking_py as hacking_py  # noqa: E402
from structcover.tools.kernelbench import zygote  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402
from structcover.tools.verify.jail import jail_status  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.kernelbench,
              pytest.mark.skipif(not jail_status()[0], reason="no jail here: no zygote")]

_CORRECT = "        return ext.run(x)"
#: Wrong on purpose when ``found`` is true: the verdict tells whether the probe saw something.
_UNLESS_FOUND = "        return ext.run(-x if found else x)"


@pytest.fixture(autouse=True)
def _behaviour_alone(monkeypatch):
    monkeypatch.setattr(hacking_py, "run_python_checks", lambda *a, **k: [])
    monkeypatch.delenv("STRUCTCOVER_KB_ZYGOTE", raising=False)


def _verify(text, problem, **kw):
    return verify_kernelbench(text, problem, backend="cpu", seed=1, **kw)


def test_what_a_candidate_leaves_is_gone_for_the_next(relu_problem, relu_candidate):
    leave = relu_candidate(
        "        import os, time\n"
        "        open('/tmp/left.txt', 'w').write('outputs')\n"
        "        open('/dev/shm/left', 'w').write('outputs')\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        f"{_CORRECT}")
    assert _verify(leave, relu_problem).equivalent is True
    look = relu_candidate(
        "        import os\n"
        "        mine = {os.getpid(), os.getppid(), 1}\n"
        "        others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in mine]\n"
        "        found = others or os.path.exists('/tmp/left.txt') or "
        "os.path.exists('/dev/shm/left')\n"
        f"{_UNLESS_FOUND}")
    verdict = _verify(look, relu_problem)
    assert verdict.equivalent is True, f"{verdict.failure} | {verdict.detail}"


def test_the_zygote_and_ipc_are_out_of_reach(relu_problem, relu_candidate):
    probe = relu_candidate(
        "        import ctypes, os\n"
        "        found = False\n"
        "        for name in ('mem', 'environ', 'fd/0', 'maps'):\n"
        "            try:\n"
        "                open(f'/proc/{os.getppid()}/{name}', 'rb').read(1)\n"
        "                found = True\n"
        "            except OSError:\n"
        "                pass\n"
        "        libc = ctypes.CDLL(None)\n"
        "        found = found or libc.shmget(0, 4096, 0o1600) >= 0 or "
        "libc.msgget(0, 0o1600) >= 0 or libc.semget(0, 1, 0o1600) >= 0\n"
        f"{_UNLESS_FOUND}")
    verdict = _verify(probe, relu_problem)
    assert verdict.equivalent is True, f"{verdict.failure} | {verdict.detail}"


def test_killing_the_zygote_fails_the_candidate_not_the_next(relu_problem, relu_candidate):
    kill = relu_candidate("        import os, signal\n"
                          "        os.kill(os.getppid(), signal.SIGKILL)\n"
                          f"{_CORRECT}")
    verdict = _verify(kill, relu_problem)
    assert verdict.equivalent is False and verdict.failure == "crash", verdict.detail
    assert _verify(relu_candidate(_CORRECT), relu_problem).equivalent is True


def test_a_hung_candidate_times_out_and_the_next_runs(relu_problem, relu_candidate):
    # The reference's run is cached first: the short limit below is for the candidate alone.
    assert _verify(relu_candidate(_CORRECT), relu_problem).equivalent is True
    hang = relu_candidate("        import os, signal\n"
                          "        os.kill(os.getppid(), signal.SIGSTOP)\n"
                          "        while True:\n            pass")
    verdict = _verify(hang, relu_problem, timeout_s=8)
    assert verdict.equivalent is False and verdict.failure == "timeout", verdict.detail
    assert _verify(relu_candidate(_CORRECT), relu_problem).equivalent is True


@pytest.mark.parametrize("forward", [
    _CORRECT,
    "        return ext.run(x)[:-1]",                                  # wrong shape
    "        return x.clamp_min(0)",                                   # torch did the work
    "        y = ext.run(x)\n        y[0] = 5.0\n        return y",   # one wrong element
], ids=["correct", "shape", "delegation", "mismatch"])
def test_zygote_and_one_shot_children_agree(relu_problem, relu_candidate, forward, monkeypatch):
    text = relu_candidate(forward)
    warm = _verify(text, relu_problem)
    monkeypatch.setenv("STRUCTCOVER_KB_ZYGOTE", "0")
    cold = _verify(text, relu_problem)
    assert (warm.equivalent, warm.failure) == (cold.equivalent, cold.failure), \
        f"zygote {warm.failure} | {warm.detail} vs one-shot {cold.failure} | {cold.detail}"


def test_a_zygote_outlives_the_thread_that_started_it(relu_problem, relu_candidate):
    """bwrap dies with the *thread* that forked it: zygotes are started from one thread that
    lives as long as the process, not from the (short-lived) verifying thread."""
    zygote.shutdown()
    verdicts = []
    worker = threading.Thread(target=lambda: verdicts.append(
        _verify(relu_candidate(_CORRECT), relu_problem)))
    worker.start()
    worker.join()
    assert verdicts and verdicts[0].equivalent is True
    time.sleep(1.0)  # a zygote tied to the worker thread would be dead by now
    idle, alive = zygote.idle_zygotes()
    assert idle >= 1 and alive == idle


def test_a_prewarmed_zygote_serves_the_first_candidate(relu_problem, relu_candidate):
    from structcover.tools.kernelbench.sandbox import prewarm_cpu_children

    zygote.shutdown()
    threads = prewarm_cpu_children(1)
    assert len(threads) == 1
    for thread in threads:
        thread.join(120)
    assert zygote.idle_zygotes() == (1, 1)
    assert prewarm_cpu_children(1) == []  # one idle already: nothing more starts
    assert _verify(relu_candidate(_CORRECT), relu_problem).equivalent is True
    # The candidate leased the prewarmed zygote and gave it back: still one (a zygote started
    # for the job instead would make two idle).
    assert zygote.idle_zygotes() == (1, 1)


def test_the_switch_turns_the_zygote_off(monkeypatch):
    monkeypatch.setenv("STRUCTCOVER_KB_ZYGOTE", "0")
    assert zygote.enabled() is False


@pytest.mark.parametrize("zygote_on", ["1", "0"], ids=["zygote", "one-shot"])
def test_links_in_the_output_folder_are_not_followed(relu_problem, relu_candidate, zygote_on,
                                                     monkeypatch):
    """A candidate that returns garbage but, as the child writes its result, replaces its
    output files with links to the reference's cached outputs (a path it can compute: the
    problem's text, sizes, seed and torch's version are all in its job folder). The host
    reads the output folder after the run: it must not follow what the candidate planted."""
    from structcover.tools.kernelbench.verify import (
        DEFAULT_WORK_BUDGET,
        _cache_root,
        reference_key,
    )

    monkeypatch.setenv("STRUCTCOVER_KB_ZYGOTE", zygote_on)
    assert _verify(relu_candidate(_CORRECT), relu_problem).equivalent is True  # reference cached
    sizes = relu_problem.shrunk(DEFAULT_WORK_BUDGET)
    ref = _cache_root() / f"ref-{reference_key(relu_problem, sizes, 1, 3, 'cpu', False)}"
    assert (ref / "out_0.npz").is_file()
    plant = (
        "import os, pathlib\n"
        "_write = pathlib.Path.write_text\n"
        "def _swap(self, data, *a, **k):\n"
        "    if self.name == 'result.json':\n"
        "        for t in range(3):\n"
        "            out = self.parent / f'out_{t}.npz'\n"
        "            if out.exists():\n"
        "                out.unlink()\n"
        f"            os.symlink(f'{ref}/out_{{t}}.npz', out)\n"
        "    return _write(self, data, *a, **k)\n"
        "pathlib.Path.write_text = _swap\n")
    garbage = relu_candidate("        return torch.empty_like(x)", top=plant)
    verdict = _verify(garbage, relu_problem)
    assert verdict.equivalent is not True, f"{verdict.failure} | {verdict.detail}"
