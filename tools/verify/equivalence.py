"""Is a candidate program equivalent to its task's reference? (docs/ARCHITECTURE.md)

``check_equivalence`` first runs the anti-hacking checks (``hacking.run_checks`` on the
preprocessed program, plus the launcher signature against the spec): their names go into
``Verdict.hacking_flags`` and a failed hard check rejects the program before it runs. It then
runs both programs through the task's launcher on ``trials`` input sets planned by
``trials.plan_trials`` (sizes from the task's ``size_ranges``, input profiles, seeds ``seed,
seed+1, …``) and returns a ``Verdict`` whose ``seed`` replays the plan. Per trial: the
candidate's status first (compile error, crash, race, deadlock, timeout, unsupported, rejected
become ``Verdict.failure``), then inputs must be unchanged after the call, then every output is
compared by ``compare.compare_output`` (outputs the task declares as long sums get an
allowance that grows with accumulation depth, ``tools/verify/accumulation.py``). The first failing
trial decides. The verdict records the trial plan, the failing trial, the backend's fiber
schedules and the tolerance rule, so ``--seed`` replays it exactly (docs/EMULATOR.md).

The seed is fresh per process unless given (settings or ``--seed``): no program can know the
inputs in advance, and every candidate of a task in one process shares the reference runs.
Messages carry counts, indices, sizes and error sizes, never data values; compile logs keep only
the diagnostics of the program's own lines (``program_diagnostics``).

Reference outputs are cached per (reference hash, spec, sizes, seed, profile, backend) in a
``ReferenceCache`` so a campaign runs each reference once per trial, not once per candidate.
"""

from __future__ import annotations

import json
import re

import numpy as np

from structcover.config import VerifySettings
from structcover.schema import TaskSpec, Verdict, content_hash
from structcover.tools.verify import accumulation
from structcover.tools.verify.backend import ExecutionBackend, RunResult
from structcover.tools.verify.compare import compare_output
from structcover.tools.verify.inputs import make_inputs
from structcover.tools.verify.reference_cache import ReferenceCache
from structcover.tools.verify.reference_cache import copy_arrays as _copy
from structcover.tools.verify.trials import Trial, fresh_seed, plan_trials

_VERDICT_BACKENDS = {"gpu", "cpu", "compile-only"}


_DEFAULT_CACHE = ReferenceCache()


def _verdict(candidate_src: str, spec: TaskSpec, backend: str, **kw: object) -> Verdict:
    name = backend if backend in _VERDICT_BACKENDS else "none"
    return Verdict(program_id=content_hash(candidate_src), task_id=spec.task_id, backend=name,
                   **kw)


def _compile_only(candidate_src: str, spec: TaskSpec, backend: ExecutionBackend) -> Verdict:
    ok, log = backend.compile(candidate_src, spec)  # type: ignore[attr-defined]
    log = program_diagnostics(log, spec)  # never text of other files
    return _verdict(candidate_src, spec, "compile-only", compiled=ok, compile_log=log,
                    failure=None if ok else "compile-error",
                    detail="compile-only backend: compiled, not executed" if ok else log)


def _modified_inputs(spec: TaskSpec, before: dict[str, np.ndarray],
                     after: dict[str, np.ndarray]) -> str | None:
    for arg in spec.tensors:
        if arg.role == "input" and arg.name in after:
            if before[arg.name].tobytes() != np.ascontiguousarray(after[arg.name]).tobytes():
                return arg.name
    return None


def _run_all(backend: ExecutionBackend, source: str, spec: TaskSpec, trials: list[Trial],
             inputs_list: list[dict[str, np.ndarray]], timeout_s: float) -> list[RunResult]:
    """Run ``source`` on every input set (copies), one batch per distinct size assignment.

    Trials with the same sizes go to the backend together (``run_many``: one sandbox child);
    results come back in trial order. Stops after the first non-``ok`` run, so the list may be
    shorter than ``trials``.
    """
    groups: dict[str, list[int]] = {}
    for i, trial in enumerate(trials):
        groups.setdefault(json.dumps(trial.sizes, sort_keys=True), []).append(i)
    results: dict[int, RunResult] = {}
    run_many = getattr(backend, "run_many", None)
    for members in groups.values():
        sizes = trials[members[0]].sizes
        copies = [_copy(inputs_list[i]) for i in members]
        if run_many is not None:
            ran = list(run_many(source, spec, copies, sizes=sizes, timeout_s=timeout_s))
        else:
            ran = []
            for inputs in copies:
                ran.append(backend.run(source, spec, inputs, sizes=sizes, timeout_s=timeout_s))
                if ran[-1].status != "ok":
                    break
        results.update(zip(members, ran, strict=False))  # a batch may stop early
        if len(ran) < len(members) or any(r.status != "ok" for r in ran):
            break
    out = []
    for i in range(len(trials)):  # the prefix that ran, in trial order
        if i not in results:
            break
        out.append(results[i])
    return out


def _backend_id(backend: ExecutionBackend) -> str:
    # The implementation is part of the key, not just the backend's name: two backends that
    # both call themselves "cpu" (the emulator and a test double, say) must never share outputs.
    return f"{backend.name}:{type(backend).__module__}.{type(backend).__qualname__}"


def _reference_runs(reference_src: str, spec: TaskSpec, trials: list[Trial],
                    all_inputs: list[dict[str, np.ndarray]], backend: ExecutionBackend,
                    cache: ReferenceCache, timeout_s: float) -> list[RunResult]:
    """Reference results per trial: cached ones reused, the rest run in batches and cached."""
    keys = [cache.key(reference_src, spec, t.sizes, t.seed, _backend_id(backend), t.profile)
            for t in trials]
    found = [cache.get(k) for k in keys]
    missing = [i for i, r in enumerate(found) if r is None]
    if missing:
        ran = _run_all(backend, reference_src, spec, [trials[i] for i in missing],
                       [all_inputs[i] for i in missing], timeout_s)
        for i, result in zip(missing, ran, strict=False):
            cache.put(keys[i], result)
            found[i] = result
        last = ran[-1] if ran else RunResult(status="crash", detail="backend returned no result")
        # A batch that stopped early left later trials unrun: its last result says why.
        return [r if r is not None else last for r in found]
    return [r for r in found if r is not None]


#: A compiler diagnostic header: ``file:line[:col]: kind: message``.
_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+)(?::\d+)?:\s*(?P<kind>fatal error|error|"
                   r"warning)\s*:\s*(?P<msg>.*)$")


def program_diagnostics(log: str, spec: TaskSpec, *, limit: int = 20) -> str:
    """The compiler diagnostics about the program's own lines, without echoed source text.

    A compile log can carry text of other files: an ``#include`` of a host file, a ``#line``
    naming one (the compiler echoes the named file's line), the runtime's headers. Only
    ``file:line: error|warning: message`` lines whose file is the program itself (its task
    file name, ``program.cu``/``program.cpp``) are kept; source echoes, carets, notes and
    "included from" lines are dropped.

    Args:
        log: The backend's compile log.
        spec: The task (its id names the program file).
        limit: Most diagnostics kept.

    Returns:
        The kept lines, or a fixed sentence when none remain.
    """
    own = {f"{spec.task_id}.cu", "program.cu", "program.cpp", "candidate.cu"}
    kept = []
    for line in log.splitlines():
        m = _DIAG.match(line.strip())
        if m and m.group("file").strip().rsplit("/", 1)[-1] in own and "/" not in m.group("file"):
            kept.append(f"line {m.group('line')}: {m.group('kind')}: {m.group('msg')[:200]}")
        if len(kept) >= limit:
            break
    return "\n".join(kept) if kept else ("the program does not compile (no diagnostic points "
                                         "at its own lines)")


_FLOAT = re.compile(r"(?<![\w.\[])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?[fF]?"
                    r"|\b(?:nan|inf)\b", re.I)


def _run_detail(status: str, detail: str) -> str:
    """A backend's failure detail, cut to what cannot carry data out.

    First line only (later lines may hold the program's stdout or stderr), at most 300
    characters, and decimal numbers replaced by ``…`` (a race report quotes the differing
    values); integers such as indices, byte offsets and line numbers stay.
    """
    first = detail.strip().splitlines()[0] if detail.strip() else ""
    return _FLOAT.sub("…", first[:300])


_SESSION_SEED: int | None = None


def session_seed() -> int:
    """This process's verification seed: drawn once from OS entropy, then reused.

    Fresh per process, so no program can know its inputs; shared within the process, so every
    candidate of a task is judged on the same inputs and the reference runs once per trial.
    """
    global _SESSION_SEED
    if _SESSION_SEED is None:
        _SESSION_SEED = fresh_seed()
    return _SESSION_SEED


def _static_checks(candidate_src: str, spec: TaskSpec) -> tuple[list[str], list[str]]:
    """Failed anti-hacking checks as ``(flags, hard reasons)``; flags name every failed check."""
    from structcover.tools.verify.hacking import run_checks

    flags, hard = [], []
    for result in run_checks(candidate_src, spec=spec):
        if not result.ok:
            flags.append(f"{result.name} ({result.severity})")
            if result.severity == "hard":
                hard.append(f"{result.name}: {result.reason}")
    return flags, hard


def check_equivalence(candidate_src: str, reference_src: str, spec: TaskSpec, *,
                      backend: ExecutionBackend | None = None, trials: int | None = None,
                      seed: int | None = None, sizes: dict[str, int] | None = None,
                      cache: ReferenceCache | None = None,
                      settings: VerifySettings | None = None, checks: bool = True) -> Verdict:
    """Decide whether ``candidate_src`` computes what ``reference_src`` computes.

    Args:
        candidate_src: The candidate program (untrusted).
        reference_src: The task's reference program.
        spec: The task (launcher, arguments, sizes, size ranges, input profiles, tolerances).
        backend: Where to run; ``select.get_backend(settings.backend)`` when None.
        trials: Number of input sets (settings default: 5).
        seed: The verification's seed (settings' seed, else this process's fresh seed); the
            verdict records it, and passing it again replays the same sizes and inputs.
        sizes: Fixed sizes for every trial (turns off size ranges and input profiles).
        cache: Reference-output cache (a process-wide in-memory one by default).
        settings: Verify settings; the backend's own ``settings`` attribute, else defaults,
            when None.
        checks: Run the anti-hacking checks first (False only for test doubles whose
            "programs" are not CUDA).

    Returns:
        A Verdict naming the backend that ran: ``equivalent`` True/False, or None when nothing
        could be compared (compile-only backend, failing reference); ``failure`` is
        ``hacking`` (a hard check failed), the candidate's run status or the comparison's
        failure kind; ``hacking_flags`` lists every failed check; max errors over all trials.

    Raises:
        ValueError: ``trials`` < 1, or the spec cannot generate inputs.
    """
    # A backend built with its own settings (timeout, cache) lends them when none are given.
    settings = settings or getattr(backend, "settings", None) or VerifySettings()
    trials = settings.trials if trials is None else trials
    seed = seed if seed is not None else settings.seed if settings.seed is not None \
        else session_seed()
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    flags: list[str] = []
    if checks:
        flags, hard = _static_checks(candidate_src, spec)
        if hard:
            return _verdict(candidate_src, spec, backend.name if backend else "none",
                            equivalent=False, failure="hacking", hacking_flags=flags, seed=seed,
                            detail="rejected by anti-hacking checks: " + "; ".join(hard))
    if backend is None:
        from structcover.tools.verify.select import get_backend

        backend = get_backend(settings.backend, settings=settings)
    if backend.name == "compile-only":
        only = _compile_only(candidate_src, spec, backend)
        only.hacking_flags = flags
        return only
    cache = _DEFAULT_CACHE if cache is None else cache
    plan = plan_trials(spec, seed, trials, vary=sizes is None)
    if sizes is not None:
        plan = [Trial(t.seed, {**spec.sizes, **sizes}, t.profile) for t in plan]
    all_inputs = [make_inputs(spec, t.seed, t.sizes, t.profile) for t in plan]
    refs = _reference_runs(reference_src, spec, plan, all_inputs, backend, cache,
                           settings.timeout_s)

    # Everything a replay needs: the plan the seed expands to and the backend's schedules.
    replay = {"trial_plan": [{"seed": t.seed, "sizes": dict(t.sizes), "profile": t.profile}
                             for t in plan],
              "schedules": [str(x) for x in getattr(backend, "schedules", ()) or ()],
              "tolerance_rule": accumulation.rule_text(spec.accumulation)
              if spec.accumulation is not None else ""}

    def conclude(**kw: object) -> Verdict:
        return _verdict(candidate_src, spec, backend.name, hacking_flags=flags, seed=seed,
                        **replay, **kw)

    def at(index: int, trial: Trial) -> str:
        # A trial's own seed is not what --seed takes: name the verification's seed to replay.
        return f"trial {index + 1} of {trials} ({trial.describe()}; replay with --seed {seed})"

    for index, (trial, ref) in enumerate(zip(plan, refs, strict=True)):
        if ref.status != "ok":
            return conclude(equivalent=None, failure="reference-failed", failed_trial=index,
                           detail=f"reference {ref.status} on {at(index, trial)}: "
                                  f"{_run_detail(ref.status, ref.detail)}")
    cands = _run_all(backend, candidate_src, spec, plan, all_inputs, settings.timeout_s)
    if len(cands) < trials and all(c.status == "ok" for c in cands):
        return conclude(equivalent=None, failure="crash",
                       detail=f"backend returned {len(cands)} results for {trials} trials")
    max_abs = max_rel = 0.0
    notes: list[str] = []
    first_timing, first_energy = None, None
    for index, (trial, inputs, ref, cand) in enumerate(zip(plan, all_inputs, refs, cands,
                                                           strict=False)):
        where = at(index, trial)
        if cand.status != "ok":
            compiled = {"compile-error": False, "rejected": None}.get(cand.status, True)
            if cand.status == "compile-error":
                log = program_diagnostics(cand.detail, spec)
                return conclude(equivalent=False, compiled=False, failure=cand.status,
                               compile_log=log, failed_trial=index,
                               detail=f"{where}: compile-error: {log}")
            return conclude(equivalent=False, compiled=compiled, failure=cand.status,
                           failed_trial=index, detail=f"{where}: {cand.status}: "
                                  f"{_run_detail(cand.status, cand.detail)}".strip())
        if first_timing is None:
            first_timing, first_energy = cand.timing, cand.energy_j
            # Say where and how it ran (device, isolation) in the verdict too.
            notes += [line for line in cand.detail.splitlines()
                      if line.startswith(("sandbox:", "gpu:"))][:2]
        changed = _modified_inputs(spec, inputs, cand.inputs_after)
        if changed:
            return conclude(equivalent=False, compiled=True, failure="modified-inputs",
                           failed_trial=index, detail=f"{where}: input {changed!r} changed by the call")
        for arg in spec.tensors:
            if arg.role == "input":
                continue
            atol, rtol = spec.tolerance(arg.dtype)
            if arg.name not in cand.outputs:
                return conclude(equivalent=False, compiled=True, failure="missing-output",
                               failed_trial=index, detail=f"{where}: no output {arg.name!r}")
            rule = accumulation.applies(spec, arg.name, arg.dtype)
            grown = None if rule is None else accumulation.allowance(
                rule, inputs[rule.over], spec.shape_of(arg.name, trial.sizes), arg.dtype)
            cmp = compare_output(arg.name, np.asarray(cand.outputs[arg.name]),
                                 np.asarray(ref.outputs[arg.name]), arg.dtype, atol, rtol,
                                 allowance=grown)
            max_abs, max_rel = max(max_abs, cmp.max_abs_error), max(max_rel, cmp.max_rel_error)
            notes += [n for n in cmp.notes if n not in notes]
            if not cmp.ok:
                return conclude(equivalent=False, compiled=True, failure=cmp.failure,
                               failed_trial=index, max_abs_error=max_abs, max_rel_error=max_rel,
                               first_mismatch=cmp.first_mismatch, detail=f"{where}: {cmp.detail}")
    tried = sorted({json.dumps(t.sizes, sort_keys=True) for t in plan})
    return conclude(equivalent=True, compiled=True, max_abs_error=max_abs, max_rel_error=max_rel,
                   timing=first_timing, energy_j=first_energy,
                   detail="; ".join([f"{trials} trials from seed {seed} over {len(tried)} size "
                                     f"sets, profiles {sorted({t.profile for t in plan})}",
                                     *notes]))
