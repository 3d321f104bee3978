"""The GPU backend: build a program as a shared library with nvcc, call its launcher on device
buffers, time it with CUDA events (docs/ARCHITECTURE.md).

Protocol of one run (``run_program``, executed inside the sandbox child):

1. NVML busy check *before* this process opens a context (so its own work cannot count).
2. ``nvcc -shared -Xcompiler -fPIC -O3 -arch=sm_XY`` (cached by source hash), ``ctypes`` load.
3. Device buffers for every tensor argument (outputs uploaded poisoned), one non-default stream;
   one correctness call of the launcher; outputs and inputs copied back.
4. Timing unless refused: ``warmup`` calls, then ``trials`` calls each preceded by a write of a
   buffer larger than L2 (so no trial starts with a warm cache), bracketed by CUDA events;
   median/mean/std/cv. Energy: NVML's total-energy counter over ``trials`` back-to-back calls
   (no flushes), divided by ``trials``; power, clocks and temperature read after.

A non-zero launcher return is ``launch-error``; a fault on the stream (illegal address, device
assert, …) is ``crash`` with the CUDA error name.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from structcover.config import VerifySettings
from structcover.schema import ScalarArg, TaskSpec, Timing, eval_size_expr
from structcover.tools.data.atomic import atomic_write
from structcover.tools.verify.backend import RunResult
from structcover.tools.verify.gpu_api import DeviceApi, GpuError
from structcover.tools.verify.gpu_nvml import NvmlMonitor
from structcover.tools.verify.gpu_open import open_device
from structcover.tools.verify.sandbox import SandboxLimits, run_programs_sandboxed

_SCALAR_CTYPES = {"int": ctypes.c_int, "long long": ctypes.c_longlong,
                  "unsigned int": ctypes.c_uint, "float": ctypes.c_float,
                  "double": ctypes.c_double}
_MIN_FLUSH_BYTES = 64 << 20


def _nvcc() -> str | None:
    try:
        from structcover.tools.compiler.toolchain import find_nvcc

        found = find_nvcc()
        return str(found) if found else None
    except ImportError:
        import shutil

        return shutil.which("nvcc")


def _wheel_link_dirs(nvcc: str | Path) -> list[str]:
    """``-L`` for the CUDA libraries beside a wheel's nvcc: the nvidia-cuda-* wheels keep
    libcudart_static.a and libcudadevrt.a in ``<root>/lib``, while nvcc.profile only searches
    ``<root>/targets/<arch>/lib64`` (a toolkit's layout), so linking failed without it."""
    lib = Path(nvcc).resolve().parent.parent / "lib"
    return [f"-L{lib}"] if (lib / "libcudart_static.a").is_file() else []


def build_library(source: str, arch: str, cache_dir: Path, timeout_s: float = 120.0,
                  ) -> tuple[Path | None, str]:
    """Compile ``source`` into a shared library for ``arch`` (cached by content).

    Returns:
        (path to the .so, or None on failure; the compiler log).
    """
    nvcc = _nvcc()
    if nvcc is None:
        return None, "nvcc not found"
    key = hashlib.sha256(f"{arch}\0{nvcc}\0{source}".encode()).hexdigest()[:24]
    cache_dir.mkdir(parents=True, exist_ok=True)
    lib = cache_dir / f"{key}.so"
    if lib.exists():
        return lib, "cached"
    with tempfile.TemporaryDirectory(prefix="sc-gpu-build-") as tmp:
        src = Path(tmp) / "prog.cu"
        src.write_text(source)
        out = Path(tmp) / "prog.so"
        cmd = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", f"-arch={arch}", "-o", str(out),
               *_wheel_link_dirs(nvcc), str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"nvcc timed out after {timeout_s:g} s"
        log = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or not out.exists():
            return None, log or f"nvcc exited with {proc.returncode}"
        # Published by copy: the build folder may be on another file system than the cache.
        atomic_write(lib, lambda tmp_lib: shutil.copyfile(out, tmp_lib), executable=True)
    return lib, log


def launcher_arguments(spec: TaskSpec, sizes: dict[str, int], pointers: dict[str, int],
                       stream: int) -> tuple[list, list]:
    """ctypes argtypes and values for the launcher, in the spec's order, stream last."""
    types, values = [], []
    for arg in spec.args:
        if isinstance(arg, ScalarArg):
            ctype = _SCALAR_CTYPES[arg.ctype]
            raw = (float(arg.value) if arg.ctype in ("float", "double")
                   else eval_size_expr(arg.value, sizes))
            types.append(ctype)
            values.append(ctype(raw))  # type: ignore[arg-type]
        else:
            types.append(ctypes.c_void_p)
            values.append(ctypes.c_void_p(pointers[arg.name]))
    types.append(ctypes.c_void_p)
    values.append(ctypes.c_void_p(stream))
    return types, values


def _stats(times_ms: list[float]) -> Timing:
    arr = np.asarray(times_ms, dtype=np.float64)
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return Timing(median_ms=float(np.median(arr)), mean_ms=mean, std_ms=std, trials=int(arr.size),
                  cv=std / mean if mean > 0 else 0.0)


def _time(dev: DeviceApi, call, stream: int, trials: int, warmup: int,  # noqa: ANN001
          nvml: NvmlMonitor) -> tuple[Timing, float | None, str]:
    flush_bytes = max(2 * dev.info.l2_bytes, _MIN_FLUSH_BYTES)
    flush = dev.alloc(flush_bytes)
    start, end = dev.event_create(), dev.event_create()
    try:
        for _ in range(warmup):
            call()
        dev.synchronize(stream)
        times = []
        for i in range(trials):
            dev.memset_async(flush, i & 0xFF, flush_bytes, stream)
            dev.event_record(start, stream)
            call()
            dev.event_record(end, stream)
            times.append(dev.event_elapsed_ms(start, end))
        energy_j = None
        e0 = nvml.energy_mj()
        if e0 is not None:
            for _ in range(trials):
                call()
            dev.synchronize(stream)
            e1 = nvml.energy_mj()
            energy_j = (e1 - e0) / 1000.0 / trials if e1 is not None else None
        snap = nvml.snapshot().describe()
    finally:
        dev.event_destroy(start)
        dev.event_destroy(end)
        dev.free(flush)
    return _stats(times), energy_j, snap


def run_program(source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
                sizes: dict[str, int] | None = None, trials: int = 20, warmup: int = 3,
                time_it: bool = True, device_index: int = 0, cache_dir: str | None = None,
                prefer: str | None = None) -> RunResult:
    """Run ``source``'s launcher on GPU ``device_index`` (call this inside the sandbox).

    Args:
        source: The program.
        spec: Its task.
        inputs: One array per tensor argument (outputs pre-poisoned).
        sizes: Size overrides.
        trials: Timed trials (0 disables timing).
        warmup: Untimed calls before timing.
        time_it: Time at all.
        device_index: GPU ordinal.
        cache_dir: Where built libraries are cached.
        prefer: ``"cuda-python"`` or ``"pycuda"``.

    Returns:
        Outputs, inputs after the call, timing and energy per run where measured.
    """
    sizes = {**spec.sizes, **(sizes or {})}
    nvml = NvmlMonitor(device_index)
    busy = nvml.busy_reason() if time_it and trials > 0 else None
    try:
        dev = open_device(device_index, prefer)
    except GpuError as exc:
        return RunResult(status="unsupported", backend="gpu", detail=f"no GPU: {exc}")
    notes = [f"gpu: {dev.info.name} {dev.info.arch} via {dev.name}"]
    ptrs: dict[str, int] = {}
    stream = None
    try:
        cache = Path(cache_dir) if cache_dir else VerifySettings().cache_dir / "gpu"
        lib_path, log = build_library(source, dev.info.arch, cache)
        if lib_path is None:
            return RunResult(status="compile-error", backend="gpu", detail=log)
        lib = ctypes.CDLL(str(lib_path))
        fn = getattr(lib, spec.launcher, None)
        if fn is None:
            return RunResult(status="compile-error", backend="gpu",
                             detail=f"no extern \"C\" launcher {spec.launcher!r} in the program")
        stream = dev.stream_create()
        for name, array in inputs.items():
            ptrs[name] = dev.alloc(array.nbytes)
            dev.htod(ptrs[name], array)
        types, values = launcher_arguments(spec, sizes, ptrs, stream)
        fn.argtypes, fn.restype = types, ctypes.c_int
        rc = fn(*values)
        if rc != 0:
            return RunResult(status="launch-error", backend="gpu",
                             detail=f"launcher returned cudaError {rc}")
        dev.synchronize(stream)
        outputs: dict[str, np.ndarray] = {}
        after: dict[str, np.ndarray] = {}
        for arg in spec.tensors:
            host = np.empty_like(inputs[arg.name])
            dev.dtoh(host, ptrs[arg.name])
            (after if arg.role == "input" else outputs)[arg.name] = host
        timing, energy = None, None
        if busy:
            notes.append(f"timing refused: {busy}")
        elif time_it and trials > 0:
            def call() -> None:
                if fn(*values) != 0:
                    raise GpuError(spec.launcher, "launcher returned an error while timing")
            timing, energy, snap = _time(dev, call, stream, trials, warmup, nvml)
            notes.append(snap or nvml.reason)
        return RunResult(status="ok", outputs=outputs, inputs_after=after, backend="gpu",
                         timing=timing, energy_j=energy, detail="; ".join(n for n in notes if n))
    except GpuError as exc:
        kind = "device assert" if "ASSERT" in exc.code else "fault"
        return RunResult(status="crash", backend="gpu", detail=f"{kind}: {exc}")
    finally:
        try:  # after a sticky fault these calls fail too; the child process exits anyway
            for ptr in ptrs.values():
                dev.free(ptr)
            if stream is not None:
                dev.stream_destroy(stream)
            dev.close()
        except GpuError:
            pass
        nvml.close()


@lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    if _nvcc() is None:
        return False, "nvcc not found (needed to build programs for the GPU)"
    reasons = []
    try:
        from cuda.bindings import driver as cu

        err, = cu.cuInit(0)[:1]
        if err == cu.CUresult.CUDA_SUCCESS:
            err, count = cu.cuDeviceGetCount()
            if err == cu.CUresult.CUDA_SUCCESS and count > 0:
                return True, f"{count} GPU(s) via cuda-python"
            reasons.append(f"cuda-python: no device ({err})")
        else:
            reasons.append(f"cuda-python: cuInit failed ({err})")
    except Exception as exc:  # noqa: BLE001 - no package, no driver library
        reasons.append(f"cuda-python: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        import pycuda.driver as drv

        drv.init()
        if drv.Device.count() > 0:
            return True, f"{drv.Device.count()} GPU(s) via pycuda"
        reasons.append("pycuda: no device")
    except Exception as exc:  # noqa: BLE001
        reasons.append(f"pycuda: {type(exc).__name__}: {str(exc)[:200]}")
    return False, "no usable GPU: " + "; ".join(reasons)


class GpuBackend:
    """``ExecutionBackend`` on a real GPU; every run happens in the sandbox child.

    Args:
        settings: Verify settings (timeout, cache folder).
        trials: Timed trials per run (0 = correctness only).
        warmup: Untimed calls before timing.
        device_index: GPU ordinal.
    """

    name = "gpu"

    def __init__(self, settings: VerifySettings | None = None, *, trials: int = 20,
                 warmup: int = 3, device_index: int = 0) -> None:
        if trials < 0 or warmup < 0:
            raise ValueError(f"trials and warmup must be >= 0, got {trials}, {warmup}")
        self.settings = settings or VerifySettings()
        self.trials, self.warmup, self.device_index = trials, warmup, device_index

    def available(self) -> tuple[bool, str]:
        """Whether a driver, a GPU and nvcc are present (never raises)."""
        return _probe()

    def run(self, source: str, spec: TaskSpec, inputs: dict[str, np.ndarray], *,
            sizes: dict[str, int] | None = None, timeout_s: float = 60.0) -> RunResult:
        """Run in a sandbox child with no RLIMIT_AS (CUDA maps large virtual ranges)."""
        return self.run_many(source, spec, [inputs], sizes=sizes, timeout_s=timeout_s)[0]

    def run_many(self, source: str, spec: TaskSpec, inputs_batch: list[dict[str, np.ndarray]],
                 *, sizes: dict[str, int] | None = None, timeout_s: float = 60.0,
                 ) -> list[RunResult]:
        """Several input sets in one sandbox child; ``timeout_s`` is per run."""
        limits = SandboxLimits(timeout_s=timeout_s * len(inputs_batch), memory_limit_mb=None,
                               allow_user_namespace=False)
        return run_programs_sandboxed(
            "structcover.tools.verify.gpu_runner:run_program", source, spec, inputs_batch,
            sizes=sizes, limits=limits, backend="gpu",
            extra={"trials": self.trials, "warmup": self.warmup,
                   "device_index": self.device_index,
                   "cache_dir": str(self.settings.cache_dir / "gpu")})
