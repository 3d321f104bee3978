"""KernelBench tasks in the verify-for-bin pipeline (``tools/verify/pipeline.py``), and their specs.

``verify_for_bin`` runs compile -> structure -> anti-hacking -> equivalence -> profile. For a
task of kind ``kernelbench`` the candidate is a Python file, so three stages change:

* **compile**: every ``load_inline`` ``cuda_sources`` text compiles on the compile service's
  device path (the device code sliced out, ``torch/extension.h`` not needed); a candidate whose
  kernel text is not static fails here as unsupported. The structure stage is unchanged: the
  feature extractor reads the embedded CUDA of a Python file.
* **anti-hacking**: the Python-side checks (``tools/verify/hacking_py.py``) plus the CUDA checks
  on the embedded sources.
* **equivalence**: :func:`~structcover.tools.kernelbench.verify.verify_kernelbench` against the
  task's problem file, on the CPU path unless the pipeline's backend is the GPU one.

:func:`problem_specs` turns the task ids of a rollout table into ``kernelbench`` task specs
from the user's problems folder (``--problems DIR``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from structcover.schema import TaskSpec

if TYPE_CHECKING:
    from structcover.tools.verify.pipeline import CandidateVerdict, PipelineStage

__all__ = ["kernelbench_steps", "problem_specs"]

#: Python-side checks that flag a KernelBench candidate without rejecting it (as in verify.py).
_NOT_REJECTING = frozenset({"defines_kernel"})


def problem_specs(task_ids: Iterable[str], problems_dir: Path | str | None
                  ) -> tuple[dict[str, TaskSpec], list[str]]:
    """``kernelbench`` task specs for the ids a problems folder resolves.

    Args:
        task_ids: Task ids of the rollouts (a problem id or a problem file path each).
        problems_dir: The user's problems folder; None resolves only ids that are file paths.

    Returns:
        ``(specs by task id, notes)``: a note per id that names no problem (why).
    """
    from structcover.tools.kernelbench.problem import resolve_problem

    specs: dict[str, TaskSpec] = {}
    notes: list[str] = []
    for task in sorted(set(map(str, task_ids))):
        try:
            problem = resolve_problem(task, problems_dir)
        except ValueError as exc:
            notes.append(f"task {task}: {exc}")
            continue
        specs[task] = problem.task_spec().model_copy(update={"task_id": task})
    return specs, notes


def kernelbench_only(specs: Mapping[str, TaskSpec] | None) -> dict[str, TaskSpec]:
    """The ``kernelbench`` specs of ``specs`` (a verifier's: corpus tasks and problems).

    A campaign gives them to its gap prompts and its LLM Synthesizer, which then ask for a
    ``ModelNew`` file against the problem instead of a generic ``.cu`` file."""
    return {task: spec for task, spec in (specs or {}).items() if spec.kind == "kernelbench"}


def _compile(source: str, verdict: CandidateVerdict) -> str | None:
    from structcover.tools.compiler.service import compile_program
    from structcover.tools.kernelbench.candidate import UnresolvedInline, find_inline_extensions

    try:
        exts = find_inline_extensions(source)
    except UnresolvedInline as exc:
        return f"unsupported: {exc}"
    problems: list[str] = []
    for ext in exts:
        for j, text in enumerate(ext.cuda_sources):
            result = compile_program(text)
            verdict.compile_stats.extend(result.stats)
            if not result.ok:
                verdict.compile_errors.extend(result.errors)
                first = result.errors[0].message if result.errors else result.log[:200]
                line = f" line {result.errors[0].line}" if result.errors and \
                    result.errors[0].line else ""
                problems.append(f"{ext.name}.cuda_sources[{j}]{line}: {first}")
    return ("does not compile: " + "; ".join(problems[:5])) if problems else None


def _hacking(source: str, spec: TaskSpec, verdict: CandidateVerdict) -> str | None:
    from structcover.tools.verify.hacking import hard_failures
    from structcover.tools.verify.hacking_py import run_python_checks

    results = run_python_checks(source)
    verdict.hacking_flags = [f"{r.name} ({r.severity})" for r in results if not r.ok]
    hard = [r for r in hard_failures(results) if r.name not in _NOT_REJECTING]
    return ("rejected by anti-hacking checks: " + "; ".join(f"{r.name}: {r.reason}"
                                                             for r in hard)) if hard else None


def _equivalence(source: str, spec: TaskSpec, backend: Any, options: dict[str, Any],
                 verdict: CandidateVerdict) -> str | None:
    from structcover.tools.kernelbench.problem import load_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    name = getattr(backend, "name", None)
    if name not in (None, "cpu", "gpu"):
        return f"equivalence not established: the {name} backend cannot run KernelBench tasks"
    assert spec.problem is not None  # a kernelbench TaskSpec always names its problem
    kw = {k: options[k] for k in ("seed", "trials", "work_budget", "timeout_s", "time_it")
          if k in options}
    v = verify_kernelbench(source, load_problem(spec.problem), backend=name or "cpu", **kw)
    v = v.model_copy(update={"task_id": spec.task_id})
    verdict.equivalence = v
    verdict.hacking_flags = list(v.hacking_flags) or verdict.hacking_flags
    if v.equivalent is True:
        return None
    if v.equivalent is None:
        return f"equivalence not established on {v.backend} ({v.failure}): {v.detail}"
    return f"not equivalent on {v.backend}: {v.failure}: {v.detail}"


def kernelbench_steps(source: str, spec: TaskSpec, backend: Any, options: dict[str, Any],
                      verdict: CandidateVerdict
                      ) -> dict[PipelineStage, Callable[[], str | None]]:
    """The pipeline stages that differ for a ``kernelbench`` task (see the module doc)."""
    return {
        "compile": lambda: _compile(source, verdict),
        "hacking": lambda: _hacking(source, spec, verdict),
        "equivalence": lambda: _equivalence(source, spec, backend, options, verdict),
    }
