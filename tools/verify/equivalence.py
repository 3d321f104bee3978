"""Is a candidate program equivalent to its task's reference? (DESIGN.md §6)

``check_equivalence`` runs both programs through the task's launcher on ``trials`` seeded input
sets (seeds ``seed, seed+1, …``), and returns a ``Verdict``. Per trial: the candidate's status
first (compile error, crash, race, deadlock, timeout, unsupported, rejected become
``Verdict.failure`` with the backend's detail), then inputs must be unchanged after the call,
then every output is compared by ``compare.compare_output`` (shapes first, tolerance, NaNs,
unwritten elements, magnitude guard). The first failing trial decides.

Reference outputs are cached per (reference hash, spec, sizes, seed, backend) in a
``ReferenceCache`` so a campaign runs each reference once per seed, not once per candidate.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path

import numpy as np

from structcover.config import VerifySettings
from structcover.schema import TaskSpec, Verdict, content_hash
from structcover.tools.verify.backend import ExecutionBackend, RunResult
from structcover.tools.verify.compare import compare_output
from structcover.tools.verify.inputs import make_inputs

_VERDICT_BACKENDS = {"gpu", "cpu", "compile-only"}


class ReferenceCache:
    """Reference outputs per (reference hash, spec, sizes, seed, backend), LRU in memory.

    Args:
        directory: Also persist successful reference outputs as ``.npz`` here (shared between
            processes of a campaign); None keeps them in memory only.
        max_entries: In-memory entries kept.
    """

    def __init__(self, directory: Path | None = None, *, max_entries: int = 256) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.directory = Path(directory) if directory else None
        self.max_entries = max_entries
        self._mem: OrderedDict[str, RunResult] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(reference_src: str, spec: TaskSpec, sizes: dict[str, int] | None, seed: int,
            backend: str) -> str:
        """The cache key of one reference run."""
        blob = json.dumps([content_hash(reference_src), spec.model_dump(mode="json"),
                           sizes or {}, seed, backend], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def get(self, key: str) -> RunResult | None:
        """The cached result, or None."""
        if key in self._mem:
            self._mem.move_to_end(key)
            self.hits += 1
            cached = self._mem[key]
            # A copy: no caller can change the outputs every later candidate is judged against.
            return RunResult(status=cached.status, outputs=_copy(cached.outputs),
                             backend=cached.backend, detail=cached.detail)
        if self.directory and (self.directory / f"{key}.npz").exists():
            with np.load(self.directory / f"{key}.npz", allow_pickle=False) as data:
                result = RunResult(status="ok", outputs={k: data[k] for k in data.files},
                                   backend="cache")
            self._remember(key, result)
            self.hits += 1
            return result
        self.misses += 1
        return None

    def put(self, key: str, result: RunResult) -> None:
        """Remember a successful reference run.

        Failed runs are not kept: a timeout under load or a toolchain hiccup must not condemn
        every later candidate of the task.
        """
        if result.status != "ok":
            return
        self._remember(key, result)
        if self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.directory / f"{key}.tmp.npz"
            np.savez(tmp, **result.outputs)
            tmp.replace(self.directory / f"{key}.npz")  # atomic: readers never see half a file

    def _remember(self, key: str, result: RunResult) -> None:
        self._mem[key] = result
        self._mem.move_to_end(key)
        while len(self._mem) > self.max_entries:
            self._mem.popitem(last=False)


_DEFAULT_CACHE = ReferenceCache()


def _copy(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.array(v, copy=True) for k, v in arrays.items()}


def _verdict(candidate_src: str, spec: TaskSpec, backend: str, **kw: object) -> Verdict:
    name = backend if backend in _VERDICT_BACKENDS else "none"
    return Verdict(program_id=content_hash(candidate_src), task_id=spec.task_id, backend=name,
                   **kw)


def _compile_only(candidate_src: str, spec: TaskSpec, backend: ExecutionBackend) -> Verdict:
    ok, log = backend.compile(candidate_src, spec)  # type: ignore[attr-defined]
    return _verdict(candidate_src, spec, "compile-only", compiled=ok, compile_log=log,
                    failure=None if ok else "compile-error",
                    detail="compile-only backend: compiled, not executed" if ok else log[-2000:])


def _modified_inputs(spec: TaskSpec, before: dict[str, np.ndarray],
                     after: dict[str, np.ndarray]) -> str | None:
    for arg in spec.tensors:
        if arg.role == "input" and arg.name in after:
            if before[arg.name].tobytes() != np.ascontiguousarray(after[arg.name]).tobytes():
                return arg.name
    return None


def _run_all(backend: ExecutionBackend, source: str, spec: TaskSpec,
             inputs_list: list[dict[str, np.ndarray]], sizes: dict[str, int] | None,
             timeout_s: float) -> list[RunResult]:
    """Run ``source`` on every input set (copies), in one batch when the backend can.

    Stops after the first non-``ok`` run, so the list may be shorter than ``inputs_list``.
    """
    copies = [_copy(inputs) for inputs in inputs_list]
    run_many = getattr(backend, "run_many", None)
    if run_many is not None:
        return list(run_many(source, spec, copies, sizes=sizes, timeout_s=timeout_s))
    results = []
    for inputs in copies:
        results.append(backend.run(source, spec, inputs, sizes=sizes, timeout_s=timeout_s))
        if results[-1].status != "ok":
            break
    return results


def _reference_runs(reference_src: str, spec: TaskSpec, seeds: list[int],
                    all_inputs: list[dict[str, np.ndarray]], sizes: dict[str, int] | None,
                    backend: ExecutionBackend, cache: ReferenceCache,
                    timeout_s: float) -> list[RunResult]:
    """Reference results per seed: cached ones reused, the rest run in one batch and cached."""
    # The implementation is part of the key, not just the backend's name: two backends that
    # both call themselves "cpu" (the emulator and a test double, say) must never share outputs.
    backend_id = f"{backend.name}:{type(backend).__module__}.{type(backend).__qualname__}"
    keys = [cache.key(reference_src, spec, sizes, s, backend_id) for s in seeds]
    found = [cache.get(k) for k in keys]
    missing = [i for i, r in enumerate(found) if r is None]
    if missing:
        ran = _run_all(backend, reference_src, spec, [all_inputs[i] for i in missing], sizes,
                       timeout_s)
        for i, result in zip(missing, ran):
            cache.put(keys[i], result)
            found[i] = result
    # A batch that stopped early left later seeds unrun: its last result says why.
    return [r if r is not None else ran[-1] for r in found]


def check_equivalence(candidate_src: str, reference_src: str, spec: TaskSpec, *,
                      backend: ExecutionBackend | None = None, trials: int | None = None,
                      seed: int | None = None, sizes: dict[str, int] | None = None,
                      cache: ReferenceCache | None = None,
                      settings: VerifySettings | None = None) -> Verdict:
    """Decide whether ``candidate_src`` computes what ``reference_src`` computes.

    Args:
        candidate_src: The candidate program (untrusted).
        reference_src: The task's reference program.
        spec: The task (launcher, arguments, sizes, tolerances).
        backend: Where to run; ``select.get_backend(settings.backend)`` when None.
        trials: Number of seeded input sets (settings default: 5).
        seed: First seed (settings default: 42).
        sizes: Size overrides for every trial.
        cache: Reference-output cache (a process-wide in-memory one by default).
        settings: Verify settings; the backend's own ``settings`` attribute, else defaults,
            when None.

    Returns:
        A Verdict naming the backend that ran: ``equivalent`` True/False, or None when nothing
        could be compared (compile-only backend, failing reference); ``failure`` is the
        candidate's run status or comparison failure kind; max errors over all trials.

    Raises:
        ValueError: ``trials`` < 1, or the spec cannot generate inputs.
    """
    # A backend built with its own settings (timeout, cache) lends them when none are given.
    settings = settings or getattr(backend, "settings", None) or VerifySettings()
    trials = settings.trials if trials is None else trials
    seed = settings.seed if seed is None else seed
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if backend is None:
        from structcover.tools.verify.select import get_backend

        backend = get_backend(settings.backend, settings=settings)
    if backend.name == "compile-only":
        return _compile_only(candidate_src, spec, backend)
    cache = _DEFAULT_CACHE if cache is None else cache
    max_abs = max_rel = 0.0
    notes: list[str] = []
    first_timing, first_energy = None, None
    seeds = [seed + t for t in range(trials)]
    all_inputs = [make_inputs(spec, s, sizes) for s in seeds]
    refs = _reference_runs(reference_src, spec, seeds, all_inputs, sizes, backend, cache,
                           settings.timeout_s)
    for trial_seed, ref in zip(seeds, refs):
        if ref.status != "ok":
            return _verdict(candidate_src, spec, backend.name, equivalent=None,
                            failure="reference-failed",
                            detail=f"reference {ref.status} on seed {trial_seed}: {ref.detail}")
    cands = _run_all(backend, candidate_src, spec, all_inputs, sizes, settings.timeout_s)
    if len(cands) < trials and all(c.status == "ok" for c in cands):
        return _verdict(candidate_src, spec, backend.name, equivalent=None, failure="crash",
                        detail=f"backend returned {len(cands)} results for {trials} trials")
    for trial_seed, inputs, ref, cand in zip(seeds, all_inputs, refs, cands):
        if cand.status != "ok":
            compiled = {"compile-error": False, "rejected": None}.get(cand.status, True)
            return _verdict(candidate_src, spec, backend.name, equivalent=False, compiled=compiled,
                            failure=cand.status, compile_log=cand.detail
                            if cand.status == "compile-error" else "",
                            detail=f"seed {trial_seed}: {cand.status}: {cand.detail}".strip())
        if first_timing is None:
            first_timing, first_energy = cand.timing, cand.energy_j
            # Say where and how it ran (device, isolation) in the verdict too.
            notes += [line for line in cand.detail.splitlines()
                      if line.startswith(("sandbox:", "gpu:"))]
        changed = _modified_inputs(spec, inputs, cand.inputs_after)
        if changed:
            return _verdict(candidate_src, spec, backend.name, equivalent=False, compiled=True,
                            failure="modified-inputs",
                            detail=f"seed {trial_seed}: input {changed!r} changed by the call")
        for arg in spec.tensors:
            if arg.role == "input":
                continue
            atol, rtol = spec.tolerance(arg.dtype)
            if arg.name not in cand.outputs:
                return _verdict(candidate_src, spec, backend.name, equivalent=False, compiled=True,
                                failure="missing-output",
                                detail=f"seed {trial_seed}: no output {arg.name!r}")
            cmp = compare_output(arg.name, np.asarray(cand.outputs[arg.name]),
                                 np.asarray(ref.outputs[arg.name]), arg.dtype, atol, rtol)
            max_abs, max_rel = max(max_abs, cmp.max_abs_error), max(max_rel, cmp.max_rel_error)
            notes += [n for n in cmp.notes if n not in notes]
            if not cmp.ok:
                return _verdict(candidate_src, spec, backend.name, equivalent=False, compiled=True,
                                failure=cmp.failure, max_abs_error=max_abs,
                                max_rel_error=max_rel, first_mismatch=cmp.first_mismatch,
                                detail=f"seed {trial_seed}: {cmp.detail}")
    return _verdict(candidate_src, spec, backend.name, equivalent=True, compiled=True,
                    max_abs_error=max_abs, max_rel_error=max_rel, timing=first_timing,
                    energy_j=first_energy,
                    detail="; ".join([f"{trials} trials from seed {seed}", *notes]))
