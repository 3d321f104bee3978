"""The strict emulator: races, bounds, poison, host/device separation, fences, no tells.

Each program in tests/data/adversarial/emulator/ is wrong on a GPU but passed the emulator
before it was made strict; its first lines name the task (``// task: sum``) and the verdicts
it may get (``// expect: race, wrong``). The honest programs below must still pass, so the
checks do not buy strictness with false alarms.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from emu_helpers import backend, needs_cxx, session_cache, spec_of, uniform  # noqa: E402

pytestmark = [needs_cxx, pytest.mark.slow]

ADVERSARIAL = Path(__file__).parents[2] / "data" / "adversarial" / "emulator"
N_SCALE, N_REDUCE = 1024, 4096
VEC = [("x", ["N"], "input"), ("y", ["N"], "output")]
RED = [("x", ["N"], "input"), ("out", [1], "output")]
TASKS = {
    "scale": (spec_of("scale", VEC, [("n", "N")], {"N": N_SCALE}), lambda x: 2.0 * x),
    "sum": (spec_of("sum", RED, [("n", "N")], {"N": N_REDUCE}),
            lambda x: np.array([x.astype(np.float64).sum()])),
    "max": (spec_of("max", RED, [("n", "N")], {"N": N_REDUCE}), lambda x: np.array([x.max()])),
}


@pytest.fixture(scope="module")
def be(tmp_path_factory):
    return backend(session_cache(tmp_path_factory))


def verdict(be, source: str, task: str, n: int | None = None) -> tuple[str, str]:
    """(status, detail); status ``wrong`` when the run is ok but the output is not."""
    spec, ref = TASKS[task]
    size = n or spec.sizes["N"]
    x = uniform(size, seed=3)
    out_name, out_shape = ("y", size) if task == "scale" else ("out", 1)
    inputs = {"x": x, out_name: np.zeros(out_shape, np.float32)}
    r = be.run(source, spec, inputs, sizes={"N": size}, timeout_s=60)
    if r.status != "ok":
        return r.status, r.detail
    got = r.outputs[out_name].astype(np.float64)
    ok = np.allclose(got, ref(x), rtol=1e-4, atol=1e-3)
    return ("ok" if ok else "wrong"), r.detail


def header(path: Path) -> tuple[str, set[str]]:
    lines = path.read_text().splitlines()
    task = next(ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("// task:"))
    expect = next(ln.split(":", 1)[1] for ln in lines if ln.startswith("// expect:"))
    return task, {e.strip() for e in expect.split(",")}


def test_the_suite_has_at_least_ten_programs():
    assert len(list(ADVERSARIAL.glob("*.cu"))) >= 10


@pytest.mark.parametrize("path", sorted(ADVERSARIAL.glob("*.cu")), ids=lambda p: p.stem)
def test_adversarial_program_is_rejected(be, path):
    task, expect = header(path)
    status, detail = verdict(be, path.read_text(), task)
    assert status in expect, f"{path.name}: {status}: {detail}"


def test_verdicts_name_what_went_wrong(be):
    status, detail = verdict(be, (ADVERSARIAL / "racy_shared_plus.cu").read_text(), "sum")
    assert status == "race" and "read-modify-write" in detail and "line 11" in detail
    status, detail = verdict(be, (ADVERSARIAL / "racy_cross_block_plus.cu").read_text(), "sum")
    assert status == "race" and "blocks" in detail
    status, detail = verdict(be, (ADVERSARIAL / "oob_read_past_end.cu").read_text(), "scale")
    assert status == "crash" and "past the end of buffer `x`" in detail
    status, detail = verdict(be, (ADVERSARIAL / "host_reads_device_pointer.cu").read_text(), "sum")
    assert status == "crash" and "host code read or wrote buffer `x`" in detail
    status, detail = verdict(be, (ADVERSARIAL / "kernel_reads_host_malloc.cu").read_text(), "scale")
    assert status == "crash" and "kernel argument #1 points to host memory" in detail
    last_block = (ADVERSARIAL / "missing_threadfence_last_block.cu").read_text()
    status, detail = verdict(be, last_block, "sum")
    assert status == "unsupported" and "__threadfence()" in detail


HONEST = {
    "tree reduction, RMW on distinct slots": ("sum", r"""
#include <cuda_runtime.h>
__global__ void k(const float* x, float* out, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x, i = blockIdx.x * 256 + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) { if (tid < k) s[tid] += s[tid + k]; __syncthreads(); }
    if (tid == 0) atomicAdd(out, s[0]);
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    cudaMemsetAsync(out, 0, sizeof(float), s);
    k<<<(n + 255) / 256, 256, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}"""),
    "last-block reduction with __threadfence": ("sum", (
        ADVERSARIAL / "missing_threadfence_last_block.cu").read_text().replace(
            "partial[blockIdx.x] = s[0];", "partial[blockIdx.x] = s[0]; __threadfence();")),
    "RMW by one thread per barrier interval, and lanes ordered by __syncwarp": ("sum", r"""
#include <cuda_runtime.h>
__global__ void k(const float* x, float* out, int n) {
    __shared__ float acc[2];
    int tid = threadIdx.x;
    if (tid < 2) acc[tid] = 0.0f;
    __syncthreads();
    for (int t = 0; t < 32; ++t) {
        if (tid == t) for (int i = tid; i < n; i += 32) acc[0] += x[i];
        __syncthreads();
    }
    if (tid < 32) {
        for (int l = 0; l < 32; ++l) { if (tid == l) acc[1] += acc[0] / 32.0f; __syncwarp(); }
    }
    __syncthreads();
    if (tid == 0) { float t = acc[1]; out[0] = t; }
}
extern "C" int launch(const float* x, float* out, int n, cudaStream_t s) {
    k<<<1, 64, 0, s>>>(x, out, n);
    return (int)cudaGetLastError();
}"""),
    "local accumulators, pinned host table, cudaMemcpy round trip": ("scale", r"""
#include <cuda_runtime.h>
__global__ void k(const float* x, const float* table, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[2] = {0.0f, 0.0f};
    acc[i & 1] += table[0] * x[i < n ? i : 0];
    acc[0] += acc[1];
    if (i < n) y[i] = acc[0];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    float* table;
    cudaMallocHost(&table, sizeof(float));
    table[0] = 2.0f;
    float* tmp;
    cudaMalloc(&tmp, n * sizeof(float));
    cudaMemcpy(tmp, x, n * sizeof(float), cudaMemcpyDeviceToDevice);
    k<<<(n + 127) / 128, 128, 0, s>>>(tmp, table, y, n);
    cudaFree(tmp);
    cudaFreeHost(table);
    return (int)cudaGetLastError();
}"""),
    "__constant__ table filled from a device buffer": ("scale", r"""
#include <cuda_runtime.h>
__constant__ float table[4];
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = table[1] * x[i];
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    float host[4] = {0.0f, 2.0f, 0.0f, 0.0f}, back[4];
    float* dev;
    cudaMalloc(&dev, sizeof host);
    cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
    cudaMemcpyToSymbol(table, dev, sizeof host, 0, cudaMemcpyDeviceToDevice);
    cudaMemcpyFromSymbol(back, table, sizeof back);
    cudaFree(dev);
    if (back[1] != 2.0f) return 1;
    k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}"""),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_program_passes(be, name):
    task, src = HONEST[name]
    status, detail = verdict(be, src, task, n=1000 if task == "scale" else None)
    assert status == "ok", f"{name}: {status}: {detail}"


def test_poison_differs_by_schedule_and_survives_fmaxf_and_fminf(be):
    # Reads a never-written cudaMalloc word through fmaxf(., 0) and fminf(., 0): with a NaN
    # poison both give 0 and hide the read; the strict runtime's poison is a huge finite value
    # of either sign, so one of the two shows it under each of forward and reverse.
    src = r"""
#include <cuda_runtime.h>
__global__ void k(const float* junk, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(junk[i], 0.0f) + fminf(junk[i], 0.0f);
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    float* junk;
    cudaMalloc(&junk, n * sizeof(float));
    k<<<(n + 255) / 256, 256, 0, s>>>(junk, y, n);
    cudaFree(junk);
    return (int)cudaGetLastError();
}"""
    spec, _ = TASKS["scale"]
    seen = []
    for schedule in ("forward", "reverse"):
        one = backend(Path(be.settings.cache_dir), schedules=(schedule,))
        r = one.run(src, spec, {"x": uniform(N_SCALE), "y": np.zeros(N_SCALE, np.float32)})
        assert r.status == "ok", r.detail
        y = r.outputs["y"]
        assert np.isfinite(y).all() and (np.abs(y) > 1e30).all()
        seen.append(float(np.sign(y[0])))
    assert seen[0] != seen[1]


def test_thirty_two_workers_and_1024_thread_blocks_under_a_4_gib_limit(be):
    # 32 workers x 1025 stacks x 128 KiB is 4 GiB of address space: the runtime must bound the
    # workers by its budget (half of RLIMIT_AS) instead of failing to map stacks.
    script = textwrap.dedent(f"""
        import json, resource, sys
        import numpy as np
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from emu_helpers import backend, spec_of
        from pathlib import Path
        src = '''
        #include <cuda_runtime.h>
        __global__ void k(const float* x, float* y, int n) {{
            __shared__ float s[1024];
            int t = threadIdx.x, i = blockIdx.x * 1024 + t;
            s[t] = x[i];
            __syncthreads();
            y[i] = s[1023 - t] + 1.0f;
        }}
        extern "C" int launch(const float* x, float* y, int n, cudaStream_t st) {{
            k<<<n / 1024, 1024, 0, st>>>(x, y, n);
            return (int)cudaGetLastError();
        }}'''
        n = 64 * 1024
        vec = [("x", ["N"], "input"), ("y", ["N"], "output")]
        spec = spec_of("wide", vec, [("n", "N")], {{"N": n}})
        x = np.arange(n, dtype=np.float32)
        be = backend(Path({str(be.settings.cache_dir)!r}), workers=32,
                     schedules=("forward", "random:7"))
        r = be.run(src, spec, {{"x": x, "y": np.zeros(n, np.float32)}}, timeout_s=120)
        want = x.reshape(-1, 1024)[:, ::-1].reshape(-1) + 1
        ok = r.status == "ok" and bool(np.array_equal(r.outputs["y"], want))
        print(json.dumps({{"status": r.status, "correct": ok, "detail": r.detail}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok" and result["correct"], result


def test_stack_overflow_message_states_the_real_stack_size(be):
    src = r"""
#include <cuda_runtime.h>
__device__ float deep(int d, const float* x) {
    volatile float pad[2048];  // 8 KiB frames: larger than the guard page below each stack
    pad[d & 2047] = x[0];
    return d > 0 ? deep(d - 1, x) + pad[(d * 7) & 2047] : pad[0];
}
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = deep(100, x);
}
extern "C" int launch(const float* x, float* y, int n, cudaStream_t s) {
    k<<<1, 32, 0, s>>>(x, y, n);
    return (int)cudaGetLastError();
}"""
    status, detail = verdict(be, src, "scale")
    assert status == "crash" and "fiber stack overflow (124 KiB per thread)" in detail, detail


def test_a_machine_without_a_context_switch_is_unsupported_not_available(be, monkeypatch):
    import platform

    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    usable, why = be.available()
    assert not usable and "riscv64" in why
    spec, _ = TASKS["scale"]
    r = be.run("int main() {}", spec, {"x": uniform(N_SCALE), "y": np.zeros(N_SCALE, np.float32)})
    assert r.status == "unsupported" and "context switch" in r.detail


@pytest.fixture(scope="module")
def jailed(tmp_path_factory):
    from structcover.config import VerifySettings
    from structcover.tools.verify.select import CpuBackend

    be = CpuBackend(VerifySettings(cache_dir=session_cache(tmp_path_factory), timeout_s=60.0))
    usable, why = be.available()
    if not usable:
        pytest.skip(why)
    return be


@pytest.mark.parametrize("path", sorted(ADVERSARIAL.glob("*.cu")), ids=lambda p: p.stem)
def test_adversarial_program_is_rejected_through_the_jailed_runner(jailed, path):
    # The path `verify` takes: compiled and run in the jail by sc_runner (docs/SANDBOX.md),
    # whose argument buffers are the runtime's device buffers too.
    task, expect = header(path)
    status, detail = verdict(jailed, path.read_text(), task)
    assert status in expect, f"{path.name}: {status}: {detail}"
