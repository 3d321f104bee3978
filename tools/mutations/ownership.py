"""Ownership: a scatter with atomics (``atomicAdd(&hist[b], 1)`` per element) rewritten so that
each output element has one owning thread, which computes it alone: no atomics.

The owner of output ``b`` walks every element in order, evaluates the element's body, and adds
the element's contribution to its own accumulator when the element's key is ``b``; it then adds
the accumulator to ``hist[b]`` with a plain store (the output's earlier value is kept, as the
atomics kept it). The contributions are summed in another order, which for integer counts
(and any exact sum) gives the same result. Outputs are dealt to the threads of the grid with a
grid-stride loop, so any launch covers all of them.

Every owner reads every element, so the work is (outputs x elements): correct and slow. It
exists so the campaign can put verified programs of a scatter task (a histogram) in the
synchronization bins without atomics, which no fast histogram on a GPU occupies.
"""

from __future__ import annotations

import re

from structcover.tools.mutations._tree import Src, indent_block, kernels, parse, pointer_params, splice
from structcover.tools.mutations.base import Builder, MutationResult, operator
from structcover.tools.mutations.parallel_strategy import PerElement, per_element

#: ``atomicAdd(&H[K], V);`` with a plain key and a side-effect-free value.
_ATOMIC_ADD = re.compile(r"atomicAdd\(\s*&\s*(\w+)\s*\[\s*(\w+)\s*\]\s*,\s*([^;]+?)\)\s*;")
#: Names the generated code declares.
_OWN_NAMES = re.compile(r"\boc_\w+_\b")


def _owner_text(src: Src, pe: PerElement) -> tuple[str | None, str]:
    """The owner-computes replacement of ``pe``'s region, or ``(None, why not)``."""
    body = pe.body
    adds = list(_ATOMIC_ADD.finditer(body))
    if len(adds) != 1 or len(re.findall(r"\batomic\w*\s*\(", body)) != 1:
        return None, "the element body must hold exactly one atomicAdd(&H[key], value); and no other atomic"
    out, key, value = adds[0].group(1), adds[0].group(2), adds[0].group(3).strip()
    ptrs = {n: " ".join(t.replace("const", " ").split()) for n, t in pointer_params(src, pe.kernel).items()}
    if out not in ptrs or ptrs[out] not in ("int", "unsigned", "unsigned int", "long long",
                                            "unsigned long long", "int32_t", "uint32_t"):
        return None, f"{out} is not an integer output parameter (a float sum in another order " \
                     "is not the same sum)"
    if re.search(rf"(?<![\w.&]){re.escape(out)}\s*\[", body[:adds[0].start()] + body[adds[0].end():]):
        return None, f"the body uses {out} otherwise than through the atomicAdd"
    bound = re.search(rf"\b{re.escape(key)}\s*<\s*(\w+)\b", body)
    if bound is None:
        return None, f"no guard {key} < size gives the output's extent"
    if re.search(r"\w\s*\(|\+\+|--|(?<![=!<>])=(?!=)", value) or \
            re.search(r"\b(?:threadIdx|blockIdx|return|break|continue)\b", body):
        return None, "the value has side effects, or the body reads thread indices or jumps"
    owned = body[:adds[0].start()] + f"if ({key} == oc_b_) oc_acc_ += ({value});" + \
        body[adds[0].end():]
    ind = pe.indent
    text = (f"for (int oc_b_ = blockIdx.x * blockDim.x + threadIdx.x; oc_b_ < {bound.group(1)}; "
            f"oc_b_ += blockDim.x * gridDim.x) {{  // ownership: this thread computes {out}[oc_b_]\n"
            f"{ind}    {ptrs[out]} oc_acc_ = 0;\n"
            f"{ind}    for ({pe.ctype} {pe.var} = 0; {pe.var} < {pe.bound}; ++{pe.var}) {{  // every "
            "element, in order\n"
            f"{indent_block(owned, ind + '        ')}\n{ind}    }}\n"
            f"{ind}    {out}[oc_b_] += oc_acc_;\n{ind}}}")
    return text, ""


@operator("atomics_to_owner", family="ownership")
def atomics_to_owner(program: str) -> MutationResult:
    """Replace a per-element ``atomicAdd(&H[key], v)`` scatter by owners: each output element
    is computed by one thread that walks every element in order (module docstring).

    Moves:
        atomics.global: down

    Applies to one-thread-per-element kernels whose body's only atomic is
    ``atomicAdd(&H[key], value);`` into an integer output parameter, guarded by ``key < size``
    (the output's extent), with a side-effect-free value and no thread index or jump in the
    body.
    """
    src = parse(program)
    b = Builder("atomics_to_owner", program)
    if _OWN_NAMES.search(program):
        return b.done("the program already uses oc_*_ names this operator declares")
    edits: list[tuple[int, int, str]] = []
    why = "no one-thread-per-element kernel"
    for kernel in kernels(src):
        pe = per_element(src, kernel)
        if pe is None:
            continue
        text, why = _owner_text(src, pe)
        if text is not None:
            edits.append((pe.start, pe.end, text))
    if not edits:
        return b.done(why)
    b.add(splice(src.text, edits))
    return b.done()
