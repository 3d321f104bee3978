"""The effect model's shortcuts (remembered evidence, rules left unevaluated when a step writes
none of their inputs, values dropped at a chain's last step) predict what the plain
computation does, and plans with a shared memo and model equal plans made from scratch."""

from __future__ import annotations

import math
from typing import Any

import pytest

from structcover.tools.curation.effects import (
    DECLARED_CONFIDENCE,
    EffectModel,
    _apply_move,
    axis_levels,
)
from structcover.tools.curation.effects_cache import Reads
from structcover.tools.curation.effects_table import load_effects
from structcover.tools.curation.planner import effect_model, plan_chains
from structcover.tools.data.corpus import load_corpus
from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import PATTERN_RULES
from structcover.tools.mutations.base import registry
from structcover.tools.store.models import OperatorOutcome

AXES = ["pattern.global_access", "pattern.sync", "pattern.reuse"]


def _plain_predict(model: EffectModel, op: str, levels: dict[str, str],
                   values: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], str, float]:
    """The prediction as computed before the shortcuts: every rule on every step."""
    new_values = dict(values)
    for name, direction in sorted(model.operators[op].moves.items()):
        _apply_move(new_values, name, direction)
    declared = axis_levels(new_values, model.axes, model.dims)
    unmoved = axis_levels(values, model.axes, model.dims)
    out: dict[str, str] = {}
    conf = 1.0
    declared_change = observed_change = False
    for axis in model.axes:
        before = levels.get(axis)
        if before is None:
            continue
        seen = model._lookup(op, axis, before)
        if seen is not None:
            out[axis] = seen[0]
            if seen[0] != before:
                conf *= seen[1]
                observed_change = True
        else:
            moved = axis in declared and declared[axis] != unmoved.get(axis)
            out[axis] = declared[axis] if moved else before
            declared_change |= out[axis] != before
    if declared_change:
        conf *= DECLARED_CONFIDENCE
    basis = ("mixed" if observed_change and declared_change else "observed" if observed_change
             else "declared" if declared_change else "none")
    return out, new_values, basis, conf


@pytest.fixture(scope="module")
def parents() -> list[tuple[str, dict[str, Any]]]:
    fams = {f.name: f for f in load_corpus()}
    return [(name, dict(extract_features(fams[name].programs[i].source).values))
            for name, i in (("histogram", 0), ("softmax", 1), ("spmv_csr", 0))]


def _outcomes() -> list[OperatorOutcome]:
    return [OperatorOutcome(operator=op, family="softmax", success=True, stage="passed",
                            round=1, program_id=f"p{n}",
                            levels_before={"pattern.sync": "block"},
                            levels_after={"pattern.sync": after})
            for n, (op, after) in enumerate([("stores_atomic", "atomic_or_grid"),
                                             ("stores_atomic", "block"),
                                             ("block_to_one_warp", "warp")])]


def test_predictions_equal_the_plain_computation(parents) -> None:
    ops = registry()
    for family, values in parents:
        model = EffectModel(ops, AXES, family=family, outcomes=_outcomes(),
                            measured=load_effects().transitions)
        levels = axis_levels(values, AXES)
        for op in ops:
            want = _plain_predict(model, op, levels, values)
            for keep in (True, False):
                eff = model.predict(op, levels, values, keep_values=keep)
                assert (eff.levels, eff.basis, eff.confidence) == (want[0], want[2], want[3]), op
                assert eff.values == (want[1] if keep else {})
            # and from the step's state: a second state on one model
            nxt = model.predict(op, levels, values)
            for op2 in list(ops)[::7]:
                got = model.predict(op2, nxt.levels, nxt.values)
                want2 = _plain_predict(model, op2, nxt.levels, nxt.values)
                assert (got.levels, got.values, got.basis, got.confidence) == want2, (op, op2)


def test_a_rule_that_iterates_the_values_is_always_evaluated_again() -> None:
    view = Reads({"a": 1, "b": 2})
    assert view.get("a") == 1 and "c" not in view
    assert view.keys_read == {"a", "c"}
    assert sorted(view) == ["a", "b"]
    assert view.keys_read is None
    # the shipped rules read by name only: their inputs are known
    for axis, rule in PATTERN_RULES.items():
        v = Reads({"mem.global_coalesced": 1.0, "intensity.flop_per_byte": math.nan})
        rule(v)
        assert v.keys_read is not None, axis


def test_plans_with_a_shared_memo_and_model_equal_plans_from_scratch(parents) -> None:
    ops = registry()
    bins = [{"pattern.global_access": a, "pattern.sync": s}
            for a in ("strided", "indirect", "broadcast") for s in ("none", "atomic_or_grid")]
    for family, values in parents:
        model = effect_model(ops, list(bins[0]), family=family, outcomes=_outcomes())
        memo: dict = {}
        for target in bins:
            fresh = plan_chains(values, target, family=family, outcomes=_outcomes(), k=4, seed=3)
            shared = plan_chains(values, target, family=family, outcomes=_outcomes(), k=4,
                                 seed=3, memo=memo, model=model)
            assert [c.operators for c in shared.chains] == [c.operators for c in fresh.chains]
            assert shared == fresh


def test_a_new_outcome_changes_only_its_operators_predictions() -> None:
    ops = registry()
    before = EffectModel(ops, AXES, family="softmax", outcomes=_outcomes()[:2])
    after = EffectModel(ops, AXES, family="softmax", outcomes=_outcomes())
    assert not after.predicts_like(before, "block_to_one_warp")
    assert after.predicts_like(before, "stores_atomic") and after.predicts_like(before, "serialize")
    other_family = EffectModel(ops, AXES, family="gemm", outcomes=_outcomes())
    assert not other_family.predicts_like(after, "serialize")


def test_plans_reusing_a_prior_trace_equal_plans_from_scratch(parents) -> None:
    ops = registry()
    outcomes = _outcomes() + [
        OperatorOutcome(operator=op, family=fam, success=ok, stage="passed", round=1,
                        program_id=f"q{n}", levels_before={"pattern.global_access": "coalesced"},
                        levels_after={"pattern.global_access": to} if ok else {})
        for n, (op, fam, ok, to) in enumerate([("lanes_split", "softmax", True, "strided"),
                                                ("serialize", "histogram", True, "broadcast"),
                                                ("loads_indirect", "spmv_csr", False, "")])]
    bins = [{"pattern.global_access": a, "pattern.sync": s}
            for a in ("strided", "broadcast") for s in ("none", "atomic_or_grid")]
    for family, values in parents[:2]:
        prior: dict = {}
        for n in (0, 2, 3, 4, 6):  # more outcomes in memory each time
            seen = outcomes[:n]
            model = effect_model(ops, list(bins[0]), family=family, outcomes=seen)
            memo: dict = {}
            trace: dict = {}
            for target in bins:
                fresh = plan_chains(values, target, family=family, outcomes=seen, k=4, seed=1)
                again = plan_chains(values, target, family=family, outcomes=seen, k=4, seed=1,
                                    memo=memo, model=model, trace=trace, prior=prior)
                assert again == fresh, (family, n, target)
            prior = trace
