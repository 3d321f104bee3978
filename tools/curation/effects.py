"""What an operator is expected to do to a program's axis levels, and how likely it works.

Three sources, the better one first:

* **Observed** transitions recorded in memory (``OperatorOutcome.levels_before/after`` of
  campaign candidates whose features were re-extracted, wherever they landed): "on a
  program at ``pattern.reuse=none``, ``tile_smem`` gave ``smem_tiling`` 3 times out of 4".
  The family's own observations win over other families'.
* **Measured** transitions of the shipped effects table (``effects_table.py``: every operator
  applied to corpus programs, variants re-extracted), family's own first — the same kind of
  evidence, gathered before any campaign ran.
* **Declared** moves: each operator's docstring ``Moves:`` section (``smem.tiled: up``...)
  applied to the program's raw feature values, plus the few companion changes a move implies
  (:data:`IMPLIED`), then the pattern rules of ``tools/features/structure.py`` recomputed —
  so a declared move is judged by the same rules that bin the program.

Success rates come from the shipped operator statistics (applied / tried, equivalent /
variants) updated with memory's per-family outcomes (a Beta prior of weight 2 centred on the
table's rate), so an operator that keeps failing on a family sinks. An operator the effects
table tried on a family's corpus programs without one variant (it does not apply to that
family's code) starts at :data:`NEVER_APPLIED_FACTOR` of its rate: its declared moves would
otherwise rank it beside operators that do apply, and a campaign spends its few options per
proposal on chains whose first step yields nothing.
"""

from __future__ import annotations

import math
import weakref
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from structcover.tools.coverage.bins import Dimension
from structcover.tools.curation.effects_cache import Reads, index_measured, tally_into
from structcover.tools.curation.effects_table import Transition
from structcover.tools.features.structure import PATTERN_RULES
from structcover.tools.mutations.base import OperatorInfo
from structcover.tools.mutations.stats import StatsTable
from structcover.tools.store.models import OperatorOutcome

Basis = Literal["observed", "declared", "mixed", "none"]
#: Weight of a corpus-measured transition relative to one observed in a campaign (corpus
#: variants were not all verified equivalent).
MEASURED_WEIGHT = 0.8

#: Companion changes a declared move implies (the raw features a pattern rule reads beside
#: the one the operator names). ``("min", x)``: at least x; ``("set", x)``: exactly x.
IMPLIED: dict[tuple[str, str], dict[str, tuple[str, float]]] = {
    # staging global data in a shared tile means shared accesses, each staged element re-read
    ("smem.tiled", "up"): {"smem.accesses": ("min", 1.0), "smem.reads_per_staged": ("min", 2.0)},
    # vector loads are float4 / int4 in every vectorizing operator
    ("mem.vector_loads", "up"): {"mem.vector_width_global": ("min", 4.0)},
    ("mem.vector_loads", "down"): {"mem.vector_width_global": ("set", 1.0)},
}
#: Confidence given to a declared-move prediction with no observation behind it.
DECLARED_CONFIDENCE = 0.5
#: Prior success-rate factor of an operator the effects table found never applies to the
#: family's programs (memory's outcomes for the family still move it).
NEVER_APPLIED_FACTOR = 0.1


@dataclass(frozen=True)
class Effect:
    """Predicted outcome of applying one operator in one state."""

    levels: dict[str, str]
    values: dict[str, Any]
    basis: Basis
    confidence: float


def _apply_move(values: dict[str, Any], name: str, direction: str) -> None:
    cur = values.get(name)
    if direction == "up":
        if isinstance(cur, bool) or cur is None and name.split(".")[-1] in ("tiled", "padded"):
            values[name] = True
        else:
            values[name] = (0.0 if cur is None or not isinstance(cur, int | float) else
                            float(cur)) + 1.0
    elif direction == "down":
        # Operators convert a strategy wholesale (devectorize, shuffle_to_tree): the structure
        # goes, not one occurrence of it.
        values[name] = False if isinstance(cur, bool) else 0.0
    else:  # "set": changes to a value nobody declared
        values[name] = math.nan
    for other, (how, x) in IMPLIED.get((name, direction), {}).items():
        v = values.get(other)
        v = 0.0 if not isinstance(v, int | float) or isinstance(v, bool) or math.isnan(v) \
            else float(v)
        values[other] = max(v, x) if how == "min" else x


def _changed_keys(moves: Mapping[str, str]) -> frozenset[str]:
    """Every raw feature :func:`_apply_move` may write for ``moves`` (the moved ones and
    their :data:`IMPLIED` companions)."""
    out = set(moves)
    for name, direction in moves.items():
        out.update(IMPLIED.get((name, direction), {}))
    return frozenset(out)


def _levels_and_reads(values: Mapping[str, Any], axes: Sequence[str],
                      dims: Mapping[str, Dimension] | None
                      ) -> tuple[dict[str, str], dict[str, frozenset[str] | None]]:
    """:func:`axis_levels` of ``values``, with the features each axis's level was read from
    (None: unknown, any feature may matter)."""
    levels: dict[str, str] = {}
    reads: dict[str, frozenset[str] | None] = {}
    for axis in axes:
        if axis in PATTERN_RULES:
            view = Reads(values)
            levels[axis] = PATTERN_RULES[axis](view)
            reads[axis] = None if view.keys_read is None else frozenset(view.keys_read)
        else:
            levels.update(axis_levels(values, [axis], dims))
            reads[axis] = frozenset((axis,))  # a dimension bins the axis's own value
    return levels, reads


def _moved(values: Mapping[str, Any], moves: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """A copy of ``values`` with ``moves`` (feature, direction) applied in order."""
    out = dict(values)
    for name, direction in moves:
        _apply_move(out, name, direction)
    return out


def axis_levels(values: Mapping[str, Any], axes: Sequence[str],
                dims: Mapping[str, Dimension] | None = None) -> dict[str, str]:
    """Levels of ``axes`` for raw ``values``: pattern rules, else the dimension's binning.

    An axis that cannot be placed (no rule, no dimension, or a missing value) is left out.
    """
    out: dict[str, str] = {}
    for axis in axes:
        if axis in PATTERN_RULES:  # only the asked axes' rules: this runs per planner step
            out[axis] = PATTERN_RULES[axis](values)
        elif dims and axis in dims:
            import pandas as pd

            i = int(dims[axis].index(pd.Series([values.get(axis)], dtype=object))[0])
            if i >= 0:
                out[axis] = dims[axis].label(i)
    return out


class EffectModel:
    """Predicts operator effects on axis levels and operator success for one task family."""

    def __init__(self, operators: Mapping[str, OperatorInfo], axes: Sequence[str], *,
                 family: str | None = None, stats: StatsTable | None = None,
                 outcomes: Sequence[OperatorOutcome] = (),
                 measured: Sequence[Transition] = (),
                 measured_scope: tuple[Sequence[str], Sequence[str]] = ((), ()),
                 dims: Mapping[str, Dimension] | None = None) -> None:
        """Index the evidence for one family.

        Args:
            operators: The operators to predict.
            axes: The target axes.
            family: The task family (its own evidence first).
            stats: Operator statistics (success priors).
            outcomes: Operator outcomes recorded in memory.
            measured: Corpus-measured transitions (the effects table).
            measured_scope: ``(operators, families)`` the effects table tried: an operator
                with no transition on a family in it never applied there.
            dims: Archive dimensions for non-pattern axes.
        """
        self.operators = dict(operators)
        self.axes = list(axes)
        self._axes_t = tuple(self.axes)
        self._measured = measured
        #: (weak other model, operator) -> ``predicts_like``; operator -> its transitions.
        self._alike: dict[tuple[weakref.ref[EffectModel], str], bool] = {}
        self._slices: dict[str, tuple[dict[tuple[str, str], Counter[str]], ...]] | None = None
        self.family = family
        self.stats = stats or StatsTable()
        self.dims = dims
        # (operator, axis, before) -> Counter(after), family's own and all families'
        self._own: dict[tuple[str, str, str], Counter[str]] = {}
        self._all: dict[tuple[str, str, str], Counter[str]] = {}
        self._tally: dict[str, tuple[int, int]] = {}
        #: The last state's values, their levels, and the features each level was read
        #: from (held, so the identity test is sound).
        self._state: tuple[Mapping[str, Any], dict[str, str],
                           dict[str, frozenset[str] | None]] | None = None
        #: Each operator's moves in order and the features they write (``predict``).
        self._moves: dict[str, tuple[list[tuple[str, str]], frozenset[str]]] = {}
        #: ``_observed`` answers: the evidence is fixed once indexed, and the planner asks
        #: the same (operator, axis, level) in every state that has the level.
        self._seen: dict[tuple[str, str, str], tuple[str, float] | None] = {}
        self._applied, self._measured_all, self._measured_own = index_measured(measured,
                                                                                family)
        self._scope = (set(measured_scope[0]), set(measured_scope[1]))
        for o in outcomes:
            if family is None or o.family == family:
                s, n = self._tally.get(o.operator, (0, 0))
                self._tally[o.operator] = (s + int(o.success), n + 1)
            # Levels after are recorded only when the variant was re-extracted: where it
            # landed is a real transition even if a later stage (equivalence) failed it.
            for axis, before in o.levels_before.items():
                after = o.levels_after.get(axis)
                if after is None:
                    continue
                key = (o.operator, axis, before)
                tally_into(self._all, key, after)
                if family is not None and o.family == family:
                    tally_into(self._own, key, after)

    def success_rate(self, op: str, known_to_apply: bool = False) -> float:
        """Chance that applying ``op`` gives an equivalent variant, for this family.

        Args:
            op: The operator.
            known_to_apply: A dry run showed that ``op`` applies to the program: only the
                chance that its variant is equivalent is left (the corpus-wide share of
                programs it applies to would otherwise rank an operator made for few kernel
                shapes below any general one, on exactly the kernels it was made for).
        """
        st = self.stats.operators.get(op)
        if st is None:
            prior = 0.25  # never measured: possible, not likely
        else:
            applies = 1.0 if known_to_apply else (st.applied + 1) / (st.tried + 2)
            prior = applies * ((st.equivalent + 1) / (st.variants + 2))
            if self.family and st.families_equivalent and \
                    self.family not in st.families_equivalent:
                prior *= 0.5  # never shown equivalent on this family
        if self.applies(op) is False and not known_to_apply:
            prior *= NEVER_APPLIED_FACTOR
        s, n = self._tally.get(op, (0, 0))
        return (s + 2 * prior) / (n + 2)

    def applies(self, op: str) -> bool | None:
        """Whether ``op`` produced a variant on this family's corpus programs in the effects
        table; None when the table did not try it there (or there is no family)."""
        ops, fams = self._scope
        if self.family is None or self.family not in fams or op not in ops:
            return None
        return (op, self.family) in self._applied

    def _observed(self, op: str, axis: str, before: str) -> tuple[str, float] | None:
        key = (op, axis, before)
        if key in self._seen:
            return self._seen[key]
        found = self._lookup(op, axis, before)
        self._seen[key] = found  # idempotent: threads sharing the model write one answer
        return found

    def _lookup(self, op: str, axis: str, before: str) -> tuple[str, float] | None:
        tiers = ((self._own, 1.0), (self._all, 1.0), (self._measured_own, MEASURED_WEIGHT),
                 (self._measured_all, MEASURED_WEIGHT))
        for table, weight in tiers:
            seen = table.get((op, axis, before))
            if seen:
                total = sum(seen.values())
                after, count = min(seen.items(), key=lambda kv: (-kv[1], kv[0]))
                return after, weight * count / (total + 1)
        return None

    def predicts_like(self, other: EffectModel, op: str) -> bool:
        """Whether ``other`` predicts ``op`` as this model does from every state: the same
        axes, dimensions, operator, corpus table and family, and the same observed
        transitions of ``op`` (no other operator's evidence enters ``op``'s predictions, and
        a new outcome is one operator's)."""
        if other is self:
            return True
        key = (weakref.ref(other), op)  # weak: models must not keep older models alive
        alike = self._alike.get(key)
        if alike is None:
            alike = (other._axes_t == self._axes_t and other.dims is self.dims
                     and other.operators.get(op) is self.operators.get(op)
                     and other._measured is self._measured and other.family == self.family
                     and other._slice(op) == self._slice(op))
            self._alike[key] = alike
        return alike

    def _slice(self, op: str) -> tuple[dict[tuple[str, str], Counter[str]], ...]:
        """``op``'s observed transitions, (axis, before) -> Counter(after), own and all."""
        slices = self._slices
        if slices is None:
            slices = {}
            for i, table in enumerate((self._own, self._all)):
                for (o, axis, before), seen in table.items():
                    slices.setdefault(o, ({}, {}))[i][(axis, before)] = seen
            self._slices = slices
        return slices.get(op, ({}, {}))

    def predict(self, op: str, levels: Mapping[str, str], values: Mapping[str, Any], *,
                keep_values: bool = True) -> Effect:
        """Levels after applying ``op`` in state (``levels``, ``values``).

        ``keep_values=False``: the caller never steps from the result (a chain's last
        possible step), so its simulated values are left out (``Effect.values`` is empty) and
        copied only where a pattern rule must read them.
        """
        moves = self._moves.get(op)
        if moves is None:
            info = self.operators[op]
            moves = (sorted(info.moves.items()), _changed_keys(info.moves))
            self._moves[op] = moves
        new_values: dict[str, Any] | None = None
        if keep_values:
            new_values = _moved(values, moves[0])
        # Only what *this* step's moves change counts: simulated values carried over from
        # earlier steps may disagree with levels that came from observations.
        state = self._state  # read once: planner threads share one model
        if state is None or state[0] is not values:  # the planner asks every op per state
            state = (values, *_levels_and_reads(values, self.axes, self.dims))
            self._state = state
        unmoved, reads = state[1], state[2]
        written = moves[1]
        out: dict[str, str] = {}
        conf = 1.0
        any_declared_change = any_observed_change = False
        for axis in self.axes:
            before = levels.get(axis)
            if before is None:
                continue
            seen = self._observed(op, axis, before)
            if seen is not None:
                out[axis] = seen[0]
                if seen[0] != before:
                    conf *= seen[1]
                    any_observed_change = True
                continue
            read = reads[axis]
            if read is not None and written.isdisjoint(read):
                # The step writes none of the rule's inputs: its level stays (the rules were
                # most of a prediction's cost, evaluated for every axis of every step).
                out[axis] = before
                continue
            if new_values is None:
                new_values = _moved(values, moves[0])
            declared = axis_levels(new_values, (axis,), self.dims)
            moved = axis in declared and declared[axis] != unmoved.get(axis)
            out[axis] = declared[axis] if moved else before
            any_declared_change |= out[axis] != before
        if any_declared_change:
            conf *= DECLARED_CONFIDENCE
        basis: Basis = ("mixed" if any_observed_change and any_declared_change else
                        "observed" if any_observed_change else
                        "declared" if any_declared_change else "none")
        return Effect(levels=out, values=new_values if keep_values and new_values is not None
                      else {}, basis=basis, confidence=conf)
