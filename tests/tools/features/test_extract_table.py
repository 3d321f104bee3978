"""extract_table (pool, cache, ids, dtypes), mined patterns, and the query/cursor visit parity."""

from __future__ import annotations

import json

import feature_kernels as K
import pytest

from structcover.schema import content_hash
from structcover.tools.cuda_ast import parse
from structcover.tools.features.extract import extract_table, extract_values
from structcover.tools.features.facts import collect
from structcover.tools.features.patterns import PatternSet, mine_patterns
from structcover.tools.features.registry import NAMES, describe

SOURCES = [K.COALESCED, K.STRIDED, K.INDIRECT, K.TILED_GEMM, K.WARP_REDUCE, K.SHARED_REDUCE,
           K.TRANSPOSE_NAIVE, K.TRANSPOSE_TILED, K.VECTOR, K.MISC]


def test_table_one_row_per_program_with_raw_typed_values():
    table = extract_table([("a", K.COALESCED), ("b", K.TILED_GEMM)], workers=1)
    assert list(table["program_id"]) == ["a", "b"]
    assert list(table.columns) == ["program_id", *NAMES]
    assert table["smem.tiled"].tolist() == [False, True]
    assert table["smem.tiled"].dtype == bool
    assert table["mem.global_coalesced"].dtype == "int64"
    assert table["program.language"].tolist() == ["cuda", "cuda"]
    assert table["mem.coalesced_fraction"].dtype == "float64"


def test_bare_sources_get_content_hash_ids():
    table = extract_table([K.COALESCED], workers=1)
    assert table["program_id"].tolist() == [content_hash(K.COALESCED)]


def test_pool_matches_in_process():
    pairs = [(str(i), s) for i, s in enumerate(SOURCES * 4)]
    one = extract_table(pairs, workers=1)
    two = extract_table(iter(pairs), workers=2, chunksize=3)
    assert one.equals(two)


def test_cache_is_read_back(tmp_path):
    first = extract_table([("a", K.STRIDED)], workers=1, cache_dir=tmp_path)
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 1 and first["mem.global_strided"].iloc[0] == 1
    row = json.loads(files[0].read_text())
    row[NAMES.index("mem.global_strided")] = 99  # only a cache read can produce this value
    files[0].write_text(json.dumps(row))
    again = extract_table([("a", K.STRIDED)], workers=1, cache_dir=tmp_path)
    assert again["mem.global_strided"].iloc[0] == 99
    other = extract_table([("a", K.STRIDED + "\n")], workers=1, cache_dir=tmp_path)
    assert other["mem.global_strided"].iloc[0] == 1  # different content, different key


def test_bad_item_is_named():
    with pytest.raises(ValueError, match="'x'"):
        extract_table([("x", 42)], workers=1)


def test_mined_patterns_are_deterministic_small_and_savable(tmp_path):
    a = mine_patterns(SOURCES, top_k=8, rare_k=4)
    b = mine_patterns(list(reversed(SOURCES)), top_k=8, rare_k=4)
    assert a == b
    assert 0 < len(a.patterns) <= 12
    assert {p.band for p in a.patterns} <= {"frequent", "rare"}
    assert all(2 <= p.df <= 0.9 * len(SOURCES) for p in a.patterns)
    assert len(set(a.ids)) == len(a.ids)
    path = tmp_path / "patterns.json"
    a.save(path)
    assert PatternSet.load(path) == a
    values = extract_values(K.TILED_GEMM, patterns=a)
    # Registered structural patterns (pattern.reuse ...) share the prefix; mined ones do not.
    counts = {k: v for k, v in values.items() if k.startswith("pattern.") and k not in NAMES}
    assert set(counts) == {f"pattern.{i}" for i in a.ids}
    assert sum(counts.values()) > 0
    assert describe(next(iter(counts))).startswith("occurrences of mined subtree pattern")
    table = extract_table([K.TILED_GEMM], workers=1, patterns=a)
    assert table[next(iter(counts))].iloc[0] == counts[next(iter(counts))]


def test_pattern_load_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="bad.json"):
        PatternSet.load(bad)


@pytest.mark.parametrize("src", SOURCES)
def test_query_visit_equals_cursor_walk(src):
    parsed = parse(src)
    q, c = collect(parsed), collect(parsed, cursor_walk=True)
    assert [(f.name, f.kind, sorted(f.defs), len(f.subscripts), len(f.derefs), len(f.loops),
             len(f.branches), [n for n, _ in f.calls], f.max_loop_depth) for f in q.funcs] == \
        [(f.name, f.kind, sorted(f.defs), len(f.subscripts), len(f.derefs), len(f.loops),
          len(f.branches), [n for n, _ in f.calls], f.max_loop_depth) for f in c.funcs]
    assert (q.pragmas_unroll, q.templates, len(q.launches), q.nodes) == \
        (c.pragmas_unroll, c.templates, len(c.launches), c.nodes)
