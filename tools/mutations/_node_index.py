"""Preorder index of a parsed tree, so that ``_tree.find`` answers without walking the tree.

A campaign dry-runs every operator on each parent, and each operator looks up the same kinds
of node (kernels, launches, loops, identifiers) in the same cached parse again and again: a
cursor walk per lookup was most of an applicability test's time. One walk per parse records
every node in document order; a node's descendants are the ``descendant_count`` entries from
its own position on, so the nodes of some types under any node are a bisect per type.

Indexes are registered by node id while their parse is cached (``_tree.parse``): a tree held
by the cache keeps its nodes' ids unique, and a node whose id is not registered (another
parse, an evicted one) falls back to the walk.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from itertools import chain

import tree_sitter as ts

from structcover.tools.cuda_ast import walk


class NodeIndex:
    """Every node of one tree in document order, with positions by id and by type."""

    __slots__ = ("by_type", "nodes", "pos")

    def __init__(self, root: ts.Node) -> None:
        nodes = list(walk(root))
        self.nodes = nodes
        self.pos = {n.id: i for i, n in enumerate(nodes)}
        by_type: dict[str, list[int]] = {}
        for i, n in enumerate(nodes):
            by_type.setdefault(n.type, []).append(i)
        self.by_type = by_type

    @property
    def complete(self) -> bool:
        """Whether the walk and tree-sitter's own count agree (the positions are sound)."""
        return bool(self.nodes) and len(self.nodes) == self.nodes[0].descendant_count \
            and len(self.pos) == len(self.nodes)

    def find(self, node: ts.Node, types: tuple[str, ...]) -> list[ts.Node] | None:
        """Nodes of ``types`` under ``node`` (included), in document order; None when
        ``node`` is not in this tree."""
        i = self.pos.get(node.id)
        if i is None or self.nodes[i] != node:  # Node equality compares the tree as well
            return None
        end = i + node.descendant_count
        spans = []
        for t in set(types):
            at = self.by_type.get(t)
            if at:
                a = bisect_left(at, i)
                b = bisect_left(at, end, a)
                if a < b:
                    spans.append(at[a:b])
        if not spans:
            return []
        picks = spans[0] if len(spans) == 1 else sorted(chain.from_iterable(spans))
        nodes = self.nodes
        return [nodes[k] for k in picks]


_OWNER: dict[int, NodeIndex] = {}
_LOCK = threading.Lock()


def register(index: NodeIndex) -> None:
    """Answer finds on ``index``'s nodes from it (while its tree is held by the caller)."""
    if not index.complete:
        return
    with _LOCK:
        for nid in index.pos:
            _OWNER[nid] = index


def unregister(index: NodeIndex) -> None:
    """Stop answering from ``index`` (its tree leaves the cache; its ids may be reused)."""
    with _LOCK:
        for nid in index.pos:
            if _OWNER.get(nid) is index:
                del _OWNER[nid]


def lookup(node: ts.Node, types: tuple[str, ...]) -> list[ts.Node] | None:
    """The indexed answer of ``find(node, *types)``, or None when ``node`` is not indexed."""
    index = _OWNER.get(node.id)
    return None if index is None else index.find(node, types)
