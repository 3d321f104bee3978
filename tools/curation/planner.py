"""Plan operator chains (length 1-3) that move a program toward a target bin.

The planner searches chains of registered operators up to ``max_length`` breadth first — every
one-step chain, then the :data:`BEAM` most promising states of each length — predicting each
step with :class:`~structcover.tools.curation.effects.EffectModel` (observed transitions from
memory first, declared ``Moves:`` judged by the pattern rules otherwise). A chain is kept when
every step changes the predicted levels, it never revisits a state, and it ends closer to the
target than the program starts. Chains are ranked by: reaches the target, distance left,
probability (operator success rates x prediction confidence), length, then a seeded tie-break
— so the same inputs and seed always give the same plan, and another seed explores another
order among equals.

It also says which mismatched axes no chain moved at all (``Plan.unmovable``): evidence
for the Synthesizer to try an LLM rewrite instead, or for an infeasibility proof.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from structcover.tools.coverage.bins import Dimension
from structcover.tools.curation.effects import Basis, Effect, EffectModel, axis_levels
from structcover.tools.curation.effects_table import EffectsTable, load_effects
from structcover.tools.curation.targets import AxisMiss, axis_misses
from structcover.tools.mutations.base import OperatorInfo, registry
from structcover.tools.mutations.stats import StatsTable, load_stats
from structcover.tools.store.models import OperatorOutcome

if TYPE_CHECKING:  # importing the store pulls in Chroma; the planner only reads from it
    from structcover.tools.store.store import MemoryStore

#: States kept per chain length in the search (every one-step chain is always predicted).
BEAM = 24
#: What one prediction was made from: the state's values and levels, the model, and the
#: effect predicted.
Traced = tuple[Mapping[str, Any], Mapping[str, str], EffectModel, Effect]
#: Ordered axes: a miss by two levels counts more than a miss by one.
_ORDINAL = {"pattern.intensity": ("low", "medium", "high"),
            "pattern.vector_width": ("1", "2", "4", "8")}


class PlannedStep(BaseModel):
    """One operator of a chain and what it is expected to do."""

    operator: str
    levels_after: dict[str, str]
    basis: Basis = Field(description="observed in memory, declared by the operator, or both")
    success_rate: float
    confidence: float


class PlannedChain(BaseModel):
    """A ranked operator chain."""

    operators: list[str]
    steps: list[PlannedStep]
    predicted_levels: dict[str, str]
    reaches_target: bool
    misses: list[AxisMiss] = Field(default_factory=list, description="target axes still off")
    distance: float = Field(description="distance left to the target (0 = in the bin)")
    probability: float = Field(description="product of success rates and confidences")


class Plan(BaseModel):
    """The planner's answer for one program and one target bin."""

    start_levels: dict[str, str]
    target: dict[str, str]
    start_distance: float
    chains: list[PlannedChain]
    unmovable: list[str] = Field(default_factory=list, description="mismatched target axes "
                                 "that no searched chain changed")
    note: str = ""


def distance(levels: Mapping[str, str], target: Mapping[str, str]) -> float:
    """Missed target axes, ordinal axes weighted by how many levels apart (at most 1 each)."""
    d = 0.0
    for axis, want in target.items():
        got = levels.get(axis)
        if got == want:
            continue
        order = _ORDINAL.get(axis)
        if order and got in order and want in order:
            d += abs(order.index(got) - order.index(want)) / (len(order) - 1)
        else:
            d += 1.0
    return d


def effect_model(operators: Mapping[str, OperatorInfo], axes: Sequence[str], *,
                 family: str | None = None, stats: StatsTable | None = None,
                 outcomes: Sequence[OperatorOutcome] = (),
                 dims: Mapping[str, Dimension] | None = None,
                 effects: EffectsTable | None = None) -> EffectModel:
    """The effect model :func:`plan_chains` plans with (shipped tables when None)."""
    table = effects if effects is not None else load_effects()
    return EffectModel(operators, list(axes), family=family,
                       stats=stats if stats is not None else load_stats(),
                       outcomes=outcomes, dims=dims, measured=table.transitions,
                       measured_scope=(table.operators, table.families))


def plan_chains(values: Mapping[str, Any], target: Mapping[str, str], *,
                family: str | None = None, stats: StatsTable | None = None,
                outcomes: Sequence[OperatorOutcome] = (),
                operators: Mapping[str, OperatorInfo] | None = None,
                dims: Mapping[str, Dimension] | None = None, max_length: int = 3,
                k: int = 10, seed: int = 0, memory: MemoryStore | None = None,
                effects: EffectsTable | None = None,
                memo: dict[tuple[str, ...], Effect] | None = None,
                model: EffectModel | None = None,
                trace: dict[tuple[str, ...], Traced] | None = None,
                prior: Mapping[tuple[str, ...], Traced] | None = None,
                applicable: Collection[str] = (),
                first_steps: Mapping[str, Mapping[str, Any]] | None = None) -> Plan:
    """Rank operator chains that move a program toward ``target``.

    Args:
        values: The program's extracted feature values (``extract_features(src).values``).
        target: ``{axis: level}`` of the target bin (``targets.bin_levels``).
        family: The program's task family (family-specific statistics and observations).
        stats: Operator statistics; the shipped table when None.
        outcomes: Operator outcomes recorded in memory (``MemoryStore.operator_outcomes()``).
        operators: Operators to plan with; every registered one when None.
        dims: Archive dimensions, to place non-pattern axes (``{d.name: d}``).
        max_length: Longest chain (1-3).
        k: Chains returned.
        seed: Tie-break seed among equally ranked chains.
        memory: A memory store whose recorded operator outcomes are added to ``outcomes``.
        effects: Corpus-measured operator transitions; the shipped table when None (pass
            an empty ``EffectsTable()`` to plan from declared moves and memory only).
        memo: Predicted effects by operator chain from this program, filled and reused: a
            caller planning one program toward several bins (same axes, family, operators,
            tables and outcomes) passes the same dict and predicts each chain once.
        model: An effect model already built for these axes, family, tables and outcomes
            (with ``operators`` or more): indexing the evidence is most of a plan's cost, so
            a caller planning many programs builds it once (:func:`effect_model`).
        trace: Filled with what each prediction made here was made from (the state's values
            and levels, the model) by operator chain: the next call's ``prior``.
        prior: A ``trace`` of an earlier plan of this program (same operators and dimensions)
            with other outcomes in memory: a chain whose state and evidence are unchanged
            takes its effect from there instead of being predicted again (a new outcome
            changes the evidence of one operator at a few levels, and planning re-predicted
            every chain after each).
        applicable: Operators a dry run showed to apply to this program: their first step
            is rated by equivalence alone (``EffectModel.success_rate``).
        first_steps: Feature values of each operator's variant of this program, from a dry
            run: the first step lands there (confidence 1) instead of where the evidence by
            level predicts; an operator missing from it does not start a chain. The memo is
            not used for these steps.

    Raises:
        ValueError: ``max_length`` outside 1-3, ``k`` < 1, or an empty target.
    """
    if not 1 <= max_length <= 3:
        raise ValueError(f"plan_chains: max_length must be 1-3, got {max_length}")
    if k < 1:
        raise ValueError(f"plan_chains: k must be >= 1, got {k}")
    if not target:
        raise ValueError("plan_chains: empty target bin")
    if memory is not None:
        outcomes = [*outcomes, *memory.operator_outcomes()]
    ops = dict(sorted((operators if operators is not None else registry()).items()))
    axes = list(target)
    if model is None:
        model = effect_model(ops, axes, family=family, stats=stats, outcomes=outcomes,
                             dims=dims, effects=effects)
    start = _levels(values, axes, dims)
    d0 = distance(start, target)
    plan = Plan(start_levels=start, target=dict(target), start_distance=d0, chains=[])
    if d0 == 0:
        plan.note = "the program is already in the target bin"
        return plan
    rng = random.Random(seed)
    tie = {op: rng.random() for op in ops}
    rates = {op: model.success_rate(op) for op in ops}
    first_rates = {op: model.success_rate(op, known_to_apply=op in applicable) for op in ops}
    undoes = _undoing_pairs(ops) if max_length > 1 else frozenset()
    undone_by: dict[str, set[str]] = {}  # operator -> the operators that undo it
    for a, b in undoes:
        undone_by.setdefault(a, set()).add(b)
    moved_axes: set[str] = set()
    found: list[tuple[tuple[Any, ...], Any]] = []
    # Breadth first, keeping the BEAM most promising states of each depth: with a few dozen
    # operators every chain of three is ~10^5 predictions (each holding a copy of the feature
    # values), which cost the demo tens of GB; one-step chains are always searched in full.
    # Steps are plain tuples (operator, levels after, basis, rate, confidence) while searching;
    # only the k chains returned become models (building one per prediction was a third of a
    # campaign's planning time).
    Raw = tuple[str, dict[str, str], Basis, float, float]
    frontier: list[tuple[tuple[Raw, ...], dict[str, str], dict[str, Any],
                         list[dict[str, str]], float]] = [((), start, dict(values), [start], 1.0)]
    for depth in range(max_length):
        grown: list[tuple[tuple[Any, ...], tuple[Raw, ...], dict[str, str], dict[str, Any],
                          list[dict[str, str]], float]] = []
        for chain, levels, vals, seen, prob in frontier:
            # Per state, not per operator: the chain's operators and tie-breaks so far.
            prefix = tuple(s[0] for s in chain)
            ties = [tie[o] for o in prefix]
            blocked = {b for a in prefix for b in undone_by.get(a, ())}
            for op in ops:
                if op in blocked:
                    continue
                path = (*prefix, op)
                eff: Effect | None
                if depth == 0 and first_steps is not None:
                    if op not in first_steps:
                        continue
                    eff = _landed(first_steps[op], axes, dims)
                else:
                    eff = memo.get(path) if memo is not None else None
                    if eff is None:
                        eff = _predicted(model, op, path, levels, vals, trace, prior)
                        if memo is not None:
                            memo[path] = eff
                if eff.levels == levels or eff.levels in seen:
                    continue  # a step that changes nothing, or undoes an earlier one
                if len(moved_axes) < len(axes):
                    moved_axes.update(a for a in axes if eff.levels.get(a) != levels.get(a))
                rate = first_rates[op] if depth == 0 else rates[op]
                p = prob * rate * eff.confidence
                steps = (*chain, (op, eff.levels, eff.basis, rate, eff.confidence))
                d = distance(eff.levels, target)
                rank = (d > 0, d, -round(p, 9), len(steps), [*ties, tie[op]])
                if d < d0:
                    found.append((rank, (steps, eff.levels, d, p)))
                if depth + 1 < max_length and d > 0:
                    grown.append((rank, steps, eff.levels, eff.values, [*seen, eff.levels], p))
        grown.sort(key=lambda g: g[0])
        frontier = [(steps, lv, vals, seen, p) for _, steps, lv, vals, seen, p in grown[:BEAM]]
        if not frontier:
            break
    found.sort(key=lambda kv: kv[0])
    plan.chains = [_chain(raw, levels, d, p, target) for _, (raw, levels, d, p) in found[:k]]
    plan.unmovable = [a for a in axes if start.get(a) != target[a] and a not in moved_axes]
    if not plan.chains:
        plan.note = ("no chain of known operators is predicted to move toward the bin"
                     + (f"; nothing moves {', '.join(plan.unmovable)}" if plan.unmovable
                        else ""))
    return plan


def _undoing_pairs(ops: Mapping[str, OperatorInfo]) -> frozenset[tuple[str, str]]:
    """Ordered operator pairs no chain holds: (a, b) and (b, a) where ``b`` moves back every
    feature ``a`` declares it moves up or down (a round trip in either order).

    Such a round trip can only reach a bin through the side effects of its two rewrites.
    ``loads_indirect`` then ``direct_addressing`` was one: a gather through a per-thread
    shared slot, then a linear search for the gathered element, landed matmul and pooling
    kernels in the shared-staging bins (nothing staged: each thread reads its own slot) and
    made them 10-50x slower to emulate (bench/RESULTS.md, 2026-12-07).
    """
    # Keyed by the declared moves (computing the pairs is ~2.5 ms; a campaign plans hundreds
    # of times with the same registry).
    return _undoing_pairs_of(tuple((name, tuple(sorted(info.moves.items())))
                                   for name, info in ops.items()))


@lru_cache(maxsize=8)
def _undoing_pairs_of(declared: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
                      ) -> frozenset[tuple[str, str]]:
    opposite = {"up": "down", "down": "up"}
    moves = {name: dict(m) for name, m in declared}
    out: set[tuple[str, str]] = set()
    for a, ma in moves.items():
        # "set" moves have no direction (block_size sets launch.block_size): never undone.
        back = {f: opposite[d] for f, d in ma.items() if d in opposite}
        if back:
            for b, mb in moves.items():
                if all(mb.get(f) == d for f, d in back.items()):
                    out.update(((a, b), (b, a)))
    return frozenset(out)


def _predicted(model: EffectModel, op: str, path: tuple[str, ...], levels: dict[str, str],
               vals: dict[str, Any], trace: dict[tuple[str, ...], Traced] | None,
               prior: Mapping[tuple[str, ...], Traced] | None) -> Effect:
    """``model.predict`` of the chain's last step, or the earlier prediction in ``prior``
    when it was made from equal values and levels by a model that predicts ``op`` alike (a
    prediction reads nothing else, so it would come out the same)."""
    old = prior.get(path) if prior else None
    if old is not None and old[1] == levels and (old[0] is vals or old[0] == vals) \
            and model.predicts_like(old[2], op):
        eff = old[3]
    else:
        # A chain of three is never stepped from: no values to carry.
        eff = model.predict(op, levels, vals, keep_values=len(path) < 3)
    if trace is not None:
        trace[path] = (vals, levels, model, eff)
    return eff


def _levels(values: Mapping[str, Any], axes: Sequence[str],
            dims: Mapping[str, Dimension] | None) -> dict[str, str]:
    """Levels of extracted values: the levels the extractor computed (``pattern.*`` strings)
    are the truth, the rules or dimensions place the rest."""
    levels = axis_levels(values, axes, dims)
    levels.update({a: str(values[a]) for a in axes if isinstance(values.get(a), str)})
    return levels


def _landed(values: Mapping[str, Any], axes: Sequence[str],
            dims: Mapping[str, Dimension] | None) -> Effect:
    """The effect of a step whose result is known: the levels of its variant's values."""
    return Effect(levels=_levels(values, axes, dims), values=dict(values), basis="observed",
                  confidence=1.0)


def _chain(raw: Sequence[tuple[str, dict[str, str], Basis, float, float]],
           levels: dict[str, str], d: int, p: float, target: Mapping[str, str]) -> PlannedChain:
    """The model of one searched chain."""
    steps = [PlannedStep(operator=op, levels_after=after, basis=basis,
                         success_rate=round(rate, 6), confidence=round(conf, 6))
             for op, after, basis, rate, conf in raw]
    return PlannedChain(operators=[s.operator for s in steps], steps=steps,
                        predicted_levels=levels, reaches_target=d == 0,
                        misses=axis_misses(target, levels), distance=d, probability=round(p, 9))
