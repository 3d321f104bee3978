"""Benchmark the emulator's profile counters (issue 26): cost and stability.

* Overhead: the tiled SGEMM at N=256 (16x16 tiles), plain build vs profile build, side by side
  in one run: median over ``--repeat`` runs of the runtime's in-launch wall clock and of its
  worker threads' CPU time (compilation excluded; both builds made first).
* Stability: counters (memory, branches, executed fp32 / int operations) per output element of
  a vector add and of the tiled SGEMM at N=128 and N=256 (a size-independent access pattern
  must give the same normalized figures; the SGEMM's per-element loads grow with N, as its
  arithmetic does, and are shown per FLOP too).

Kernels are the benchmark's own (trusted), so they run in this process.

    python bench/bench_profile.py [--repeat 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import tempfile
from datetime import date
from pathlib import Path

import numpy as np

from structcover.schema import TaskSpec
from structcover.tools.verify.emulator import EmulatorLibrary, build_library, prepare_runtime
from structcover.tools.verify.profile import build_report
from structcover.tools.verify.rewriter import rewrite

SGEMM = r"""
#include <cuda_runtime.h>
#define T 16
__global__ void sgemm(const float* A, const float* B, float* C, int n) {
    __shared__ float As[T][T], Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int t = 0; t < n / T; ++t) {
        As[ty][tx] = A[row * n + t * T + tx];
        Bs[ty][tx] = B[(t * T + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
extern "C" int launch(const float* A, const float* B, float* C, int n, cudaStream_t s) {
    sgemm<<<dim3(n / T, n / T), dim3(T, T), 0, s>>>(A, B, C, n);
    return (int)cudaGetLastError();
}
"""
VADD = r"""
#include <cuda_runtime.h>
__global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" int launch(const float* a, const float* b, float* c, int n, cudaStream_t s) {
    vadd<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
    return (int)cudaGetLastError();
}
"""
_GEMM_SPEC = {"task_id": "sgemm", "sizes": {"N": 256}, "args": [
    {"name": "A", "shape": ["N", "N"]}, {"name": "B", "shape": ["N", "N"]},
    {"name": "C", "shape": ["N", "N"], "role": "output"},
    {"name": "n", "kind": "scalar", "ctype": "int", "value": "N"}]}
_VADD_SPEC = {"task_id": "vadd", "sizes": {"N": 256}, "args": [
    {"name": "a", "shape": ["N"]}, {"name": "b", "shape": ["N"]},
    {"name": "c", "shape": ["N"], "role": "output"},
    {"name": "n", "kind": "scalar", "ctype": "int", "value": "N"}]}


def _run(lib: EmulatorLibrary, arrays: list[np.ndarray], n: int, workers: int) -> tuple[float, float, str]:
    lib.configure("forward", workers, 120.0)
    ptrs = [lib.device_buffer(a) for a in arrays]
    fn = lib.launcher("launch", [ctypes.c_void_p] * len(arrays) + [ctypes.c_int, ctypes.c_void_p])
    rc = fn(*[ctypes.c_void_p(p) for p in ptrs], n, None)
    status, detail = lib.status()
    if rc or status != "ok":
        raise RuntimeError(f"run failed: rc {rc}, {status}: {detail}")
    lib.lib.sc_profile_json.restype = ctypes.c_char_p
    prof = (lib.lib.sc_profile_json() or b"").decode()
    wall, cpu = lib.kernel_seconds(), lib.kernel_cpu_seconds()
    lib.release_handlers()
    return wall, cpu, prof


def _lib(source: str, profile: bool, cache: Path) -> tuple[EmulatorLibrary, list]:
    r = rewrite(source, profile=profile)
    return EmulatorLibrary(build_library(r.source, cache).path), r.sites


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    cache = Path(os.environ.get("SC_BENCH_CACHE", tempfile.gettempdir())) / "bench-profile-cache"
    cache.mkdir(parents=True, exist_ok=True)
    prepare_runtime(cache)
    rng = np.random.default_rng(0)
    print(f"# Profile counters: {platform.processor() or platform.machine()}, {os.cpu_count()} "
          f"cores, {date.today()}, {args.workers} workers, median of {args.repeat}, load average "
          f"{os.getloadavg()[0]:.1f} at the start")
    n = 256
    mats = [rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(2)] + [np.zeros((n, n), np.float32)]
    plain, _ = _lib(SGEMM, False, cache)
    prof, _ = _lib(SGEMM, True, cache)
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "profile": []}
    for _ in range(args.repeat):  # interleaved, so load changes hit both alike
        for name, lib in (("plain", plain), ("profile", prof)):
            wall, cpu, _ = _run(lib, mats, n, args.workers)
            times[name].append((wall, cpu))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in times.items()}
    print("\n| SGEMM-256 tiled | wall s | worker CPU s |\n| --- | --- | --- |")
    for k, (w, c) in med.items():
        print(f"| {k} | {w:.3f} | {c:.3f} |")
    print(f"| ratio | {med['profile'][0] / med['plain'][0]:.2f}x | "
          f"{med['profile'][1] / med['plain'][1]:.2f}x |")
    print(f"\nload average {os.getloadavg()[0]:.1f} after the timed runs")

    keys = ("global_load_requests", "global_load_sectors", "global_store_sectors",
            "shared_load_requests", "shared_load_bank_conflicts", "barriers", "branch_requests",
            "divergent_branches", "ops_fp32_add", "ops_fp32_fma", "ops_int_add", "ops_int_fma")
    print("\n| kernel | N | " + " | ".join(keys) + " |\n|" + " --- |" * (len(keys) + 2))
    for label, src, spec_d, shape in (("vadd", VADD, _VADD_SPEC, lambda m: (m,)),
                                      ("sgemm", SGEMM, _GEMM_SPEC, lambda m: (m, m))):
        lib, sites = _lib(src, True, cache)
        spec = TaskSpec(**spec_d)
        for size in (128, 256):
            arrays = [rng.uniform(-1, 1, shape(size)).astype(np.float32) for _ in range(2)]
            arrays.append(np.zeros(shape(size), np.float32))
            _, _, counters = _run(lib, arrays, size, args.workers)
            flops = 2.0 * size ** 3 if label == "sgemm" else float(size)
            rep = build_report(counters, sites, spec, {"N": size}, flops=flops)
            print(f"| {label} per output element | {size} | "
                  + " | ".join(f"{rep.per_output_element[k]:.4g}" for k in keys) + " |")
            print(f"| {label} per FLOP | {size} | "
                  + " | ".join(f"{rep.per_flop[k]:.4g}" for k in keys) + " |")


if __name__ == "__main__":
    main()
