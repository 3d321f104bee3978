"""Verify one candidate for one target bin: compile → structure → anti-hacking → equivalence →
profile, stopping at the first failed stage, with feedback the Synthesizer can act on.

The pipeline only orchestrates public entry points — the compile service, feature extraction,
the archive's binning, ``hacking.run_checks`` and ``equivalence.check_equivalence`` — so
stricter checks there apply here unchanged. It never raises because of the candidate: a
program that breaks a stage (even by crashing a tool) gets a verdict naming that stage. It
raises only for bad calls (a target bin the archive does not have).

Example::

    verdict = verify_for_bin(src, spec, "pattern.reuse=smem_tiling,...", archive, backend,
                             reference=ref_src)
    if not verdict.passed:
        retry_with(verdict.feedback)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from structcover.schema import CompileStats, TaskSpec, Timing, Verdict, content_hash
from structcover.tools.compiler.errors import CompileError
from structcover.tools.coverage.archive import Archive
from structcover.tools.curation.targets import (
    AxisMiss,
    axis_misses,
    bin_levels,
    program_bin,
)
from structcover.tools.store.models import AttemptOutcome, AttemptRecord
from structcover.tools.verify.backend import ExecutionBackend

PipelineStage = Literal["compile", "structure", "hacking", "equivalence", "profile"]
#: Stages in the order they run.
STAGES: tuple[PipelineStage, ...] = ("compile", "structure", "hacking", "equivalence",
                                     "profile")


class StageResult(BaseModel):
    """How one stage went."""

    stage: PipelineStage
    ok: bool
    seconds: float
    detail: str = ""


class CandidateVerdict(BaseModel):
    """Everything verifying one candidate for one bin found, and what to tell the Synthesizer."""

    program_id: str
    task_id: str
    target_bin: str = Field(description="the target as asked (label, or axis=level list)")
    passed: bool = Field(description="compiled, landed in the target bin, passed the "
                         "anti-hacking checks and was verified equivalent")
    stage_failed: PipelineStage | None = None
    stages: list[StageResult] = Field(default_factory=list)
    compile_errors: list[CompileError] = Field(default_factory=list)
    compile_stats: list[CompileStats] = Field(default_factory=list)
    landed_bin: str | None = None
    landed_levels: dict[str, str | None] = Field(default_factory=dict)
    bin_misses: list[AxisMiss] = Field(default_factory=list)
    features: dict[str, Any] = Field(default_factory=dict, description="extracted values")
    hacking_flags: list[str] = Field(default_factory=list)
    equivalence: Verdict | None = None
    profile: Timing | None = None
    feedback: str = Field(default="", description="one paragraph for the next try")

    @property
    def equivalent(self) -> bool | None:
        """The equivalence verdict (None when that stage was not reached or was undecided)."""
        return None if self.equivalence is None else self.equivalence.equivalent

    @property
    def ok(self) -> bool:
        """Same as :attr:`passed`."""
        return self.passed

    @property
    def stage(self) -> str:
        """The failed stage, or ``passed``."""
        return self.stage_failed or "passed"

    @property
    def backend(self) -> str:
        """Backend that judged equivalence ("" when that stage was not reached)."""
        return self.equivalence.backend if self.equivalence is not None else ""

    @property
    def gpu_seconds(self) -> float:
        """Wall seconds spent on a GPU (equivalence and profile on the ``gpu`` backend)."""
        if self.backend != "gpu":
            return 0.0
        return sum(s.seconds for s in self.stages if s.stage in ("equivalence", "profile"))

    def attempt(self, round: int, *, operators: list[str] | None = None,
                parent_id: str | None = None) -> AttemptRecord:
        """This verdict as a memory :class:`AttemptRecord` for its target gap."""
        outcome: AttemptOutcome = ("filled" if self.passed else "wrong_bin"
                                   if self.stage_failed == "structure" else "failed")
        return AttemptRecord(round=round, outcome=outcome, stage=self.stage_failed or "passed",
                             reason=self.feedback, candidate_id=self.program_id,
                             parent_id=parent_id, operators=list(operators or []),
                             landed_bin=self.landed_bin)


def resolve_reference(task: TaskSpec) -> str:
    """The reference source of ``task``: its ``reference`` path (as given, or under the
    corpus root), else the corpus family's reference.

    Raises:
        ValueError: No reference can be found (the message names the task).
    """
    from structcover.tools.data.corpus import corpus_root, find_task

    if task.reference:
        for cand in (Path(task.reference), corpus_root() / task.reference):
            if cand.is_file():
                return cand.read_text()
    try:
        return find_task(task.task_id)[1].reference.source
    except KeyError:
        pass
    raise ValueError(f"task {task.task_id}: no reference source (reference="
                     f"{task.reference!r} not found, not a corpus task); pass reference=")


def _target_text(target: str | Mapping[str, str]) -> str:
    return target if isinstance(target, str) else ",".join(f"{a}={v}" for a, v in
                                                           target.items())


def _compile_stage(source: str, verdict: CandidateVerdict) -> str | None:
    from structcover.tools.compiler.service import compile_program

    result = compile_program(source)
    verdict.compile_stats = list(result.stats)
    if not result.ok:
        from structcover.tools.compiler.errors import fallback_error

        verdict.compile_errors = list(result.errors) or [fallback_error(result.log, result.via)]
        return "does not compile: " + "; ".join(_error_text(e) for e in
                                                 verdict.compile_errors[:5])
    return result.no_kernel_reason()


def _error_text(e: CompileError) -> str:
    where = f"line {e.line}: " if e.line else ""
    code = f" (`{e.source_line.strip()}`)" if e.source_line else ""
    return f"{where}{e.message}{code}"


def _structure_stage(source: str, archive: Archive, wanted: dict[str, str], target_label: str
                     | None, verdict: CandidateVerdict) -> str | None:
    from structcover.tools.features.extract import extract_features

    verdict.features = dict(extract_features(source).values)
    verdict.landed_bin, verdict.landed_levels = program_bin(archive, verdict.features)
    if verdict.landed_bin is None:
        unbinned = [a for a, lv in verdict.landed_levels.items() if lv is None]
        return f"cannot be binned: no known value for {', '.join(unbinned)}"
    if wanted:
        verdict.bin_misses = axis_misses(wanted, verdict.landed_levels)
        hit = not verdict.bin_misses
    else:  # CVT archive: only whole labels compare
        hit = verdict.landed_bin == target_label
    if hit:
        return None
    why = "; ".join(m.describe() for m in verdict.bin_misses)
    return f"landed in bin {verdict.landed_bin} instead of {verdict.target_bin}" + (
        f" ({why})" if why else "")


def _hacking_stage(source: str, spec: TaskSpec, verdict: CandidateVerdict) -> str | None:
    from structcover.tools.verify.hacking import hard_failures, run_checks

    results = run_checks(source, spec)
    verdict.hacking_flags = [f"{r.name} ({r.severity})" for r in results if not r.ok]
    hard = hard_failures(results)
    return ("rejected by anti-hacking checks: " + "; ".join(f"{r.name}: {r.reason}"
                                                             for r in hard)) if hard else None


def _equivalence_stage(source: str, reference: str, spec: TaskSpec,
                       backend: ExecutionBackend | None, options: dict[str, Any],
                       verdict: CandidateVerdict) -> str | None:
    from structcover.tools.verify.equivalence import check_equivalence

    v = check_equivalence(source, reference, spec, backend=backend, **options)
    verdict.equivalence = v
    # The authoritative flags are the equivalence check's own (it runs the checks too).
    verdict.hacking_flags = list(v.hacking_flags) or verdict.hacking_flags
    if v.equivalent is True:
        return None
    if v.equivalent is None:
        # Undecided is not verified: a program that only ever escapes judgement must not pass.
        return f"equivalence not established on {v.backend} ({v.failure}): {v.detail}"
    parts = [f"not equivalent on {v.backend}: {v.failure}: {v.detail}"]
    if v.first_mismatch is not None:
        parts.append(f"first mismatch at index {v.first_mismatch}")
    if v.max_abs_error is not None and v.failure not in (None, "hacking"):
        parts.append(f"max abs error {v.max_abs_error:.3g}, max rel error "
                     f"{(v.max_rel_error or 0):.3g}")
    return "; ".join(parts)


def _profile_stage(backend: ExecutionBackend | None, verdict: CandidateVerdict) -> str | None:
    # Timing comes from the equivalence runs on the GPU backend; elsewhere there is no
    # meaningful time to report (the emulator's time says nothing about a GPU).
    if backend is None or backend.name != "gpu" or verdict.equivalence is None:
        return None
    verdict.profile = verdict.equivalence.timing
    return None


def verify_for_bin(candidate_source: str, task: TaskSpec, target_bin: str | Mapping[str, str],
                   archive: Archive, backend: ExecutionBackend | None, *,
                   reference: str | None = None,
                   equivalence_options: Mapping[str, Any] | None = None,
                   clock: Callable[[], float] = time.perf_counter) -> CandidateVerdict:
    """Run a candidate through every stage; stop at the first that fails.

    Args:
        candidate_source: The candidate program (untrusted).
        task: Its task spec (launcher, arguments, sizes, tolerances).
        target_bin: The bin it should land in: a label of ``archive`` or ``{axis: level}``
            for some of its axes.
        archive: The frozen coverage archive.
        backend: Execution backend for equivalence (None: ``check_equivalence`` picks one from
            the settings). A ``gpu`` backend also yields the profile.
        reference: The task's reference program source; :func:`resolve_reference` when None.
        equivalence_options: Extra keyword arguments for ``check_equivalence`` (``trials``,
            ``seed``, ``cache``, ``settings``).
        clock: Time source for per-stage seconds (tests pass a fake).

    Returns:
        The verdict: ``passed``, the failed stage, structured details and ``feedback``.

    Raises:
        ValueError: ``target_bin`` is not a bin (or axis/level) of ``archive``, or no
            reference was given and none can be found for ``task``.
    """
    wanted = bin_levels(archive, target_bin)  # a bad target is the caller's error: raise
    kernelbench = task.kind == "kernelbench"  # the reference is the task's problem file
    if reference is None and not kernelbench:
        reference = resolve_reference(task)
    verdict = CandidateVerdict(program_id=content_hash(candidate_source), task_id=task.task_id,
                               target_bin=_target_text(target_bin), passed=False)
    label = target_bin if isinstance(target_bin, str) else None
    steps: dict[PipelineStage, Callable[[], str | None]] = {
        "compile": lambda: _compile_stage(candidate_source, verdict),
        "structure": lambda: _structure_stage(candidate_source, archive, wanted, label, verdict),
        "hacking": lambda: _hacking_stage(candidate_source, task, verdict),
        "equivalence": lambda: _equivalence_stage(candidate_source, reference or "", task, backend,
                                                  dict(equivalence_options or {}), verdict),
        "profile": lambda: _profile_stage(backend, verdict),
    }
    if kernelbench:
        # A Python candidate: its embedded CUDA compiles, torch-side checks, and the
        # KernelBench protocol against the problem's Model (tools/kernelbench/for_bin.py).
        from structcover.tools.kernelbench.for_bin import kernelbench_steps

        steps.update(kernelbench_steps(candidate_source, task, backend,
                                       dict(equivalence_options or {}), verdict))
    for stage in STAGES:
        start = clock()
        try:
            problem = steps[stage]()
        except Exception as exc:  # noqa: BLE001 — a candidate that breaks a tool fails the stage
            problem = f"{stage} stage could not process the candidate: {type(exc).__name__}: " \
                      f"{str(exc)[:300]}"
        verdict.stages.append(StageResult(stage=stage, ok=problem is None,
                                          seconds=round(clock() - start, 6),
                                          detail=problem or ""))
        if problem is not None:
            verdict.stage_failed = stage
            verdict.feedback = f"{stage} failed: {problem}"
            return verdict
    verdict.passed = True
    verdict.feedback = (f"passed: landed in {verdict.landed_bin} and verified equivalent on "
                        f"{verdict.equivalence.backend if verdict.equivalence else '?'}")
    return verdict
