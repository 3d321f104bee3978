"""Bindings of the planner and the verification pipeline (``tools.curation.planner``,
``tools.verify.pipeline``) to the campaign's ports."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from structcover.graphs.state import Verdict

#: Pipeline stage names -> the campaign's.
_STAGE = {"hacking": "anti-hacking"}


@dataclass
class PlannerBinding:
    """The planner port over ``tools.curation.planner.plan_chains``."""

    store: Any
    dims: dict[str, Any]
    #: Operators to plan with, corpus-measured effects and operator statistics (None: the
    #: registered operators and the shipped tables, read once on the first plan).
    operators: Any = None
    effects: Any = None
    stats: Any = None
    #: Plans by family, then (parent features, target, seed, k): a target's retries ask again
    #: for the same parents, and a family's evidence changes only between steps.
    cache: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)
    #: Predicted effects by family, then (parent features, axes): planning one parent toward
    #: every bin of its task predicts each operator chain once.
    memos: dict[str, dict[str, dict[tuple[str, ...], Any]]] = field(default_factory=dict)
    #: What each memo's predictions were made from (``plan_chains``'s ``trace``), by family
    #: and memo key; kept as the next ``prior`` when the family's evidence changes, so that
    #: re-planning predicts again only the chains the new outcomes touch.
    traces: dict[str, dict[str, dict[tuple[str, ...], Any]]] = field(default_factory=dict)
    priors: dict[str, dict[str, dict[tuple[str, ...], Any]]] = field(default_factory=dict)
    _outcomes: tuple[int, list[Any]] = (-1, [])
    #: Effect models by (family, axes) for the outcomes in ``_outcomes``.
    _models: dict[tuple[str, tuple[str, ...]], Any] = field(default_factory=dict)
    #: The family's operator-outcome count its cached plans and memos were made for.
    _cached_for: dict[str, int] = field(default_factory=dict)
    #: Memory's operator-outcome count of all families, and of each family asked at it.
    _counts: tuple[int, dict[str, int]] = field(default_factory=lambda: (-1, {}))

    def plan(self, features: dict[str, Any], bounds: dict[str, str], *, seed: int, k: int,
             family: str = "", operators: frozenset[str] | None = None,
             first_steps: Mapping[str, Mapping[str, Any]] | None = None) -> list[list[str]]:
        """Ranked operator chains toward ``bounds`` (memory's operator outcomes included).

        A family's plans are kept until memory records another outcome *of that family*:
        planning costs tens of milliseconds per parent, and re-planning every family after
        each step's outcomes made planning most of a campaign's time. Another family's new
        outcomes (observed transitions the planner falls back on) reach this family's plans
        when its own evidence next changes.
        """
        seen = self._family_count(family)
        if self._cached_for.get(family) != seen:
            self.cache.pop(family, None)  # never asked for again: drop, not accumulate
            self.memos.pop(family, None)
            self.priors[family] = self.traces.pop(family, {})
            self._cached_for[family] = seen
        feats = sorted(features.items())
        only = sorted(operators) if operators is not None else None
        plans = self.cache.setdefault(family, {})
        # Two programs with one feature vector may still differ in where an operator lands.
        landed = sorted((op, sorted((a, str(v)) for a, v in vals.items()
                                    if a.startswith("pattern.") or a in bounds))
                        for op, vals in (first_steps or {}).items())
        key = json.dumps([feats, sorted(bounds.items()), seed, k, only, landed], default=str)
        if key not in plans:
            mkey = json.dumps([feats, sorted(bounds), only, landed], default=str)
            memo = self.memos.setdefault(family, {}).setdefault(mkey, {})
            trace = self.traces.setdefault(family, {}).setdefault(mkey, {})
            plans[key] = self._plan(features, bounds, seed=seed, k=k, family=family, memo=memo,
                                    only=operators, first_steps=first_steps, trace=trace,
                                    prior=self.priors.get(family, {}).get(mkey))
        return [list(c) for c in plans[key]]

    def _family_count(self, family: str) -> int:
        """Memory's operator-outcome count on ``family`` (all families for ""), asked of the
        store only when the count of all families moved: outcomes are only ever added, so
        an unchanged total is an unchanged count of every family (one store call per plan,
        not two: each is a hop to the store's thread)."""
        total = self.store.count_operator_outcomes()
        state = self._counts  # one tuple: threads never pair one total with another's counts
        if state[0] != total:
            state = (total, {})
            self._counts = state
        counts = state[1]
        if family not in counts:
            counts[family] = total if not family else self.store.count_operator_outcomes(family)
        return counts[family]

    def _plan(self, features: dict[str, Any], bounds: dict[str, str], *, seed: int, k: int,
              family: str, memo: dict[tuple[str, ...], Any],
              only: frozenset[str] | None = None,
              first_steps: Mapping[str, Mapping[str, Any]] | None = None,
              trace: dict[tuple[str, ...], Any] | None = None,
              prior: Mapping[tuple[str, ...], Any] | None = None) -> list[list[str]]:
        from structcover.tools.curation.effects_table import load_effects
        from structcover.tools.curation.planner import plan_chains
        from structcover.tools.mutations.stats import load_stats

        # Parsed once: every plan of a campaign read and validated both JSON tables again.
        if self.effects is None:
            self.effects = load_effects()
        if self.stats is None:
            self.stats = load_stats()
        from structcover.tools.curation.planner import effect_model
        from structcover.tools.mutations.base import registry

        # The total :meth:`plan` just read (outcomes are recorded between steps, not while
        # a step plans): asking the store again bought nothing.
        seen = self._counts[0]
        if self._outcomes[0] != seen:  # memory's outcomes, read again only when they grew
            self._outcomes = (seen, list(self.store.operator_outcomes()))
            self._models = {}
        every = self.operators if self.operators is not None else registry()
        ops = every if only is None else {n: i for n, i in every.items() if n in only}
        if not ops:
            return []
        if first_steps:
            # The dry runs fix the first step; a later step may be any operator, since the
            # first one rewrote the program (ownership makes a histogram a lane loop the lane
            # operators take). Chains whose later steps do not apply are skipped by a dry run
            # before they cost anything.
            ops = every
        # One model per (family, axes) for the current outcomes, with every operator: indexing
        # the evidence was two thirds of each plan.
        mkey = (family, tuple(bounds))
        model = self._models.get(mkey)
        if model is None:
            model = effect_model(every, list(bounds), family=family or None, dims=self.dims,
                                 outcomes=self._outcomes[1], effects=self.effects,
                                 stats=self.stats)
            self._models[mkey] = model
        plan = plan_chains(features, bounds, family=family or None, dims=self.dims, k=k,
                           seed=seed, outcomes=self._outcomes[1], operators=ops,
                           effects=self.effects, stats=self.stats, memo=memo, model=model,
                           applicable=only or (), first_steps=first_steps, trace=trace,
                           prior=prior)
        # Only chains predicted to reach the bin: a chain that merely gets closer lands its
        # candidate in another bin, which the campaign would pay a full verification to learn
        # (on the demo, 99 of 160 candidates: histograms keep their atomics, SpMV its
        # indirect reads whatever the thread mapping). Such a bin is targeted by its own gap.
        return [list(c.operators) for c in plan.chains if c.operators and c.reaches_target]


@dataclass
class VerifierBinding:
    """The verification port over ``tools.verify.pipeline.verify_for_bin``."""

    coverage: Any
    archive: Any
    backend: Any
    specs: dict[str, Any]
    #: A ``tools.executors`` executor (Ray) to run each check on; None: in this process (the
    #: graph's Send branches already run in parallel threads, each run sandboxed in a child).
    executor: Any = None

    def verify(self, source: str, task: str, bin: str) -> Verdict:
        """One candidate through the pipeline; an unknown task is a failed verdict."""
        spec = self.specs.get(task)
        if spec is None:
            return Verdict(ok=False, stage="no-candidate", landed_bin="", backend="",
                           checks=[], features={}, gpu_seconds=0.0,
                           reason=f"task {task!r} has no task spec (reference and inputs), "
                                  "so no candidate can be checked for equivalence")
        v = self._check(source, spec, bin)
        if _timed_out(v):
            # The time limit is wall-clock: on a loaded machine an honest candidate can run
            # past it once. A second run decides (a looping candidate costs one more limit).
            v = self._check(source, spec, bin)
            if hasattr(v, "passed") and v.passed:
                v.feedback = (v.feedback + " (timed out once, passed when run again)").strip()
        if not hasattr(v, "passed"):  # quarantined: the check killed its worker each time
            return Verdict(ok=False, stage="quarantined", landed_bin="", backend="",
                           checks=[], features={}, gpu_seconds=0.0,
                           reason=f"verification crashed its worker: {v.reason}")
        backend = v.equivalence.backend if v.equivalence is not None else ""
        on_gpu = backend == "gpu"
        return Verdict(ok=bool(v.passed),
                       stage="ok" if v.passed else _STAGE.get(str(v.stage_failed),
                                                             str(v.stage_failed)),
                       reason=v.feedback, landed_bin=str(v.landed_bin or ""), backend=backend,
                       checks=[_STAGE.get(s.stage, s.stage) for s in v.stages if s.ok],
                       features=plain(v.features),
                       gpu_seconds=sum(s.seconds for s in v.stages
                                       if on_gpu and s.stage in ("equivalence", "profile")))

    def _check(self, source: str, spec: Any, bin: str) -> Any:
        """One pipeline run: here, or as one executor task (a quarantine record if it
        killed its worker each time)."""
        if self.executor is None:
            return _verify_task((self.archive, self.backend), (source, spec, bin))
        # A Send branch's check as one executor task; GPU checks ask for a whole GPU.
        gpu = {"num_gpus": 1.0} if getattr(self.backend, "name", "") == "gpu" else None
        return next(iter(self.executor.map(_verify_task, [(source, spec, bin)], batch_size=1,
                                           resources=gpu,
                                           shared=(self.archive, self.backend))))


def _timed_out(result: Any) -> bool:
    """Whether a pipeline result failed only by running past its time limit."""
    equivalence = getattr(result, "equivalence", None)
    return (hasattr(result, "passed") and not result.passed and equivalence is not None
            and getattr(equivalence, "failure", None) == "timeout")


def _verify_task(shared: tuple[Any, Any], item: tuple[str, Any, str]) -> Any:
    """``verify_for_bin`` of one ``(source, spec, bin)`` (module-level: an executor task)."""
    from structcover.tools.verify.pipeline import verify_for_bin

    archive, backend = shared
    source, spec, bin = item
    return verify_for_bin(source, spec, bin, archive, backend)


def plain(values: dict[str, Any]) -> dict[str, Any]:
    """Feature values as plain JSON scalars (the graph state is checkpointed)."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if hasattr(v, "item") and callable(v.item):
            v = v.item()
        if v is None or isinstance(v, str | bool | int):
            out[k] = v
        elif isinstance(v, float):
            out[k] = None if v != v else v
    return out


def bind_planner(store: Any, archive: Any = None) -> PlannerBinding:
    """The planner port (the archive's dimensions place non-pattern axes)."""
    return PlannerBinding(store, {d.name: d for d in getattr(archive, "dims", [])})


def bind_verifier(coverage: Any, archive: Any, backend: str, settings: Any,
                  executor: Any = None) -> VerifierBinding:
    """The verification port on the chosen backend, with the corpus task specs (checks run
    through ``executor`` when one is given)."""
    # Imported here, in the caller's thread: the campaign's fan-out verifies in threads, and
    # two threads importing the pipeline's package tree at once can see a module half
    # initialised (``cannot import name 'CompileResult'``), which lost a verification.
    import structcover.tools.kernelbench.verify  # noqa: F401
    import structcover.tools.verify.pipeline  # noqa: F401
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.verify.preflight import require_jail
    from structcover.tools.verify.select import get_backend

    # Every candidate (and every operator's compile check) runs in the jail: without one the
    # campaign would spend its budget on refusals and report them as gaps no operator reaches.
    require_jail("the campaign")
    specs = {t.task_id: t for f in load_corpus() for t in f.tasks}
    return VerifierBinding(coverage, archive, get_backend(backend, settings=settings.verify),
                           specs, executor)
