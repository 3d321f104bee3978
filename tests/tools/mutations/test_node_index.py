"""The preorder node index behind ``_tree.find``: the same nodes, in the same order, as a walk."""

from __future__ import annotations

import pytest

from structcover.tools.cuda_ast import parser, walk
from structcover.tools.data.corpus import load_corpus
from structcover.tools.mutations import _node_index, _tree
from structcover.tools.mutations._tree import find, parse

#: Type sets the operators look up (one, several, a repeat, one that never occurs).
TYPES = [("function_definition",), ("identifier",), ("call_expression", "identifier"),
         ("for_statement", "while_statement", "do_statement"), ("declaration", "preproc_def"),
         ("identifier", "identifier"), ("no_such_node",)]


def _walked(node, types):
    return [n for n in walk(node) if n.type in types]


@pytest.fixture(scope="module")
def programs() -> list[str]:
    fams = {f.name: f for f in load_corpus()}
    return [fams[name].programs[0].source for name in ("gemm", "histogram", "softmax")]


def test_indexed_find_equals_the_walk_under_every_node(programs: list[str]) -> None:
    for source in programs:
        src = parse(source)
        assert _node_index.lookup(src.root, ("function_definition",)) is not None
        for node in walk(src.root):
            for types in TYPES:
                assert find(node, *types) == _walked(node, types), (node.type, types)


def test_a_tree_the_cache_did_not_parse_is_walked(programs: list[str]) -> None:
    root = parser().parse(programs[0].encode()).root_node
    assert _node_index.lookup(root, ("identifier",)) is None
    assert find(root, "identifier") == _walked(root, ("identifier",))
    # the cached parse of the same text has equal-looking nodes of another tree: never mixed
    cached = parse(programs[0]).root
    assert find(root, "identifier") != find(cached, "identifier")


def test_an_evicted_parse_stops_answering_and_finds_still_work(
        programs: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tree, "PARSES", 1)
    first = parse(programs[1] + "\n// evicted next")
    assert _node_index.lookup(first.root, ("identifier",)) is not None
    parse(programs[2] + "\n// evicts the first")
    assert _node_index.lookup(first.root, ("identifier",)) is None
    assert find(first.root, "identifier") == _walked(first.root, ("identifier",))


def test_returned_lists_are_the_callers_own(programs: list[str]) -> None:
    src = parse(programs[0])
    found = find(src.root, "identifier")
    found.clear()
    assert find(src.root, "identifier")
