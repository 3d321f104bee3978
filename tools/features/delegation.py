"""Library delegation and launches per forward: ``lib.delegates_heavy_op`` and
``fusion.launches_per_forward``.

A program that hands its heavy operation (GEMM, convolution, attention) to a library or to the
framework is not a kernel of its own; the number of launches one forward pass makes on one
control path says how fused it is. Kept apart from the expert family: both are read from host
calls and the wrapper's Python text, not from device code.
"""

from __future__ import annotations

import bisect
import re

from tree_sitter import Node

from structcover.tools.features.model import Facts

_HEAVY_LIB = re.compile(rb"^(?:cublas\w*gemm\w*|cublasLt\w*|cublas\w*[Gg]emv\w*|"
                        rb"cudnnConvolution\w*|cudnnRNN\w*|(?:at|torch)::(?:\w+::)*(?:matmul|mm|"
                        rb"bmm|addmm|baddbmm|linear|conv\w*|einsum|_scaled_dot\w*))$")
_PY_OPS = r"(?:matmul|mm|bmm|addmm|baddbmm|linear|conv\w*|einsum|scaled_dot_product_attention)\s*\("
#: Heavy framework ops in Python text: ``torch.matmul(``, ``F.linear(``, ``nn.Conv2d(``, ``a @ b``.
#: Every branch starts with a literal character (the word boundary is a look-behind after it),
#: so the regex engine skips to candidate characters instead of trying each position: 4-6x
#: faster than ``\b(?:torch\.|F\.|...)`` on a load_inline file, with the same matches.
_PY_HEAVY = re.compile(r"t(?<!\wt)orch\.(?:nn\.functional\.)?" + _PY_OPS
                       + r"|F(?<!\wF)\." + _PY_OPS + r"|a(?<!\wa)t::" + _PY_OPS
                       + r"|t(?<!\wt)orch::" + _PY_OPS
                       + r"|nn\.(?:Linear|Conv\w+)\s*\(|@(?<![\w@]@)(?![\w.])")
_PY_HEAVY_WORDS = ("matmul", "mm", "linear", "conv", "einsum", "scaled_dot_product_attention",
                   "Linear", "Conv")


def _launches_on_one_path(facts: Facts) -> int:
    """Launch sites one forward can reach: exclusive arms of an ``if`` / ``else`` or of a
    ``switch`` (a launcher choosing a tile size by problem size) count as their largest arm,
    everything else adds up."""
    if not facts.launches:
        return 0
    starts = sorted(n.start_byte for n in facts.launches)
    ends = {n.start_byte: n.end_byte for n in facts.launches}
    return _count_launches(facts.parsed.root, starts, ends)


def _count_launches(node: Node, starts: list[int], ends: dict[int, int]) -> int:
    # A module function, not a closure: a recursive closure is a reference cycle that only
    # the cyclic collector frees.
    i = bisect.bisect_left(starts, node.start_byte)
    if not (i < len(starts) and starts[i] < node.end_byte):
        return 0  # no launch inside
    if ends.get(node.start_byte) == node.end_byte and node.type == "call_expression":
        return 1
    if node.type == "if_statement":
        cond = node.child_by_field_name("condition")
        arms = [node.child_by_field_name(f) for f in ("consequence", "alternative")]
        return (_count_launches(cond, starts, ends) if cond is not None else 0) + max(
            _count_launches(a, starts, ends) if a is not None else 0 for a in arms)
    if node.type == "switch_statement" and (body := node.child_by_field_name("body")):
        return max((_count_launches(c, starts, ends) for c in body.named_children), default=0)
    return sum(_count_launches(c, starts, ends) for c in node.children)


def delegation_features(facts: Facts | None, text: str, language: str
                        ) -> dict[str, int | bool]:
    """``lib.delegates_heavy_op`` and ``fusion.launches_per_forward``."""
    heavy = False
    launches = 0
    if facts is not None:
        launches = _launches_on_one_path(facts)
        for name, n in facts.host_calls.items():
            if _HEAVY_LIB.match(name):
                heavy = True
                launches += n
    if language in ("torch", "triton", "cute") or "load_inline" in text:
        # Every match holds one of these substrings: without any, the scan finds nothing.
        py_heavy = len(_PY_HEAVY.findall(text)) if "@" in text or any(
            w in text for w in _PY_HEAVY_WORDS) else 0
        heavy = heavy or py_heavy > 0
        launches += py_heavy
    return {"lib.delegates_heavy_op": heavy, "fusion.launches_per_forward": launches}
