"""The layering rules of docs/ARCHITECTURE.md, checked against the real imports.

Every module of the package is parsed (not imported), with the folders mapped into the
``structcover`` namespace as pyproject's ``package-dir`` maps them. Imports under
``if TYPE_CHECKING:`` are left out: they never run, so they make no cycle. Imports inside
functions count: a lazy import is still a dependency, and a lazy cycle is still a cycle.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Layers of ``tools/`` packages, top to bottom (docs/ARCHITECTURE.md). A module imports from
#: its own layer or below.
TOOLS_LAYERS: dict[str, int] = {
    **dict.fromkeys(("report", "simulation", "coverage", "curation", "mutations", "explain"), 3),
    **dict.fromkeys(("verify", "mining", "compiler", "features", "store", "executors",
                     "kernelbench"), 2),
    **dict.fromkeys(("data", "cuda_ast"), 1),
}
#: What ``tools`` may import from outside ``tools``: the foundations.
TOOLS_MAY_IMPORT = {"structcover", "structcover.schema", "structcover.config",
                    "structcover.arith"}
#: Known exceptions, each with its reason; a listed one that no longer holds fails the test too,
#: so the list only shrinks.
KNOWN_CYCLES: dict[frozenset[str], str] = {
    frozenset({"structcover.tools.verify.hacking", "structcover.tools.verify.hacking_py"}):
        "run_checks dispatches Python files to hacking_py, which reuses the CUDA checks",
}
KNOWN_UPWARD: dict[tuple[str, str], str] = {
    ("structcover.tools.verify.pipeline", "structcover.tools.coverage.archive"):
        "the candidate pipeline's structure stage bins the program in the archive",
    ("structcover.tools.verify.pipeline", "structcover.tools.curation.targets"):
        "the structure stage compares the landed bin with the target's levels",
}


def _package_dirs() -> dict[str, Path]:
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    dirs = {"structcover": ROOT / "src" / "structcover"}
    dirs.update({name: ROOT / folder for name, folder in mapping.items() if name != ""})
    return dirs


@cache
def modules() -> dict[str, Path]:
    """Module name -> file, for every module of the package."""
    out: dict[str, Path] = {}
    for prefix, folder in _package_dirs().items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            # Subpackages mapped on their own (tools/verify) give the same names twice.
            out.setdefault(".".join([prefix, *parts]), path)
    return out


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except the bodies of ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *ast.walk(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def _resolve(name: str) -> str | None:
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> dict[str, frozenset[str]]:
    """Module -> the package modules it imports at run time."""
    mods = modules()
    out: dict[str, frozenset[str]] = {}
    for name, path in mods.items():
        found: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(r for a in node.names if a.name.startswith("structcover")
                             and (r := _resolve(a.name)))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.startswith("structcover"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    target = full if full in mods else _resolve(node.module)
                    if target:
                        found.add(target)
        found.discard(name)
        out[name] = frozenset(found)
    return out


def cycles(nodes: set[str], edges: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, frozenset()) & nodes)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, frozenset()) & nodes))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def _tools_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "tools" else None


def test_the_parser_sees_the_package():
    mods, edges = modules(), imports()
    assert "structcover.tools.coverage.archive" in mods and "structcover.commands.verify" in mods
    assert "structcover.agents" in mods and "structcover.graphs" in mods
    # A known top-level import and a known lazy one (inside a function) are both seen.
    assert "structcover.tools.coverage.cvt" in edges["structcover.tools.coverage.archive"]
    assert "structcover.tools.compiler.jailed" in edges["structcover.tools.compiler.nvcc"]
    # Every tools package has a layer, so a new package must be placed in one.
    assert {_tools_package(m) for m in mods if _tools_package(m)} <= set(TOOLS_LAYERS)


def test_cycles_are_found():
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}),
             "d": frozenset({"a"})}
    assert cycles(set(edges), edges) == [frozenset({"a", "b", "c"})]
    assert cycles({"a", "d"}, edges) == []


def test_commands_do_not_import_each_other():
    bad = {m: sorted(t for t in targets if t.startswith("structcover.commands.")
                     and not t.rpartition(".")[2].startswith("_"))
           for m, targets in imports().items() if m.startswith("structcover.commands.")}
    assert {m: t for m, t in bad.items() if t} == {}, \
        "what two commands share belongs in tools/ (or a private commands/_*.py helper)"


def test_tools_import_only_tools_and_foundations():
    bad = {m: sorted(t for t in targets if not t.startswith("structcover.tools.")
                     and t != "structcover.tools" and t not in TOOLS_MAY_IMPORT)
           for m, targets in imports().items() if m.startswith("structcover.tools")}
    assert {m: t for m, t in bad.items() if t} == {}


def test_tools_import_only_their_layer_or_below():
    upward = set()
    for m, targets in imports().items():
        here = _tools_package(m)
        for t in targets:
            there = _tools_package(t)
            if here and there and here != there and TOOLS_LAYERS[there] > TOOLS_LAYERS[here]:
                upward.add((m, t))
    assert upward - set(KNOWN_UPWARD) == set(), "a tools module imports a higher layer"
    assert set(KNOWN_UPWARD) - upward == set(), "a known exception is gone: delete it"


def test_no_import_cycles_between_tools_modules():
    tools = {m for m in modules() if m.startswith("structcover.tools.")}
    found = set(cycles(tools, imports()))
    assert found - set(KNOWN_CYCLES) == set(), "an import cycle between tools modules"
    assert set(KNOWN_CYCLES) - found == set(), "a known cycle is gone: delete it"
