"""``verify_kernelbench``: is a KernelBench candidate's ``ModelNew`` equivalent to the problem's ``Model``?

Contract (the CLI's ``verify CAND.py --task PROBLEM.py``, the campaign's Verifier and the
mutation campaign call this one function):

* It never raises for a bad *candidate*: syntax errors, unresolvable ``load_inline`` text,
  build errors, crashes, timeouts, races, wrong outputs and hacks are verdicts
  (``Verdict.failure`` is a short kind, ``Verdict.detail`` the reason without data values). It
  raises ``ValueError`` only for a bad *call* (an unknown backend, a bad budget).
* Constructs the chosen backend cannot run faithfully give ``failure == "unsupported"`` and
  ``detail == "unsupported: <construct>"``, ``equivalent is None``: never a wrong verdict.
* The candidate's Python runs only in the sandboxed child (``child.py``, in the bubblewrap jail
  of ``tools/verify/jail.py``); the reference runs in a separate child, so a candidate never
  shares a process with the reference outputs it is compared against. The comparison happens
  here (``tools/verify/compare.py``).
* ``backend``: ``cpu`` (torch on CPU, ``load_inline`` sources built on the project's emulator),
  ``gpu`` (torch on CUDA: the real ``load_inline``, timing and speedup), ``auto`` (gpu where a
  device is usable, else cpu). The verdict's ``backend`` names the one that decided.
* ``seed`` replays the same inputs and initial weights; ``Verdict.notes`` says when the problem's
  sizes were shrunk to the work budget (a candidate hard-coding the original sizes then fails).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from structcover.schema import Timing, Verdict, content_hash
from structcover.tools.kernelbench.candidate import InlineExtension, UnresolvedInline, find_inline_extensions
from structcover.tools.kernelbench.outputs import compare_runs
from structcover.tools.kernelbench.problem import Problem
from structcover.tools.kernelbench.sandbox import ChildOutcome, run_child
from structcover.tools.kernelbench.triton_path import unsupported_constructs, uses_triton

__all__ = ["DEFAULT_WORK_BUDGET", "verify_kernelbench"]

#: Work budget on the CPU path: elements of all inputs together (``Problem.work``). A square
#: matmul shrinks to N = 181 (6 M multiply-adds on the emulator), an elementwise problem to
#: 64 Ki elements.
DEFAULT_WORK_BUDGET = 2.0 ** 16
#: Reference runs are cached here by (problem text, sizes, seed, trials, device, torch).
_REF_CACHE_ENV = "STRUCTCOVER_KERNELBENCH_CACHE"
#: Hard anti-hacking checks that flag a KernelBench candidate without rejecting it.
_NOT_REJECTING = frozenset({"defines_kernel"})


def _cache_root() -> Path:
    env = os.environ.get(_REF_CACHE_ENV)
    if env:
        return Path(env)
    from structcover.config import load_settings

    return Path(load_settings().verify.cache_dir).parent / "kernelbench"


def pick_backend(backend: str) -> Literal["cpu", "gpu"]:
    """``auto`` resolves to ``gpu`` where a device is usable, else ``cpu``.

    Raises:
        ValueError: Not one of auto, cpu, gpu.
        RuntimeError: ``gpu`` asked for where no GPU is usable (the message says why).
    """
    if backend not in ("auto", "cpu", "gpu"):
        raise ValueError(f"--backend {backend}: KernelBench tasks run on auto, gpu or cpu")
    if backend == "cpu":
        return "cpu"
    from structcover.tools.verify.gpu_runner import GpuBackend

    usable, why = GpuBackend().available()
    if usable:
        return "gpu"
    if backend == "gpu":
        raise RuntimeError(f"--backend gpu: {why}")
    return "cpu"


def _verdict(candidate_text: str, problem: Problem, seed: int, **kw: Any) -> Verdict:
    return Verdict(program_id=content_hash(candidate_text), task_id=problem.id, seed=seed, **kw)


def _static(candidate_text: str, problem: Problem, seed: int
            ) -> tuple[list[InlineExtension], list[str], Verdict | None]:
    """Parse, run the anti-hacking checks, find the extensions; a verdict when that decides."""
    from structcover.tools.kernelbench.deferred_delegation import defers_to_run
    from structcover.tools.verify.hacking import hard_failures
    from structcover.tools.verify.hacking_py import run_python_checks

    try:
        ast.parse(candidate_text)
    except (SyntaxError, ValueError) as exc:
        return [], [], _verdict(candidate_text, problem, seed, compiled=False, equivalent=False,
                                failure="syntax-error", detail=f"not valid Python: {exc}")
    results = run_python_checks(candidate_text)
    flags = [r.name for r in results if not r.ok]
    # A ModelNew without a custom kernel (pure torch) is a weak but legitimate KernelBench
    # answer: flagged, still verified. Every other hard check rejects it unrun.
    hard = [r for r in hard_failures(results) if r.name not in _NOT_REJECTING]
    if defers_to_run(hard, candidate_text):  # torch compute the run-time meter judges
        hard = []
    if hard:
        return [], flags, _verdict(
            candidate_text, problem, seed, equivalent=False, failure="hacking",
            hacking_flags=flags, detail="rejected by anti-hacking checks: "
            + "; ".join(f"{r.name}: {r.reason}" for r in hard))
    try:
        exts = find_inline_extensions(candidate_text)
    except UnresolvedInline as exc:
        return [], flags, _verdict(candidate_text, problem, seed, hacking_flags=flags,
                                   failure="unsupported", detail=f"unsupported: {exc}")
    return exts, flags, None


def _build_cpu(exts: list[InlineExtension], build: Path
               ) -> tuple[dict[str, str], Verdict | None, list[str]]:
    """Build every extension for the CPU: ({key: library}, None, notes) or a failure verdict.

    Raises:
        SandboxUnavailable: No jail for the compiler (an environment problem, not a verdict).
    """
    if not exts:
        return {}, None, []
    from structcover.tools.kernelbench.cpu_build import ExtensionBuildError, UnsupportedConstruct, build_cpu_extension

    built: dict[str, str] = {}
    notes: list[str] = []
    for ext in exts:
        try:
            built[ext.key()] = str(build_cpu_extension(ext, build / ext.key()))
        except UnsupportedConstruct as exc:
            construct = getattr(exc, "construct", None) or str(exc)
            return {}, Verdict(program_id="", failure="unsupported",
                               detail=f"unsupported: {construct}"), notes
        except ExtensionBuildError as exc:
            return {}, Verdict(program_id="", compiled=False, failure="compile-error",
                               detail=f"extension {ext.name!r} (line {ext.line}) did not build",
                               compile_log=str(exc.log)[-4000:]), notes
        try:
            info = json.loads((build / ext.key() / "build.json").read_text())
        except (OSError, ValueError):
            info = {}
        if info.get("ignored_flags"):
            notes.append(f"extension {ext.name!r}: flags without effect on the CPU path: "
                         + " ".join(map(str, info["ignored_flags"])))
    return built, None, notes


def reference_key(problem: Problem, sizes: dict[str, int], seed: int, trials: int, device: str,
                  time_it: bool) -> str:
    """The reference cache's key of one run: the problem's text, sizes, seed, trials, device,
    timing, torch's version and the float64 pass (CPU path only)."""
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "none"
    return hashlib.sha256(json.dumps([problem.text, sizes, seed, trials, device, time_it,
                                      torch_version, device == "cpu"], sort_keys=True).encode()
                          ).hexdigest()[:20]


def _reference(problem: Problem, sizes: dict[str, int], seed: int, trials: int, device: str,
               time_it: bool, timeout_s: float, scratch: Path) -> tuple[ChildOutcome, Path]:
    """The reference child's run, from the cache when the same run was made before.

    A timed run (GPU) is never shared: its timing belongs to this verification, so it is kept
    in ``scratch`` (the caller's temporary folder) instead of the cache.
    """
    # The float64 pass (the precision check's yardstick) runs on the CPU path only: the GPU
    # path keeps the full sizes, where a float64 run would cost as much as the task.
    fp64 = device == "cpu"
    root = _cache_root()
    final = scratch / "reference" if time_it else \
        root / f"ref-{reference_key(problem, sizes, seed, trials, device, time_it)}"
    if (final / "result.json").is_file() and not time_it:
        result = json.loads((final / "result.json").read_text())
        if result.get("status") == "ok":
            return ChildOutcome(result=result, folder=final, notes=["reference from cache"]), final
    root.mkdir(parents=True, exist_ok=True)
    # Made beside where it is published, so the publishing rename never crosses file systems.
    work = Path(tempfile.mkdtemp(prefix="ref-", dir=scratch if time_it else root))
    try:
        shutil.copyfile(problem.path, work / "problem.py")
        job = {"mode": "reference", "device": device, "problem_file": str(work / "problem.py"),
               "sizes": sizes, "seed": seed, "trials": trials, "time": time_it, "fp64": fp64}
        outcome = run_child(job, work, work / "out", device=device, timeout_s=timeout_s)
        if outcome.ok:
            try:
                # Atomic publish: a half-written run is never read. Where another process
                # published the same run first, its copy stays (a reader may be using it).
                os.rename(work / "out", final)
            except OSError:
                if not (final / "result.json").is_file():
                    raise
                outcome.result = json.loads((final / "result.json").read_text())
            outcome.folder = final
            return outcome, final
        return outcome, work / "out"
    finally:
        # Published or failed, the scratch folder goes (the outcome holds the failure's text).
        shutil.rmtree(work, ignore_errors=True)


def _copy_inputs(ref: dict[str, Any], ref_dir: Path, dest: Path) -> Path:
    """The reference's inputs (never its outputs) into the candidate's job folder."""
    dest.mkdir()
    for t in range(len(ref["trials"])):
        shutil.copyfile(ref_dir / f"in_{t}.npz", dest / f"in_{t}.npz")
    (dest / "inputs.json").write_text(json.dumps([t["inputs"] for t in ref["trials"]]))
    return dest


def _timing(raw: dict[str, Any] | None) -> Timing | None:
    if not raw:
        return None
    return Timing(median_ms=raw["median_ms"], mean_ms=raw["mean_ms"], std_ms=raw["std_ms"],
                  trials=raw["trials"], cv=raw["cv"])


def verify_kernelbench(candidate_text: str, problem: Problem, *,
                       backend: Literal["auto", "cpu", "gpu"] = "auto", seed: int = 0,
                       trials: int = 3, work_budget: float | None = None,
                       timeout_s: float = 300.0, time_it: bool = True) -> Verdict:
    """Check ``candidate_text`` (a Python file defining ``ModelNew``) against ``problem``.

    Args:
        candidate_text: The candidate's Python source.
        problem: The reference problem (:func:`~structcover.tools.kernelbench.problem.resolve_problem`).
        backend: ``auto``, ``cpu`` or ``gpu``.
        seed: Seed of the first trial's inputs and of the weights of both models.
        trials: Correctness trials (each with fresh inputs; at least 2, so a result cached
            across calls shows).
        work_budget: Shrink the problem's sizes to this work (default: :data:`DEFAULT_WORK_BUDGET`
            on the CPU path, none on the GPU path).
        timeout_s: Wall-clock limit of each sandboxed child.
        time_it: On the GPU path, time candidate and reference (speedup, energy).

    Returns:
        The verdict (see the module doc).

    Raises:
        ValueError: A bad call (backend name, trials, budget).
        RuntimeError: ``backend="gpu"`` where no GPU is usable; ``SandboxUnavailable`` (a
            RuntimeError) where no jail is possible and the user did not opt in to running
            without one.
    """
    if trials < 2:
        raise ValueError(f"trials must be >= 2 (a cached result needs two inputs), got {trials}")
    kind = pick_backend(backend)
    device = "cuda" if kind == "gpu" else "cpu"
    exts, flags, decided = _static(candidate_text, problem, seed)
    if decided is not None:
        decided.backend = kind
        return decided
    budget = work_budget if work_budget is not None else (
        DEFAULT_WORK_BUDGET if kind == "cpu" else None)
    sizes = problem.shrunk(budget) if budget is not None else dict(problem.sizes)
    notes = []
    if sizes != problem.sizes:
        changed = ", ".join(f"{k} {problem.sizes[k]}->{v}" for k, v in sizes.items()
                            if v != problem.sizes[k])
        notes.append(f"sizes shrunk to the work budget {budget:g}: {changed} (a candidate that "
                     "hard-codes the original sizes fails)")
    base: dict[str, Any] = {"backend": kind, "hacking_flags": flags}
    triton = uses_triton(candidate_text)
    if triton and kind == "cpu":
        missing = unsupported_constructs(candidate_text)
        if missing:
            return _verdict(candidate_text, problem, seed, failure="unsupported", notes=notes,
                            detail="unsupported: the Triton interpreter cannot run "
                            + "; ".join(missing), **base)
        notes.append("Triton kernels run in Triton's interpreter (TRITON_INTERPRET=1); "
                     "@triton.autotune takes its first config that survives pruning")
    # Two folders: the candidate's jail sees ``work`` (read-only), never ``ref_scratch`` (a
    # timed reference's outputs live there on the GPU path).
    with tempfile.TemporaryDirectory(prefix="structcover-kb-") as tmp, \
            tempfile.TemporaryDirectory(prefix="structcover-kbref-") as ref_tmp:
        work = Path(tmp)
        built, failed, build_notes = ({}, None, []) if kind == "gpu" else _build_cpu(
            exts, work / "build")
        notes += build_notes
        if failed is not None:
            return failed.model_copy(update={"program_id": content_hash(candidate_text),
                                             "task_id": problem.id, "seed": seed, "notes": notes,
                                             "equivalent": None if failed.failure == "unsupported"
                                             else False, **base})
        ref, ref_dir = _reference(problem, sizes, seed, trials, device, kind == "gpu" and time_it,
                                  timeout_s, Path(ref_tmp))
        if not ref.ok:
            return _verdict(candidate_text, problem, seed, failure="reference-failed", notes=notes,
                            detail="the reference failed: " + str(ref.result.get("detail", "")),
                            **base)
        shutil.copyfile(problem.path, work / "problem.py")
        inputs_dir = _copy_inputs(ref.result, ref_dir, work / "inputs")
        (work / "candidate.py").write_text(candidate_text, encoding="utf-8",
                                           errors="surrogatepass")
        job = {"mode": "candidate", "device": device, "problem_file": str(work / "problem.py"),
               "candidate_file": str(work / "candidate.py"), "sizes": sizes, "seed": seed,
               "trials": trials, "time": kind == "gpu" and time_it, "extensions": built,
               "inputs_dir": str(inputs_dir), "triton": triton,
               # A run-time decoy check: every forward must launch one of its Triton kernels.
               "triton_kernels": triton and not exts and "defines_kernel" not in flags,
               # Torch compute in forward, seen at run time (dispatch_watch.py): only for a
               # candidate with a kernel of its own (a pure-torch one is flagged, not watched).
               "watch_torch": "defines_kernel" not in flags}
        libs = [Path(p).parent for p in built.values()]
        cand = run_child(job, work, work / "cand", device=device, ro=libs,
                         timeout_s=timeout_s)
        notes += cand.notes
        verdict = conclude(candidate_text, problem, seed, ref.result, ref_dir, cand.result,
                           work / "cand", backend=kind, compiled=bool(exts) or None, notes=notes,
                           hacking_flags=flags)
        if verdict.failure == "precision" and built and not triton:
            verdict = _probed(verdict, job, work, libs, timeout_s)
        return verdict


def _probed(verdict: Verdict, job: dict[str, Any], work: Path, libs: list[Path],
            timeout_s: float) -> Verdict:
    """A precision failure checked by the response probe (``precision_probe.py``): it stands
    where an output ignores small input nudges, and is withdrawn where all follow them."""
    from structcover.tools.kernelbench.precision_probe import reconsider

    out = run_child({**job, "probe_only": True}, work, work / "probe", device="cpu", ro=libs,
                    timeout_s=timeout_s)
    probe = out.result.get("probe") or {"ran": False, "why": out.result.get("detail", "")}
    stands, why = reconsider(verdict.detail, probe)
    if stands:
        return verdict.model_copy(update={"detail": f"{verdict.detail}; {why}"})
    return verdict.model_copy(update={"equivalent": True, "failure": None, "detail": "",
                                      "notes": [*verdict.notes, why]})


def conclude(candidate_text: str, problem: Problem, seed: int, ref: dict[str, Any],
             ref_dir: Path, cand: dict[str, Any], cand_dir: Path, *, backend: str,
             compiled: bool | None, notes: list[str], hacking_flags: list[str]) -> Verdict:
    """The verdict from the two children's results (``result.json`` and their arrays).

    A failed candidate run is its failure; otherwise :func:`compare_runs` decides (the
    precision check included, where the reference ran in float64 too: ``tolerance_rule`` and
    ``precision_ratio`` say what it measured), and where both children timed (the GPU path)
    the verdict carries the candidate's timing, the speedup (reference median / candidate
    median) and the energy per call.
    """
    base: dict[str, Any] = {"backend": backend, "hacking_flags": hacking_flags,
                            "compiled": compiled}
    if cand.get("status") != "ok":
        failure = cand.get("failure") or "crash"
        if failure == "compile-error":  # the GPU path's load_inline (nvcc) in the child
            base["compiled"] = False
        return _verdict(candidate_text, problem, seed,
                        equivalent=None if failure == "unsupported" else False,
                        failure=failure, detail=str(cand.get("detail", "")), notes=notes,
                        **base)
    notes = [*notes, *cand.get("notes", [])]
    out = compare_runs(ref, ref_dir, cand, cand_dir, atol=problem.atol, rtol=problem.rtol,
                       cpu_path=backend == "cpu", min_precision=problem.min_precision)
    if "fp64" not in ref:
        notes = [*notes, "no precision check: the float64 reference runs on the CPU path only"]
    verdict = _verdict(candidate_text, problem, seed, equivalent=out.failure is None,
                       failure=out.failure, detail=out.detail, max_abs_error=out.max_abs_error,
                       max_rel_error=out.max_rel_error, first_mismatch=out.first_mismatch,
                       notes=notes + out.notes, tolerance_rule=out.rule,
                       precision_ratio=out.precision_ratio, **base)
    cand_t, ref_t = cand.get("timing"), ref.get("timing")
    if cand_t and ref_t and cand_t["median_ms"] > 0:
        verdict.timing = _timing(cand_t)
        verdict.speedup = ref_t["median_ms"] / cand_t["median_ms"]
        verdict.energy_j = cand_t.get("energy_j")
    return verdict
