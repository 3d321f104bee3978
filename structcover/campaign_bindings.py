"""Bindings of the planner and the verification pipeline (``tools.curation.planner``,
``tools.verify.pipeline``) to the campaign's ports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from structcover.graphs.state import Verdict


@dataclass
class PlannerBinding:
    """The planner port over ``tools.curation.planner``."""

    store: Any

    def plan(self, features: dict[str, Any], bounds: dict[str, str], *, seed: int,
             k: int) -> list[list[str]]:
        """Ranked operator chains toward ``bounds`` (memory's outcomes included)."""
        from structcover.tools.curation.planner import plan_chains

        plan = plan_chains(features, bounds, seed=seed, k=k, memory=self.store)
        return [list(c.operators) for c in plan.chains]


@dataclass
class VerifierBinding:
    """The verification port over ``tools.verify.pipeline.verify_for_bin``."""

    coverage: Any
    archive: Any
    backend: Any
    specs: dict[str, Any]

    def verify(self, source: str, task: str, bin: str) -> Verdict:
        """One candidate through the pipeline; an unknown task is a failed verdict."""
        from structcover.tools.verify.pipeline import verify_for_bin

        spec = self.specs.get(task)
        if spec is None:
            return Verdict(ok=False, stage="no-candidate", landed_bin="", backend="",
                           checks=[], features={}, gpu_seconds=0.0,
                           reason=f"task {task!r} has no task spec (reference and inputs), "
                                  "so no candidate can be checked for equivalence")
        v = verify_for_bin(source, spec, bin, self.archive, self.backend)
        return Verdict(ok=bool(v.ok), stage="ok" if v.ok else str(v.stage),
                       reason=str(v.feedback if hasattr(v, "feedback") else v.reason),
                       landed_bin=str(v.landed_bin or ""), backend=str(v.backend or ""),
                       checks=[s.stage for s in v.stages if s.ok],
                       features=dict(v.features or {}),
                       gpu_seconds=float(getattr(v, "gpu_seconds", 0.0) or 0.0))


def bind_planner(store: Any, archive: Any = None) -> PlannerBinding:
    """The planner port (the archive's dimensions place non-pattern axes)."""
    return PlannerBinding(store, {d.name: d for d in getattr(archive, "dims", [])})


def bind_verifier(coverage: Any, archive: Any, backend: str, settings: Any) -> VerifierBinding:
    """The verification port on the chosen backend, with the corpus task specs."""
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.verify.select import get_backend

    specs = {t.task_id: t for f in load_corpus() for t in f.tasks}
    return VerifierBinding(coverage, archive, get_backend(backend, settings=settings.verify),
                           specs)
