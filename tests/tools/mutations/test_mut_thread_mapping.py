"""Thread-mapping operators: chunked, serial, staged and map_<mapping>_<sync> variants verify on
the CPU emulator, move the features they promise, and land where the pattern rules say."""

import pytest
from mutation_cases import not_applicable, program, verify_operator

from structcover.tools.features.extract import extract_features
from structcover.tools.features.structure import LEVELS, pattern_features
from structcover.tools.mutations._tree import find, parse
from structcover.tools.mutations.base import get_operator
from structcover.tools.mutations.thread_mapping import MAP_OPERATORS


def _levels(source: str) -> tuple[str, str]:
    p = pattern_features(extract_features(source).values)
    return p["pattern.global_access"], p["pattern.sync"]


def test_coarsen_chunked_variants_verify(cpu_backend):
    verify_operator("coarsen_chunked", [("vector_add", "reference"), ("relu_fp16", "reference")],
                    cpu_backend)


def test_serialize_variants_verify(cpu_backend):
    verify_operator("serialize", [("saxpy", "reference"), ("conv1d", "reference")], cpu_backend)


def test_stage_smem_variants_verify(cpu_backend):
    # restrict_ldg reads through __ldg(a + i) with __restrict__ parameters
    verify_operator("stage_smem_block", [("vector_add", "reference"),
                                         ("vector_add", "restrict_ldg")], cpu_backend)
    verify_operator("stage_smem_warp", [("relu_fp16", "reference")], cpu_backend)


def test_each_operator_moves_its_pattern_level():
    source = program("vector_add", "reference")[0]
    assert _levels(source) == ("coalesced", "none")
    landed = {op: _levels(get_operator(op).func(source).variants[0].source)
              for op in ("coarsen_chunked", "serialize", "stage_smem_block", "stage_smem_warp")}
    assert landed == {"coarsen_chunked": ("strided", "none"), "serialize": ("broadcast", "none"),
                      "stage_smem_block": ("coalesced", "block"),
                      "stage_smem_warp": ("coalesced", "warp")}
    staged = get_operator("stage_smem_block").func(source).variants[0].source
    # The barrier sits outside the bounds guard, so every thread of the block reaches it.
    guard, barrier = staged.index("if (i < n)"), staged.index("__syncthreads();")
    assert staged.index("}", guard) < barrier < staged.rindex("if (i < n)")


def test_thread_mapping_not_applicable():
    assert "one-thread-per-element" in not_applicable("coarsen_chunked", "reduction",
                                                      "reference")
    assert "thread indices" in not_applicable("serialize", "reduction", "reference")
    assert "read-only input" in not_applicable("stage_smem_block", "reduction", "reference")


# --- map_<mapping>_<sync>: one step from one thread per element to each (access, sync) pair ---

_BARRIER_SYNCS = ("block", "warp", "block_and_warp")


@pytest.mark.parametrize(("pair", "op"), sorted(MAP_OPERATORS.items()),
                         ids=sorted(MAP_OPERATORS.values()))
def test_map_operator_lands_in_its_pair(pair, op):
    source = program("vector_add", "reference")[0]
    result = get_operator(op).func(source)
    assert result.variants, result.not_applicable
    assert _levels(result.variants[0].source) == pair


@pytest.mark.parametrize("family", ["vector_add", "saxpy"])
def test_map_atomic_variants_keep_ldg_reads_visible(family):
    # the store becomes an atomic (an address, which the extractor does not count as an
    # access): the __ldg(a + i) reads are written __ldg(&a[i]) so an access stays visible
    source = program(family, "restrict_ldg")[0]
    for (mapping, sync), op in MAP_OPERATORS.items():
        if sync == "atomic_or_grid":
            variant = get_operator(op).func(source).variants[0].source
            assert _levels(variant) == (mapping, sync), op


def test_map_operators_and_older_four_cover_every_feasible_pair():
    older = {("strided", "none"), ("broadcast", "none"), ("coalesced", "block"),
             ("coalesced", "warp"), ("coalesced", "none")}
    feasible = {(a, s) for a in LEVELS["pattern.global_access"] if a != "none"
                for s in LEVELS["pattern.sync"]}
    assert set(MAP_OPERATORS) | older == feasible
    assert not set(MAP_OPERATORS) & older


def _ops(mapping: str) -> list[str]:
    return [op for (m, _), op in sorted(MAP_OPERATORS.items()) if m == mapping]


# vector_add stages its inputs (a[i], b[i]); conv1d has none read at i, so it stages its
# trailing output store y[i] = acc; relu_fp16 is __half (atomic variants store through the
# 16-bit compare-and-swap helper);
# saxpy reads and writes y[i] (atomicExch of a value computed from the old one).
@pytest.mark.parametrize("mapping", ["coalesced", "strided", "broadcast", "indirect", "mixed"])
def test_map_operator_variants_verify(mapping, cpu_backend):
    for op in _ops(mapping):
        cases = [("vector_add", "reference"), ("conv1d", "reference")]
        # (not broadcast: one thread looping over every half costs the emulator ~10 s)
        if op.endswith(("_block", "_warp")) and mapping != "broadcast":
            cases.append(("relu_fp16", "reference"))
        if mapping == "coalesced" or op.endswith("_atomic_or_grid"):
            cases.append(("saxpy", "reference"))
        if op.endswith("_atomic_or_grid") and mapping != "broadcast":
            cases.append(("relu_fp16", "reference"))
        if op.endswith("_atomic_or_grid"):  # reads through __ldg(a + i)
            cases.append(("vector_add", "restrict_ldg"))
        verify_operator(op, cases, cpu_backend)


def _if_ancestors(src, node) -> list[str]:  # noqa: ANN001
    out, cur = [], node.parent
    while cur is not None and cur.type != "function_definition":
        if cur.type in ("if_statement", "while_statement", "do_statement",
                        "conditional_expression"):
            out.append(src.of(cur).split("\n")[0])
        cur = cur.parent
    return out


@pytest.mark.parametrize("family", ["vector_add", "conv1d"])
def test_map_barriers_sit_outside_every_branch(family):
    source = program(family, "reference")[0]
    for (mapping, sync), op in MAP_OPERATORS.items():
        if sync not in _BARRIER_SYNCS:
            continue
        variant = get_operator(op).func(source).variants[0].source
        src = parse(variant)
        calls = [c for c in find(src.root, "call_expression")
                 if src.of(c.child_by_field_name("function")) in ("__syncthreads",
                                                                    "__syncwarp")]
        want = {"block": 1, "warp": 1, "block_and_warp": 2}[sync] * (2 if mapping == "mixed"
                                                                      else 1)
        assert len(calls) == want, (op, variant)
        for call in calls:
            # Only uniform for loops (chunk of 4, element loop 0..N-1) may enclose a barrier.
            assert not _if_ancestors(src, call), (op, _if_ancestors(src, call))
        if mapping == "broadcast":
            # Other blocks (and warps, for a warp barrier) leave before the element loop.
            early = "blockIdx.x != 0" + (" || threadIdx.x >= 32" if sync == "warp" else "")
            assert variant.index(f"if ({early}) return;") < variant.index("for (int i = 0;")


def test_map_indirect_reads_the_index_from_shared_memory():
    source = program("vector_add", "reference")[0]
    variant = get_operator("map_indirect_none").func(source).variants[0].source
    values = extract_features(variant).values
    assert values["mem.global_indirect"] == 3 and values["mem.global_coalesced"] == 0
    assert "const int i = s_idx_[threadIdx.x];" in variant


def test_map_operators_not_applicable():
    # histogram already stores with atomicAdd: an atomicExch would change its counts
    assert "written otherwise" in not_applicable("map_strided_atomic_or_grid", "histogram",
                                                 "reference")
    assert "read-only input" in not_applicable("map_mixed_block", "softmax", "reference")
    assert "one-thread-per-element" in not_applicable("map_indirect_none", "reduction",
                                                      "reference")


def test_planner_reaches_every_feasible_bin_of_vector_add_in_one_step():
    from structcover.campaign.mutate import RegistryMutate
    from structcover.tools.curation.planner import plan_chains

    source = program("vector_add", "reference")[0]
    values = extract_features(source).values
    # as the campaign plans: the operators a dry run shows to apply are rated by equivalence
    applicable = RegistryMutate().applicable(source)
    memo: dict = {}
    firsts: list[int] = []
    for access in LEVELS["pattern.global_access"]:
        for sync in LEVELS["pattern.sync"]:
            if access == "none" or (access, sync) == ("coalesced", "none"):
                continue
            plan = plan_chains(values, {"pattern.global_access": access, "pattern.sync": sync},
                               family="vector_add", memo=memo, applicable=applicable)
            assert plan.chains and plan.chains[0].reaches_target, (access, sync, plan.note)
            # A one-step route is always planned, near the top. It need not be first: since
            # an atomic's address counts as a store, stores_atomic keeps a mapping's access
            # level, and for mixed/atomic the evidence rates map_mixed_none + stores_atomic
            # (0.265) a little above map_mixed_atomic_or_grid (0.237).
            one_step = [i for i, c in enumerate(plan.chains[:3])
                        if len(c.operators) == 1 and c.reaches_target]
            assert one_step, (access, sync, [c.operators for c in plan.chains[:3]])
            firsts.append(len(plan.chains[0].operators))
    assert firsts.count(1) >= len(firsts) - 1, firsts  # one step first, all but one bin
