"""Result model and registry of the structure mutation operators.

An operator is a plain function ``program -> MutationResult``. Its docstring is its contract:
a ``Moves:`` section lists, one per line, ``<feature>: up|down|set`` (the promised direction
of a structural feature, as extracted by ``structcover.tools.features``) and the rest says
when it does not apply. The registry reads the ``Moves:`` section from the docstring, so the
promise the agents see is exactly the one the tests check.

Operators never return code they did not compile: every candidate goes through
``check_compiles`` and failures are kept in ``MutationResult.rejected`` with the reason.
Inside :func:`dry_run` the compile is skipped: the campaign asks there only *whether* a chain
applies to a program (a parse and a text edit), before it spends compiles on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from structcover.schema import content_hash
from structcover.tools.mutations._compile import check_compiles

Direction = Literal["up", "down", "set"]

#: Set inside :func:`dry_run` (per thread of execution: the campaign's fan-out runs targets in
#: parallel, and one target's check must not skip another's compiles).
_DRY: ContextVar[bool] = ContextVar("structcover_mutation_dry_run", default=False)


@contextmanager
def dry_run() -> Iterator[None]:
    """Operators applied inside keep their candidates without compiling them.

    For applicability checks only: a dry variant may not compile, so it must never be
    verified or recorded as an operator's output.
    """
    token = _DRY.set(True)
    try:
        yield
    finally:
        _DRY.reset(token)


class Variant(BaseModel):
    """One mutated program: its source, which operator made it with which parameters, and
    which structural features it promises to move."""

    source: str
    operator: str
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    promised: dict[str, Direction] = Field(default_factory=dict)
    parent_id: str = ""

    @property
    def id(self) -> str:
        """Content-hash id of the variant's source."""
        return content_hash(self.source)


class MutationResult(BaseModel):
    """What an operator did to one program: variants, or why it did not apply."""

    operator: str
    variants: list[Variant] = Field(default_factory=list)
    not_applicable: str | None = Field(default=None, description="why no variant was produced")
    rejected: list[str] = Field(default_factory=list,
                                description="candidates dropped because they did not compile")

    @property
    def applied(self) -> bool:
        """True when at least one variant came out."""
        return bool(self.variants)


Operator = Callable[[str], MutationResult]


@dataclass
class OperatorInfo:
    """A registered operator with its declared effects."""

    name: str
    func: Operator
    moves: dict[str, Direction]
    summary: str
    doc: str = ""
    family: str = ""
    tags: list[str] = field(default_factory=list)
    #: The language of the programs it rewrites: ``cuda`` (.cu text, load_inline sources) or
    #: ``triton`` (Python with @triton.jit kernels); ``run_operator`` dispatches on it.
    language: str = "cuda"


_REGISTRY: dict[str, OperatorInfo] = {}


def parse_moves(doc: str) -> dict[str, Direction]:
    """Read the ``Moves:`` section of an operator docstring.

    Raises:
        ValueError: A line in the section is not ``feature: up|down|set``.
    """
    moves: dict[str, Direction] = {}
    lines = doc.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == "Moves:")
    except StopIteration:
        return moves
    for line in lines[start + 1:]:
        if not line.strip():
            break
        m = re.fullmatch(r"\s*([\w.]+):\s*(up|down|set)\b.*", line)
        if not m:
            raise ValueError(f"bad Moves line {line!r}: expected 'feature: up|down|set'")
        moves[m.group(1)] = m.group(2)
    return moves


def operator(name: str, family: str, language: str = "cuda") -> Callable[[Operator], Operator]:
    """Register an operator under ``name`` (``family`` groups inverse pairs, e.g. "unroll";
    ``language``: the programs it rewrites, ``cuda`` or ``triton``)."""

    def wrap(func: Operator) -> Operator:
        doc = func.__doc__ or ""
        if name in _REGISTRY:
            raise ValueError(f"operator {name!r} registered twice")
        _REGISTRY[name] = OperatorInfo(name, func, parse_moves(doc),
                                       doc.strip().splitlines()[0] if doc.strip() else "",
                                       doc, family, language=language)
        return func

    return wrap


def registry() -> dict[str, OperatorInfo]:
    """All operators, by name (imports every operator module first)."""
    from structcover.tools.mutations import load_all

    load_all()
    return dict(sorted(_REGISTRY.items()))


def get_operator(name: str) -> OperatorInfo:
    """One operator by name.

    Raises:
        KeyError: Unknown operator; the message lists the known ones.
    """
    from structcover.tools.mutations import load_all

    load_all()
    info = _REGISTRY.get(name)  # no sorted copy of the registry per application
    if info is None:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(registry())}")
    return info


class Builder:
    """Collects an operator's candidates, compiling each before it is accepted."""

    def __init__(self, name: str, parent: str,
                 check: Callable[[str], tuple[bool, str]] | None = None) -> None:
        self.name = name
        self.parent = parent
        #: The compile check; None: ``check_compiles`` (looked up at each call). The Triton
        #: operators pass a Python bytecode compile.
        self.check = check
        self.result = MutationResult(operator=name)
        info = _REGISTRY.get(name)
        self.moves = dict(info.moves) if info else {}

    def add(self, source: str, **params: str | int | float | bool) -> bool:
        """Compile ``source``; keep it as a variant when it compiles and differs from the
        parent. Returns whether it was kept."""
        if source == self.parent or any(v.source == source for v in self.result.variants):
            return False
        ok, log = (True, "") if _DRY.get() else (self.check or check_compiles)(source)
        if not ok:
            first = next((ln for ln in log.splitlines() if "error" in ln), log[:200])
            self.result.rejected.append(f"{params}: does not compile: {first.strip()}")
            return False
        self.result.variants.append(Variant(source=source, operator=self.name, params=params,
                                            promised=self.moves,
                                            parent_id=content_hash(self.parent)))
        return True

    def done(self, reason: str = "") -> MutationResult:
        """Finish: when nothing was kept, record ``reason`` (or the compile failures)."""
        if not self.result.variants:
            why = reason or "no candidate"
            if self.result.rejected:
                why += "; rejected: " + "; ".join(self.result.rejected[:3])
            self.result.not_applicable = why
        return self.result
