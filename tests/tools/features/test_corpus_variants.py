"""The sample corpus: variants of each task differ in the features that define them.

Variant names say what structure they have (``smem_tiled16``, ``float4_tail``,
``warp_shuffle_grid_stride``…); each rule below maps a name token to the feature that must
show it, so a variant added later is checked by the same rules.
"""

from __future__ import annotations

import pytest

from structcover.tools.data.corpus import load_corpus
from structcover.tools.features.extract import extract_values

#: Features that define structure (size-like counts such as ast.nodes left out).
STRUCTURAL = [
    "mem.global_coalesced", "mem.global_strided", "mem.global_broadcast", "mem.global_indirect",
    "mem.global_strided_loads", "mem.global_strided_stores",
    "mem.vector_loads", "mem.ldg", "mem.restrict_params", "smem.tiled", "smem.padded",
    "smem.dynamic", "smem.static_bytes", "sync.block_barriers", "sync.barriers_in_loops",
    "warp.shuffles", "warp.votes", "atomics.global", "atomics.shared", "loop.grid_stride",
    "loop.unroll_pragmas", "reduce.shared_tree", "par.coarsening_loops", "cg.used",
    "kernel.count", "launch.block_size", "launch.count", "loop.max_depth"]

#: Name token -> features of which at least one must be non-zero.
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("float4", ("mem.vector_loads",)),
    ("int4", ("mem.vector_loads",)),
    ("grid_stride", ("loop.grid_stride",)),
    ("shuffle", ("warp.shuffles",)),
    ("warp_per_row", ("warp.shuffles",)),
    ("smem_tile", ("smem.tiled",)),
    ("padded", ("smem.padded",)),
    ("strided", ("mem.global_strided",)),
    ("uncoalesced", ("mem.global_strided",)),
    ("atomic", ("atomics.global",)),
    ("privatized", ("atomics.shared",)),
    ("cg_", ("cg.used",)),
    # Coarsening by a small constant loop, or by launching fewer threads over a grid-stride loop.
    ("coarsened", ("par.coarsening_loops", "loop.grid_stride")),
    ("ldg", ("mem.ldg",)),
    ("smem_tree", ("reduce.shared_tree",)),
    ("dynamic", ("smem.dynamic",)),
]

FAMILIES = load_corpus()
PROGRAMS = [(fam.name, p.name, p.source) for fam in FAMILIES for p in fam.programs]


@pytest.fixture(scope="module")
def values() -> dict[tuple[str, str], dict]:
    return {(f, n): extract_values(src) for f, n, src in PROGRAMS}


def test_corpus_is_present():
    assert len(FAMILIES) >= 5, "the sample corpus should ship several task families"


@pytest.mark.parametrize("family,name", [(f, n) for f, n, _ in PROGRAMS])
def test_named_structure_shows_in_features(values, family, name):
    v = values[(family, name)]
    assert v["parse.extract_error"] is False
    assert v["kernel.has_custom_kernel"] is True
    for token, features in RULES:
        if token in name:
            assert any(v[f] for f in features), \
                f"{family}/{name}: '{token}' variant but {[(f, v[f]) for f in features]}"


@pytest.mark.parametrize("family", [f.name for f in FAMILIES])
def test_programs_of_a_family_are_structurally_distinct(values, family):
    names = [n for f, n, _ in PROGRAMS if f == family]
    vectors = {n: tuple(values[(family, n)][k] for k in STRUCTURAL) for n in names}
    by_vector: dict[tuple, list[str]] = {}
    for n, vec in vectors.items():
        by_vector.setdefault(vec, []).append(n)
    clashes = [group for group in by_vector.values() if len(group) > 1]
    assert not clashes, f"{family}: structurally identical programs {clashes}"


def test_family_specific_contrasts(values):
    # Every family ships a program named "reference"; a missing key fails here instead of
    # silently skipping the check (a tuple key once made the gemm check dead).
    gemm_tiled = [v for (f, n), v in values.items() if f == "gemm" and "smem_tiled" in n]
    assert gemm_tiled
    for v in gemm_tiled:
        assert v["smem.tiled"] and v["sync.barriers_in_loops"] > 0 and v["smem.reuse_in_loop"]
    assert values[("gemm", "reference")]["smem.tiled"] is False
    transposes = {n: v for (f, n), v in values.items() if f == "transpose"}
    assert transposes["reference"]["mem.global_strided"] > 0
    for n, v in transposes.items():
        if n.startswith("smem"):
            assert v["mem.global_strided"] == 0 and v["smem.tiled"], n
    reductions = {n: v for (f, n), v in values.items() if f == "reduction"}
    assert reductions["reference"]["reduce.shared_tree"] is True
    assert reductions["reference"]["warp.shuffles"] == 0
