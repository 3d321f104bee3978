"""The mutate port's dry runs are made once per (operator, program) and answer as uncached
runs do: applicability, first steps and chain dry runs on corpus parents."""

from __future__ import annotations

import random

import pytest

from structcover.campaign import mutate as mutate_mod
from structcover.campaign.mutate import RegistryMutate, apply_operator
from structcover.tools.data.corpus import load_corpus
from structcover.tools.features.extract import extract_features
from structcover.tools.mutations.base import dry_run, registry


def _reference(family: str) -> str:
    return next(f.reference.source for f in load_corpus() if f.name == family)


def _uncached_chain(source: str, chain: list[str], seed: int, fanout: int = 2) -> bool:
    """``RegistryMutate.applies`` computed with fresh dry runs at every step."""
    rng = random.Random(seed)
    frontier = [source]
    with dry_run():
        for name in chain:
            nxt: list[str] = []
            for variants in [apply_operator(name, src) for src in frontier]:
                rng.shuffle(variants)
                nxt += [v for v in variants[:fanout] if v not in nxt]
            if not nxt:
                return False
            frontier = nxt
    return any(s != source for s in frontier)


@pytest.mark.parametrize("family", ["histogram", "vector_add"])
def test_cached_dry_runs_answer_as_fresh_ones(family: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    source = _reference(family)
    runs: list[tuple[str, str]] = []
    real = mutate_mod.apply_operator

    def counted(name: str, src: str) -> list[str]:
        runs.append((name, src))
        return real(name, src)

    monkeypatch.setattr(mutate_mod, "apply_operator", counted)
    mutate = RegistryMutate()
    only = mutate.applicable(source)
    with dry_run():
        fresh = {n: real(n, source) for n in registry()}
    assert only == frozenset(n for n, v in fresh.items() if v)
    firsts = mutate.first_steps(source)
    assert firsts == {n: dict(extract_features(fresh[n][0]).values) for n in sorted(only)}
    # the first steps ran no operator again: the applicability test's runs served them
    assert len(runs) == len(registry())
    chains = [[a, b] for a in sorted(only)[:4] for b in ("stores_atomic", "lanes_split")]
    for chain in chains:
        assert mutate.applies(source, chain, seed=5) == _uncached_chain(source, chain, 5), chain
    assert len(set(runs)) == len(runs), "an (operator, program) dry run was made twice"


def test_the_dry_run_cache_is_bounded_and_hands_out_copies() -> None:
    mutate = RegistryMutate(dry_runs=3)
    source = _reference("saxpy")
    mutate.applicable(source)
    assert len(mutate._dry_cache) == 3
    got = mutate._dry_variants("block_size", source)
    assert len(got) >= 2
    got.reverse()  # callers shuffle their list: the cached answer stays as it was
    assert mutate._dry_variants("block_size", source) == list(reversed(got))
