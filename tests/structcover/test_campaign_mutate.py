"""The campaign's mutation port decides applicability by dry runs: the operators' parse and
text edit, never a compile, and the same answer the compiling application gives."""

from __future__ import annotations

import pytest

from structcover.campaign_tools import RegistryMutate
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
