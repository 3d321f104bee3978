"""The campaign's mutation port (``structcover.agents.ports.MutateTool``) over the registered
operators (``tools.mutations``): chains applied with their compile checks, and the dry runs
(parse and text edit, no compile) that decide which operators and chains apply to a parent and
where each operator's variant lands.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from structcover.agents.ports import MutantSource
from structcover.schema import content_hash


@dataclass
class RegistryMutate:
    """Apply operator chains with the registered mutation operators.

    Each step keeps at most ``fanout`` variants (a seeded choice); only the last step's
    variants are compiled (the earlier steps are dry runs).
    """

    fanout: int = 2
    #: (source hash, chain, seed) -> result: many gaps plan the same chain from the same
    #: parent, and its last step compiles its variants.
    cache: dict[tuple[str, tuple[str, ...], int], list[MutantSource]] = field(
        default_factory=dict)
    #: A ``tools.executors`` executor (Ray) for the last step's applications; None: here.
    executor: Any = None
    #: (source hash, chain, seed) -> whether the chain applies, from a dry run.
    dry: dict[tuple[str, tuple[str, ...], int], bool] = field(default_factory=dict)
    #: source hash -> the operators that apply to it (dry runs).
    ops_for: dict[str, frozenset[str]] = field(default_factory=dict)
    #: source hash -> operator -> feature values of its first dry variant.
    firsts: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: Most dry runs kept (:meth:`_dry_variants`).
    dry_runs: int = 4096
    #: (operator, source hash) -> the operator's dry variants, most recently used last: the
    #: applicability test, the first steps, every chain's dry run and a chain's steps before
    #: its last all apply the same operators to the same programs.
    _dry_cache: OrderedDict[tuple[str, str], tuple[str, ...]] = field(
        default_factory=OrderedDict, repr=False)
    _dry_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def apply(self, source: str, chain: list[str], *, seed: int) -> list[MutantSource]:
        """Every distinct final program of the chain (operators that do not apply end it)."""
        key = (content_hash(source), tuple(chain), seed)
        if key not in self.cache:
            self.cache[key] = self._apply(source, chain, seed)
        return list(self.cache[key])

    def applicable(self, source: str) -> frozenset[str]:
        """Every registered operator that yields a variant from ``source``, by dry runs (one
        parse and text edit each, no compile), once per program for the whole campaign."""
        from structcover.tools.mutations.base import registry

        key = content_hash(source)
        if key not in self.ops_for:
            self.ops_for[key] = frozenset(n for n in registry()
                                          if self._dry_variants(n, source, key))
        return self.ops_for[key]

    def first_steps(self, source: str) -> dict[str, dict[str, Any]]:
        """Feature values of each applicable operator's first variant of ``source`` (a dry
        run and an extraction each, once per program for the whole campaign)."""
        from structcover.tools.features.extract import extract_features

        key = content_hash(source)
        if key not in self.firsts:
            out: dict[str, dict[str, Any]] = {}
            for name in sorted(self.applicable(source)):
                variants = self._dry_variants(name, source, key)
                if variants:
                    out[name] = dict(extract_features(variants[0]).values)
            self.firsts[key] = out
        return self.firsts[key]

    def applies(self, source: str, chain: list[str], *, seed: int) -> bool:
        """Whether the chain yields any program from ``source``, decided without compiling
        (:func:`~structcover.tools.mutations.base.dry_run`; here, not on the executor: a
        parse and a text edit per step cost less than shipping the task)."""
        key = (content_hash(source), tuple(chain), seed)
        if key in self.cache:
            return bool(self.cache[key])
        if key not in self.dry:
            self.dry[key] = bool(self._apply(source, chain, seed, local=True))
        return self.dry[key]

    def _apply(self, source: str, chain: list[str], seed: int,
               local: bool = False) -> list[MutantSource]:
        """The chain's final programs. The steps before the last come from dry runs; only the
        last step's variants are compiled (``local``: none is). An intermediate program is
        never a candidate, and the Verifier compiles the final one anyway, so compiling
        every intermediate variant (up to ``fanout + fanout**2`` programs for a chain of
        three) bought nothing."""
        from structcover.tools.mutations.base import registry

        ops = registry()
        rng = random.Random(seed)
        frontier = [source]
        for step, name in enumerate(chain):
            if name not in ops:
                return []
            if local or step < len(chain) - 1:
                steps = [self._dry_variants(name, src) for src in frontier]
            else:
                steps = self._variants(name, frontier)
            nxt: list[str] = []
            for variants in steps:
                rng.shuffle(variants)
                nxt += [v for v in variants[:self.fanout] if v not in nxt]
            if not nxt:
                return []
            frontier = nxt
        return [MutantSource(s, list(chain)) for s in frontier if s != source]

    def _dry_variants(self, name: str, source: str, key: str | None = None) -> list[str]:
        """Operator ``name``'s variants of ``source`` from a dry run (no compile), each
        (operator, program) run once while kept; a fresh list (callers shuffle it).
        ``key``: the source's content hash, when the caller has it."""
        from structcover.tools.mutations.base import dry_run

        ck = (name, key or content_hash(source))
        with self._dry_lock:
            hit = self._dry_cache.get(ck)
            if hit is not None:
                self._dry_cache.move_to_end(ck)
                return list(hit)
        with dry_run():
            found = tuple(apply_operator(name, source))
        with self._dry_lock:
            self._dry_cache[ck] = found
            while len(self._dry_cache) > self.dry_runs:
                self._dry_cache.popitem(last=False)
        return list(found)

    def _variants(self, name: str, frontier: list[str]) -> list[list[str]]:
        """Each program's compiled variants under operator ``name``, in order: the step's
        applications as one batch of executor tasks (each application compiles its variants),
        or here. An application that killed its worker on every try gives none."""
        if self.executor is None:
            return [apply_operator(name, src) for src in frontier]
        return [r if isinstance(r, list) else []
                for r in self.executor.map(apply_operator, frontier, batch_size=1, shared=name)]


def apply_operator(name: str, source: str) -> list[str]:
    """The variants (compiled, see ``tools.mutations.base``) of one operator on one program
    (module-level: an executor task)."""
    from structcover.tools.mutations.embedded import run_operator

    # A KernelBench candidate (Python) is mutated inside its load_inline CUDA and re-embedded.
    return [v.source for v in run_operator(name, source).variants]
