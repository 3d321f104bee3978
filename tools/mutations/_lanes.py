"""Which parts of a kernel's expressions differ between the threads of a group: the helpers
the lane-loop and direct-addressing operators read starts, strides and bounds with."""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._tree import Src, find

#: Calls a lane-strided loop's body may not contain: re-assigning iterations changes how
#: often each lane reaches them, and a barrier or collective then diverges.
COLLECTIVE = re.compile(r"\b(?:__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any\w*|"
                         r"__all\w*|__activemask|__match\w*|__reduce\w*_sync|sync|bar_sync)\s*\(")
#: A warp index: a parenthesized or plain thread-index expression divided by a warp or more.
_WARP_DIVIDED = re.compile(r"(?:\([^()]*\)|\bthreadIdx\.[xyz])\s*"
                           r"(?:/\s*(?:32|64|128|256|warpSize|\w*WARP\w*)\b|>>\s*[5-9]\b)")

def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def terms(expr: str) -> list[str]:
    """Top-level ``+`` operands of ``expr`` (the whole expression when it has a top-level
    ``-``, whose sign a split would lose)."""
    expr = _strip_parens(expr)
    terms, depth, last = [], 0, 0
    for k, ch in enumerate(expr):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and ch == "-" and k > 0 and expr[k - 1] not in "eE*/(+-<>=":
            return [expr]
        if depth == 0 and ch == "+" and k > 0 and expr[k - 1] != "+" and \
                (k + 1 >= len(expr) or expr[k + 1] != "+"):
            terms.append(expr[last:k].strip())
            last = k + 1
    terms.append(expr[last:].strip())
    return [t for t in terms if t]


class Names:
    """A kernel's local definitions, to tell thread-varying expressions from group-uniform
    ones."""

    def __init__(self, src: Src, kernel: ts.Node) -> None:
        self.defs: dict[str, str] = {}
        for decl in find(kernel, "declaration"):
            for init in decl.named_children:
                if init.type != "init_declarator":
                    continue
                name = init.child_by_field_name("declarator")
                value = init.child_by_field_name("value")
                while name is not None and name.type not in ("identifier",):
                    name = name.child_by_field_name("declarator")
                if name is not None and value is not None:
                    self.defs.setdefault(src.of(name), src.of(value))
        #: name -> the values later assigned to it (``v = x[i];``, ``k += 2``).
        self.assigned: dict[str, list[str]] = {}
        for a in find(kernel, "assignment_expression"):
            left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier":
                self.assigned.setdefault(src.of(left), []).append(src.of(right))

    def expand(self, expr: str, depth: int = 0) -> str:
        """``expr`` with local names replaced by their definitions (a few levels deep)."""
        if depth > 4:
            return expr

        def sub(m: re.Match[str]) -> str:
            name = m.group(0)
            return f"({self.expand(self.defs[name], depth + 1)})" if name in self.defs else name

        return re.sub(r"(?<![\w.])[A-Za-z_]\w*", sub, expr)

    def varies(self, expr: str, grid: bool) -> bool:
        """Whether ``expr`` differs between the threads of a group (the grid when ``grid``,
        else a block or a warp, over which a warp index is uniform)."""
        text = self.expand(expr)
        if grid:
            return bool(re.search(r"\b(?:threadIdx|blockIdx)\b", text))
        while True:  # fold warp indices, innermost first, into a uniform placeholder
            folded = _WARP_DIVIDED.sub("U_", text)
            if folded == text:
                break
            text = folded
        return bool(re.search(r"\bthreadIdx\b", text))
