"""The campaign's mutation port decides applicability by dry runs: the operators' parse and
text edit, never a compile, and the same answer the compiling application gives."""

from __future__ import annotations

import pytest

from structcover.campaign.mutate import RegistryMutate
from structcover.tools.data.corpus import load_corpus
from structcover.tools.mutations import base


def _reference(family: str) -> str:
    return next(f.reference.source for f in load_corpus() if f.name == family)


def test_dry_runs_never_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_compile(source: str) -> tuple[bool, str]:
        raise AssertionError("a dry run compiled")

    monkeypatch.setattr(base, "check_compiles", no_compile)
    mutate = RegistryMutate()
    ops = mutate.applicable(_reference("vector_add"))
    assert {"map_strided_block", "serialize", "stage_smem_block"} <= ops
    # a 2-D kernel takes the thread-mapping operators once flattened; a tree reduction not
    gemm = mutate.applicable(_reference("gemm"))
    assert "map_indirect_warp" in gemm
    assert "map_indirect_warp" not in mutate.applicable(_reference("reduction"))
    assert mutate.applies(_reference("vector_add"), ["map_mixed_none"], seed=0)
    assert not mutate.applies(_reference("reduction"), ["map_mixed_none"], seed=0)


def test_a_dry_run_agrees_with_the_compiling_application() -> None:
    mutate = RegistryMutate()
    source = _reference("transpose")
    for chain in (["map_strided_block"], ["serialize"], ["tree_to_shuffle"]):
        assert mutate.applies(source, chain, seed=1) == bool(mutate.apply(source, chain,
                                                                           seed=1)), chain


def _program(family: str, name: str) -> str:
    fam = next(f for f in load_corpus() if f.name == family)
    return next(p.source for p in fam.programs if p.name == name)


@pytest.mark.parametrize(("access", "sync"), [("strided", "block"), ("mixed", "block"),
                                              ("broadcast", "atomic_or_grid"),
                                              ("strided", "atomic_or_grid")])
def test_a_block_per_row_kernel_gets_a_plan_that_lands_in_its_missing_bin(access, sync):
    # The campaign plans a parent only with the operators that apply to it: for a softmax
    # with a block per row those are the lane-loop operators (access) and stores_atomic (sync),
    # alone or chained, and the planned chain's program lands where it was planned to.
    from structcover.tools.curation.planner import plan_chains
    from structcover.tools.features.extract import extract_features
    from structcover.tools.features.structure import pattern_features

    mutate = RegistryMutate()
    source = _program("softmax", "block_smem_tree")
    ops = {n: i for n, i in base.registry().items() if n in mutate.applicable(source)}
    assert {"lanes_chunked", "lanes_serial", "lanes_split", "stores_atomic"} <= set(ops)
    target = {"pattern.global_access": access, "pattern.sync": sync}
    plan = plan_chains(extract_features(source).values, target, family="softmax",
                       operators=ops)
    chains = [c.operators for c in plan.chains if c.reaches_target]
    assert chains, plan.note
    landed = []
    for chain in chains[:3]:
        for mutant in mutate.apply(source, chain, seed=0):
            p = pattern_features(extract_features(mutant.source).values)
            landed.append((p["pattern.global_access"], p["pattern.sync"]))
    assert (access, sync) in landed, (chains[:3], landed)


class _NoOutcomes:
    """A memory store that has recorded no operator outcome yet."""

    def count_operator_outcomes(self, family: str | None = None) -> int:
        return 0

    def operator_outcomes(self) -> list:
        return []


def test_a_rewritten_first_step_opens_operators_the_parent_does_not_take():
    # The histogram's per-element atomics take no lane operator; once ownership rewrote it,
    # its owner loop does: the campaign plans the pair, and the pair lands in the bin.
    from structcover.campaign.bindings import bind_planner
    from structcover.tools.features.extract import extract_features
    from structcover.tools.features.structure import pattern_features

    mutate = RegistryMutate()
    source = _program("histogram", "reference")
    only = mutate.applicable(source)
    assert "atomics_to_owner" in only and "lanes_chunked" not in only
    bounds = {"pattern.global_access": "strided", "pattern.sync": "none"}
    chains = bind_planner(_NoOutcomes()).plan(
        dict(extract_features(source).values), bounds, seed=0, k=4, family="histogram",
        operators=only, first_steps=mutate.first_steps(source))
    assert ["atomics_to_owner", "lanes_chunked"] in chains, chains
    mutant = mutate.apply(source, ["atomics_to_owner", "lanes_chunked"], seed=0)[0]
    p = pattern_features(extract_features(mutant.source).values)
    assert (p["pattern.global_access"], p["pattern.sync"]) == ("strided", "none")


def test_a_chain_compiles_only_its_last_steps_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []

    def record(source: str) -> tuple[bool, str]:
        compiled.append(source)
        return True, ""

    monkeypatch.setattr(base, "check_compiles", record)
    source = _reference("saxpy")
    out = RegistryMutate(fanout=1).apply(source, ["to_grid_stride", "unroll_pragma"], seed=3)
    assert out and compiled, "the chain should yield a mutant of saxpy"
    # the intermediate grid-stride program is a dry run; what compiled is the last step's
    with base.dry_run():
        from structcover.campaign.mutate import apply_operator

        middle = apply_operator("to_grid_stride", source)
    assert not set(middle) & set(compiled)
    assert {m.source for m in out} <= set(compiled)
