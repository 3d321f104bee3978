"""Parsing helpers over tree-sitter-cuda: one parser per process, cursor walks, error counts.

The CUDA grammar is used (the C++ one yields many ERROR nodes on CUDA). Everything here is
total: any text parses to *some* tree, and the number of ERROR/MISSING nodes says how well.
Python sources (KernelBench-style ``load_inline`` programs) carry their CUDA inside string
literals; :func:`embedded_cuda` pulls it out so the same extractor can read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

from structcover.tools.data.text import ENCODINGS, decode_source  # noqa: F401 - re-exported

#: Python string literals that may hold CUDA source (triple-quoted, either quote style).
_PY_TRIPLE = re.compile(r'(?:[rRbBuU]{0,2})("""|\'\'\')(.*?)\1', re.S)
_TRIPLE_OPEN = re.compile(r'"""|\'\'\'')
_PY_HINT = re.compile(r"^\s*(?:import|from)\s+\w+|^\s*def\s+\w+\s*\(|^\s*@\w+", re.M)


@lru_cache(maxsize=1)
def language() -> Language:
    """The tree-sitter-cuda language object (loaded once per process)."""
    return Language(tree_sitter_cuda.language())


@lru_cache(maxsize=1)
def parser() -> Parser:
    """A parser for CUDA, reused for every parse in this process."""
    return Parser(language())


@lru_cache(maxsize=32)
def query(text: str) -> Query:
    """A compiled query (cached by its text)."""
    return Query(language(), text)


def field_id(name: str) -> int:
    """Numeric id of a grammar field (``child_by_field_id`` skips the by-name lookup that
    ``child_by_field_name`` does on every call); 0, which matches nothing, when unknown."""
    return language().field_id_for_name(name) or 0


def to_bytes(source: str | bytes) -> bytes:
    """UTF-8 bytes of ``source``; undecodable text never raises (surrogates pass through)."""
    if isinstance(source, bytes):
        return source
    return source.encode("utf-8", "surrogatepass")


# decode_source and ENCODINGS live in tools/data/text.py (one decode step for every
# reader); they are imported above so existing callers keep working.


@dataclass
class Parsed:
    """A parsed program: its bytes, its tree and the byte budget it was cut to."""

    src: bytes
    tree: Tree
    truncated: bool = False

    @property
    def root(self) -> Node:
        """The translation unit."""
        return self.tree.root_node

    def text(self, node: Node) -> bytes:
        """The source bytes of ``node``."""
        return self.src[node.start_byte:node.end_byte]


def parse(source: str | bytes, max_bytes: int | None = None) -> Parsed:
    """Parse CUDA text; never raises on content.

    Args:
        source: Program text (str or bytes, any content).
        max_bytes: Cut longer inputs to this many bytes first (None: no limit).

    Returns:
        The parse; ``truncated`` says whether the input was cut.
    """
    data = to_bytes(source)
    truncated = max_bytes is not None and len(data) > max_bytes
    if truncated:
        data = data[:max_bytes]
    return Parsed(data, parser().parse(data), truncated)


def walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (included) in document order, with a TreeCursor."""
    cursor = node.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def error_nodes(node: Node) -> int:
    """Number of ERROR and MISSING nodes under ``node`` (0 quickly for a clean tree)."""
    if not node.has_error:
        return 0
    count = 0
    for n in walk(node):
        if n.is_error or n.is_missing:
            count += 1
    return count


def captures(query_text: str, node: Node) -> dict[str, list[Node]]:
    """Run a query on ``node``; captures by name, each list in document order."""
    found = QueryCursor(query(query_text)).captures(node)
    return {name: sorted(nodes, key=lambda n: n.start_byte) for name, nodes in found.items()}


def looks_like_python(text: str) -> bool:
    """True when ``text`` reads as Python (imports, defs or decorators at line starts)."""
    return len(_PY_HINT.findall(text[:20000])) >= 2 or "@triton.jit" in text


def embedded_cuda(text: str) -> str:
    """CUDA code held in Python triple-quoted strings (``load_inline`` style), joined.

    Only strings that look like device code (``__global__`` or ``__device__``) are kept; an
    empty string means there is none.
    """
    parts = [body for body in _triple_quoted(text) if "__global__" in body or "__device__" in body]
    return "\n".join(parts)


def _triple_quoted(text: str) -> Iterator[str]:
    """Bodies of ``_PY_TRIPLE``'s matches, in order, found with ``str.find`` (the regex's
    lazy ``.*?`` with a back-reference tries the closing quotes at every character)."""
    pos = 0
    while True:
        m = _TRIPLE_OPEN.search(text, pos)
        if m is None:
            return
        quote = m.group()
        end = text.find(quote, m.end())
        if end < 0:  # unclosed: the regex would retry one character further on
            pos = m.start() + 1
            continue
        yield text[m.end():end]
        pos = end + 3
