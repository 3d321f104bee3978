"""Mined subtree patterns: features for structures nobody named.

A pattern is a normalized subtree: a named node with its named children and grandchildren
(depth 2), node types only, so identifiers and literals are abstracted away. Mining counts
each pattern's document frequency over a corpus and keeps a small, deterministic set: the
most frequent ones that do not appear everywhere, and rare ones seen in at least
``min_df`` programs. Per program, ``pattern.<id>`` counts occurrences.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field
from tree_sitter import Node

from structcover.tools.cuda_ast import parse, walk
from structcover.tools.data.atomic import write_text

_MAX_CHILDREN = 6
#: Leaf and punctuation-like nodes carry no structure of their own.
_SKIP_ROOTS = frozenset({"identifier", "field_identifier", "number_literal", "string_literal",
                         "primitive_type", "type_identifier", "comment", "string_content",
                         "namespace_identifier", "preproc_arg", "escape_sequence"})


class Pattern(BaseModel):
    """One mined pattern."""

    id: str
    shape: str
    df: int = Field(description="number of corpus programs containing it")
    band: str = Field(description="frequent or rare")


class PatternSet(BaseModel):
    """A saved set of mined patterns (JSON), applied to new programs by id."""

    depth: int = 2
    n_docs: int = 0
    patterns: list[Pattern] = Field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """Pattern ids in set order."""
        return [p.id for p in self.patterns]

    def save(self, path: Path) -> None:
        """Write the set as JSON (atomically)."""
        write_text(self.model_dump_json(indent=2), path)

    @classmethod
    def load(cls, path: Path) -> PatternSet:
        """Read a set written by :meth:`save`.

        Raises:
            ValueError: The file is not a pattern set; the message names it.
        """
        try:
            return cls.model_validate(json.loads(Path(path).read_text()))
        except Exception as exc:  # noqa: BLE001 - re-raised with the file name
            raise ValueError(f"{path}: not a pattern set: {exc}") from exc


def _shape(node: Node) -> str | None:
    kids = [c for c in node.named_children[:_MAX_CHILDREN] if c.type != "comment"]
    if not kids:
        return None
    parts = []
    for c in kids:
        grand = [g.type for g in c.named_children[:_MAX_CHILDREN] if g.type != "comment"]
        parts.append(f"{c.type}({','.join(grand)})" if grand else c.type)
    return f"{node.type}[{' '.join(parts)}]"


def pattern_id(shape: str) -> str:
    """Deterministic id of a shape: first 10 hex digits of its sha1."""
    return hashlib.sha1(shape.encode()).hexdigest()[:10]


def shapes(root: Node) -> Counter:
    """Occurrences of every depth-2 normalized subtree under ``root``."""
    out: Counter = Counter()
    for node in walk(root):
        if node.is_named and node.type not in _SKIP_ROOTS and node.named_child_count:
            s = _shape(node)
            if s is not None:
                out[s] += 1
    return out


def mine_patterns(sources: Iterable[str], top_k: int = 32, rare_k: int = 32, min_df: int = 2,
                  max_df_frac: float = 0.9, rare_max_frac: float = 0.1) -> PatternSet:
    """Mine frequent and rare subtree patterns from a corpus.

    Args:
        sources: Program texts.
        top_k: Frequent patterns kept (highest document frequency below ``max_df_frac``).
        rare_k: Rare patterns kept (lowest document frequency >= ``min_df`` and at most
            ``rare_max_frac`` of the programs).
        min_df: Patterns in fewer programs are noise, never kept.
        max_df_frac: Patterns in more than this fraction of programs tell nothing apart.
        rare_max_frac: Upper document-frequency fraction of the rare band.

    Returns:
        The pattern set (ties broken by shape text, so mining is deterministic).
    """
    if top_k < 0 or rare_k < 0 or min_df < 1:
        raise ValueError("top_k and rare_k must be >= 0 and min_df >= 1")
    df: Counter = Counter()
    n = 0
    for src in sources:
        n += 1
        df.update(set(shapes(parse(src).root)))
    eligible = [(s, d) for s, d in df.items() if d >= min_df and d <= max_df_frac * n]
    frequent = sorted(eligible, key=lambda x: (-x[1], x[0]))[:top_k]
    taken = {s for s, _ in frequent}
    rare = sorted(((s, d) for s, d in eligible if s not in taken and d <= rare_max_frac * n),
                  key=lambda x: (x[1], x[0]))[:rare_k]
    pats = [Pattern(id=pattern_id(s), shape=s, df=d, band="frequent") for s, d in frequent]
    pats += [Pattern(id=pattern_id(s), shape=s, df=d, band="rare") for s, d in rare]
    return PatternSet(n_docs=n, patterns=pats)


def pattern_counts(root: Node, patterns: PatternSet) -> dict[str, int]:
    """``pattern.<id>`` counts of one program for the patterns of ``patterns``."""
    found = shapes(root)
    return {f"pattern.{p.id}": found.get(p.shape, 0) for p in patterns.patterns}
