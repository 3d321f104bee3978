"""Nsight Compute (``ncu``) counters under the emulator's counter names.

The CPU emulator's profile (``profile.py``) counts what Nsight Compute would count. This module
reads the same quantities from ``ncu`` on a real GPU so the two can be compared
(``bench/cross_check_ncu.py``):

* ``ncu_metrics.py``: the mapping of ncu metrics onto our counters and the CSV parser (its
  names are re-exported here).
* :func:`ncu_command`: the ``ncu --csv --page raw --metrics ...`` command line.
* :func:`profile_with_ncu`: runs one program once on the GPU under ncu, in a small target
  process (``python -m structcover.tools.verify.ncu``, :func:`main`), and returns its counters.

State: written and tested against hand-made CSV and a fake ``ncu`` executable only; it has
not run on a GPU yet. The metric names are the commonly documented ones; where a GPU's ncu
does not list one (``ncu --query-metrics``), it is dropped and reported, not guessed at.

The target runs the program *outside* the sandbox (ncu must inject itself into the process
that launches the kernels), so it is meant for trusted programs: the shipped corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from structcover.schema import TaskSpec
from structcover.tools.verify.ncu_csv import parse_ncu_csv, parse_value
from structcover.tools.verify.ncu_metrics import (
    MAPPING,
    SHAPE_COUNTERS,
    UNMAPPED,
    MetricMap,
    agrees,
    base_name,
    compare_counters,
    default_metrics,
    emulator_by_base,
    emulator_side,
    launch_value,
    metric_base,
    parse_query_metrics,
    split_known,
    to_counters,
    total_counters,
)

__all__ = [
    "MAPPING",
    "MetricMap",
    "SHAPE_COUNTERS",
    "UNMAPPED",
    "agrees",
    "base_name",
    "compare_counters",
    "default_metrics",
    "emulator_by_base",
    "emulator_side",
    "launch_value",
    "metric_base",
    "parse_ncu_csv",
    "parse_query_metrics",
    "parse_value",
    "split_known",
    "to_counters",
    "total_counters",
    "NcuError",
    "NcuProfile",
    "TARGET_MODULE",
    "find_ncu",
    "ncu_available",
    "ncu_command",
    "query_metrics",
    "profile_with_ncu",
    "target_argv",
    "main",
]

#: The module that :func:`profile_with_ncu` runs under ncu (this one; see :func:`main`).
TARGET_MODULE = "structcover.tools.verify.ncu"
#: ncu's error when the driver only lets administrators read performance counters.
_PERMISSION_ERROR = "ERR_NVGPUCTRPERM"


class NcuError(RuntimeError):
    """ncu, or the program under it, did not produce counters (the message says why)."""


# --- ncu itself ---------------------------------------------------------------------------

def find_ncu() -> str | None:
    """Path of the ncu executable: PATH first, then ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "ncu").is_file():
            return str(Path(root) / "bin" / "ncu")
    return None


def ncu_available(ncu: str | None = None) -> tuple[bool, str]:
    """Whether ncu is present and runs (``ncu --version``); never raises.

    Returns:
        (available, its version line or why not).
    """
    path = ncu or find_ncu()
    if path is None:
        return False, "ncu (Nsight Compute CLI) not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin"
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{path} --version failed: {exc}"
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    if proc.returncode != 0:
        return False, f"{path} --version exited with {proc.returncode}: {' '.join(lines[-2:])}"
    return True, f"{path}: {lines[-1] if lines else 'version unknown'}"


def ncu_command(metrics: Sequence[str], target_argv: Sequence[str], *, ncu: str = "ncu",
                log_file: str | Path | None = None, extra: Sequence[str] = ()) -> list[str]:
    """The ncu command line that profiles every kernel launch of ``target_argv``.

    ``--page raw --csv`` prints one row per launch with one column per metric (after a units
    row); ``--print-units base`` keeps counts unscaled (no "Ksector"); ``--target-processes
    all`` follows the target into child processes. The log file keeps ncu's CSV apart from
    whatever the target prints.

    Args:
        metrics: ncu metric names (``--metrics`` takes them comma-separated).
        target_argv: The program to profile and its arguments.
        ncu: The ncu executable.
        log_file: Where ncu writes its output instead of stdout (``--log-file``).
        extra: Further ncu options, placed before the target.

    Raises:
        ValueError: No metrics or no target.
    """
    if not metrics or not target_argv:
        raise ValueError("ncu_command needs at least one metric and a target command")
    cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--target-processes", "all",
           "--metrics", ",".join(metrics)]
    if log_file is not None:
        cmd += ["--log-file", str(log_file)]
    return [*cmd, *extra, *target_argv]


def query_metrics(ncu: str, timeout_s: float = 60.0) -> set[str] | None:
    """The metric bases this GPU's ncu knows, or None when that cannot be told."""
    try:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True,
                              timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = parse_query_metrics(proc.stdout) if proc.returncode == 0 else set()
    return names or None


# --- profiling one program ------------------------------------------------------------------

@dataclass
class NcuProfile:
    """Counters of one program's run under ncu, in our names."""

    kernels: dict[str, dict[str, float]]
    total: dict[str, float]
    launches: list[dict[str, Any]]
    command: list[str]
    dropped_metrics: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return {"kernels": self.kernels, "total": self.total, "command": self.command,
                "dropped_metrics": self.dropped_metrics,
                "launches": [{k: v for k, v in launch.items() if k != "info"}
                             for launch in self.launches]}


def target_argv(program: Path, spec_file: Path, result: Path, *, seed: int,
                sizes: Mapping[str, int], cache_dir: Path | None,
                python: str = sys.executable, module: str = TARGET_MODULE) -> list[str]:
    """The command that runs one program once on the GPU (:func:`main`)."""
    argv = [python, "-m", module, "--source", str(program), "--spec", str(spec_file),
            "--result", str(result), "--seed", str(seed), "--sizes", json.dumps(dict(sizes))]
    return argv + (["--cache-dir", str(cache_dir)] if cache_dir else [])


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run_target(argv: list[str], result: Path, timeout_s: float) -> None:
    """Run the target once without ncu: builds the library (so ncu does not follow nvcc) and
    checks the program runs on the GPU at all, which makes a failure's reason plain."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise NcuError(f"the GPU run timed out after {timeout_s:g} s") from exc
    if not result.is_file():
        raise NcuError(f"the GPU run wrote no result (exit {proc.returncode}): "
                       f"{_tail(proc.stdout + proc.stderr)}")
    _check_result(result, "")


def _check_result(result: Path, when: str) -> None:
    """Raise unless the target's result file says the program ran; remove it (the next run
    writes its own)."""
    if not result.is_file():
        raise NcuError(f"the target wrote no result {when}".rstrip())
    outcome = json.loads(result.read_text())
    result.unlink()
    if outcome.get("status") != "ok":
        where = f" {when}" if when else ""
        raise NcuError(f"the program did not run on the GPU{where}: {outcome.get('status')}: "
                       f"{str(outcome.get('detail', ''))[:500]}")


def _ncu_failure(rc: int, output: str) -> NcuError:
    if _PERMISSION_ERROR in output:
        return NcuError(f"ncu: {_PERMISSION_ERROR}: the driver lets only administrators read GPU "
                        "performance counters (run as root, or load nvidia with "
                        "NVreg_RestrictProfilingToAdminUsers=0)")
    return NcuError(f"ncu exited with {rc}: {_tail(output)}")


def profile_with_ncu(source: str, spec: TaskSpec, sizes: Mapping[str, int] | None = None, *,
                     seed: int = 0, metrics: Sequence[str] | None = None,
                     ncu: str | None = None, cache_dir: Path | None = None,
                     timeout_s: float = 180.0, module: str = TARGET_MODULE,
                     query: bool = True) -> NcuProfile:
    """Run ``source`` once on the GPU under ncu and return its counters in our names.

    The inputs are ``make_inputs(spec, seed, sizes)``, the same arrays ``profile_program``
    gives the emulator for that seed, so data-dependent kernels take the same paths.

    Args:
        source: The program (trusted: it runs outside the sandbox, see the module docstring).
        spec: Its task.
        sizes: Size overrides (the spec's sizes by default).
        seed: Seed of the generated inputs.
        metrics: ncu metrics to collect (:func:`default_metrics` by default).
        ncu: The ncu executable (:func:`find_ncu` by default).
        cache_dir: Where the GPU build is cached (the GPU backend's folder by default).
        timeout_s: Limit of each of the two runs (plain, then under ncu; ncu replays each
            kernel once per metric pass).
        module: The target module (:data:`TARGET_MODULE`; tests put a stand-in there).
        query: Drop the metrics ``ncu --query-metrics`` does not list (off: request them all,
            for an ncu whose listing leaves out metrics it does accept).

    Raises:
        NcuError: No ncu, the program failed on the GPU, ncu failed or profiled no kernel.
    """
    path = ncu or find_ncu()
    if path is None:
        raise NcuError(ncu_available()[1])
    sizes = {**spec.sizes, **(sizes or {})}
    if cache_dir is None:
        from structcover.config import VerifySettings

        cache_dir = VerifySettings().cache_dir / "gpu"
    known = query_metrics(path) if query else None
    wanted, dropped = split_known(metrics or default_metrics(), known)
    with tempfile.TemporaryDirectory(prefix="sc-ncu-") as tmp:
        work = Path(tmp)
        (work / "program.cu").write_text(source)
        (work / "spec.json").write_text(spec.model_dump_json())
        result, log = work / "result.json", work / "ncu.csv"
        argv = target_argv(work / "program.cu", work / "spec.json", result, seed=seed,
                           sizes=sizes, cache_dir=cache_dir, module=module)
        _run_target(argv, result, timeout_s)
        cmd = ncu_command(wanted, argv, ncu=path, log_file=log)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise NcuError(f"ncu timed out after {timeout_s:g} s") from exc
        text = log.read_text() if log.is_file() else ""
        if proc.returncode != 0:
            raise _ncu_failure(proc.returncode, text + proc.stdout + proc.stderr)
        _check_result(result, "under ncu")
        launches = parse_ncu_csv(text or proc.stdout)
    if not launches:
        raise NcuError(f"ncu profiled no kernel: {_tail(text + proc.stdout + proc.stderr)}")
    kernels = to_counters(launches)
    return NcuProfile(kernels, total_counters(kernels), launches, cmd, dropped)


# --- the target process ---------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    """Run one program once on the GPU (the process ncu profiles); exit 0 when it ran.

    Writes ``{"status", "detail"}`` to ``--result``. No timing (one launcher call, so ncu
    sees each kernel of the program exactly as often as the emulator's profile run does).
    """
    parser = argparse.ArgumentParser(description="Run one program once on the GPU (ncu's target).")
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--spec", type=Path, required=True, help="the TaskSpec as JSON")
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default="{}", help="size overrides as JSON")
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    from structcover.tools.verify.gpu_runner import run_program
    from structcover.tools.verify.inputs import make_inputs

    spec = TaskSpec.model_validate_json(args.spec.read_text())
    sizes = {**spec.sizes, **{k: int(v) for k, v in json.loads(args.sizes).items()}}
    inputs = make_inputs(spec, args.seed, sizes)
    res = run_program(args.source.read_text(), spec, inputs, sizes=sizes, trials=0,
                      time_it=False, cache_dir=args.cache_dir)
    args.result.write_text(json.dumps({"status": res.status, "detail": res.detail}))
    return 0 if res.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
