"""Verify many candidates through an executor (local pool or Ray; GPU tasks ask for a GPU).

Each worker builds its backend once and checks the candidates of its batches with
:func:`~structcover.tools.verify.equivalence.check_equivalence`. With a fixed ``seed`` every
candidate sees the same sizes and inputs wherever it runs, so the verdicts do not depend on
the executor. A candidate that kills its worker on every try gets a verdict with
``failure="quarantined"`` instead of stopping the batch; one our machinery failed on (the
sandbox is missing, an import fails in the worker, a task error) gets ``failure="internal-error"``
with the cause: it says nothing about the candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from structcover.config import VerifySettings
from structcover.schema import TaskSpec, Verdict, content_hash
from structcover.tools.executors.base import Executor, Failed, Quarantined
from structcover.tools.executors.local import LocalExecutor

_BACKENDS: dict[str, Any] = {}


@dataclass(frozen=True)
class Candidate:
    """One verification: a candidate, its task and the task's reference source."""

    candidate: str
    reference: str
    task: TaskSpec
    program_id: str = ""


def _check(shared: tuple[str, int | None, int | None], job: Candidate) -> Verdict:
    from structcover.tools.verify.equivalence import check_equivalence
    from structcover.tools.verify.select import get_backend

    settings_json, seed, trials = shared
    if settings_json not in _BACKENDS:  # one backend per worker and settings
        settings = VerifySettings.model_validate_json(settings_json)
        _BACKENDS[settings_json] = (get_backend(settings.backend, settings=settings), settings)
    backend, settings = _BACKENDS[settings_json]
    verdict = check_equivalence(job.candidate, job.reference, job.task, backend=backend,
                                seed=seed, trials=trials, settings=settings)
    return verdict.model_copy(update={"program_id": job.program_id or content_hash(
        job.candidate)})


def verify_batch(candidates: Iterable[Candidate], *, executor: Executor | None = None,
                 settings: VerifySettings | None = None, seed: int | None = 0,
                 trials: int | None = None, batch_size: int = 4,
                 on_progress: Callable[[int], None] | None = None) -> list[Verdict]:
    """Verdicts of many candidates, in input order.

    Args:
        candidates: What to verify.
        executor: Where to run (None: a local process pool, one worker per core).
        settings: Verify settings (backend, limits); defaults when None.
        seed: One seed for every candidate (None: each verification draws its own).
        trials: Input sets per candidate (settings' default when None).
        batch_size: Candidates per task.
        on_progress: Called with the number of candidates done.

    Returns:
        One verdict per candidate; a quarantined candidate's has ``failure="quarantined"``,
        one our machinery failed on ``failure="internal-error"`` (``equivalent`` None).
    """
    settings = settings or VerifySettings()
    jobs = list(candidates)
    # GPU verification asks the scheduler for a whole GPU per task, so a cluster's GPUs run
    # in parallel and never share a timed kernel.
    resources = {"num_gpus": 1.0} if settings.backend == "gpu" else None
    own = executor is None
    ex: Executor = executor if executor is not None else LocalExecutor()
    try:
        results = list(ex.map(_check, jobs, batch_size=batch_size, resources=resources,
                              on_progress=on_progress,
                              shared=(settings.model_dump_json(), seed, trials)))
    finally:
        if own:
            ex.close()
    out: list[Verdict] = []
    for job, result in zip(jobs, results, strict=True):
        if isinstance(result, Failed):
            result = Verdict(program_id=job.program_id or content_hash(job.candidate),
                             task_id=job.task.task_id, failure="internal-error",
                             detail=result.reason)
        elif isinstance(result, Quarantined):
            result = Verdict(program_id=job.program_id or content_hash(job.candidate),
                             task_id=job.task.task_id, failure="quarantined",
                             detail=result.reason)
        out.append(result)
    return out
