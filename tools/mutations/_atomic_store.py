"""Atomic output stores for the mutation operators: ``y[index] = v;`` written as an atomic
store of the same value in the same place (``atomicExch``, or for ``__half`` a 16-bit
compare-and-swap helper), which moves a kernel's ``pattern.sync`` to atomic_or_grid and leaves
its access pattern alone. Shared by the per-element maps (``_mapping``) and ``stores_atomic``
(``lane_loops``).
"""

from __future__ import annotations

import re

import tree_sitter as ts

from structcover.tools.mutations._tree import Src, pointer_params

#: Element types with an ``atomicExch`` overload.
ATOMIC_TYPES = ("float", "int", "unsigned", "unsigned int", "int32_t", "uint32_t",
                "unsigned long long", "unsigned long long int")
#: Element types stored through :data:`HALF_STORE` (a 16-bit compare-and-swap loop).
HALF_TYPES = ("__half", "half")
HALF_STORE_NAME = "sc_atomic_store_half"
#: An atomic store of a ``__half``: compare-and-swap on its 16 bits (CUDA's ``atomicCAS`` has
#: an ``unsigned short`` overload from sm_70) until the swap sees what it expected, which
#: leaves ``v`` in place exactly as ``atomicExch`` would for a 32-bit type.
HALF_STORE = f"""// Added by stores_atomic: atomicExch has no 16-bit overload, so a __half is stored
// with a compare-and-swap loop on its bits (the same atomic store).
__device__ __forceinline__ void {HALF_STORE_NAME}(__half* p, __half v) {{
    unsigned short int* w = reinterpret_cast<unsigned short int*>(p);
    const unsigned short int want = __half_as_ushort(v);
    unsigned short int seen = 0, was;
    while ((was = atomicCAS(w, seen, want)) != seen) seen = was;
}}

"""
def pure_index(expr: str) -> bool:
    """An index expression that reads no memory and changes nothing: names, literals and
    arithmetic (no call, assignment, increment or subscript), so it may be evaluated again."""
    return bool(expr.strip()) and not re.search(
        r"\w\s*\(|\+\+|--|\[|<<=|>>=|(?<![=!<>])=(?!=)", expr)


def _top_level_comma(expr: str) -> bool:
    depth = 0
    for ch in expr:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            return True
    return False


def _plain_store(name: str) -> re.Pattern[str]:
    """``name[index] =`` where a statement starts (after ``;``, a brace, an ``if (...)`` or
    ``else``); group 1 is the whitespace before it, group 2 the index."""
    return re.compile(rf"(?:(?<=[;{{}})])|(?<=\belse)|^)(\s*){re.escape(name)}\s*\[([^\[\];]*)"
                      rf"\]\s*=(?!=)", re.M)


def atomic_text(src: Src, kernel: ts.Node, body: str) -> tuple[str | None, str]:
    """``body`` (code of ``kernel``) with every output store ``y[index] = v;`` written
    ``atomicExch(&y[index], (T)(v));``,
    or ``(None, why not)``. Every write of such an output must be one of those stores."""
    ptrs = {n: " ".join(t.split()) for n, t in pointer_params(src, kernel).items()}
    stored = []
    for name, ctype in ptrs.items():
        n = re.escape(name)
        writes = re.findall(rf"(?<![\w.]){n}\s*\[[^\]]*\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                            rf"|(?<![\w.]){n}\s*\[[^\]]*\]\s*(?:\+\+|--)"
                            rf"|(?:\+\+|--)\s*{n}\s*\[|atomic\w*\(\s*&\s*{n}\b", body)
        if not writes:
            continue
        plain = [m for m in _plain_store(name).finditer(body) if pure_index(m.group(2))]
        if len(plain) != len(writes):
            return None, (f"output {name} is written otherwise than {name}[index] = value; "
                          "(an atomic store would change what it holds)")
        if ctype not in ATOMIC_TYPES and ctype not in HALF_TYPES:
            return None, (f"output {name} is {ctype}: no atomic store of that type "
                          f"(atomicExch has {', '.join(ATOMIC_TYPES[:3])} and unsigned; "
                          "__half goes through a 16-bit compare-and-swap)")
        stored.append((name, ctype))
    if not stored:
        return None, "no output element stored as y[index] = value;"
    # The feature extractor sees __ldg(&p[i]) but not __ldg(p + i) (the same load): with the
    # stores now atomic (an address, not an access), such reads would leave no visible access.
    body = re.sub(r"__ldg\(\s*(\w+)\s*\+\s*(\w+)\s*\)", r"__ldg(&\1[\2])", body)
    for name, ctype in stored:
        pos, out = 0, []
        for m in _plain_store(name).finditer(body):
            end = _statement_end(body, m.end())
            if end is None or _top_level_comma(body[m.end():end]):
                return None, f"a store to {name} is not a plain statement"
            call = HALF_STORE_NAME if ctype in HALF_TYPES else "atomicExch"
            out += [body[pos:m.start()], m.group(1),
                    f"{call}(&{name}[{m.group(2).strip()}], "
                    f"({ctype})({body[m.end():end].strip()}))"]
            pos = end
        body = "".join(out) + body[pos:]
    return body, ""


def helper_edits(src: Src, kernel: ts.Node, body: str) -> list[tuple[int, int, str]]:
    """The insertion of :data:`HALF_STORE` before ``kernel``'s top-level declaration when
    ``body`` (its new code) calls it and the program does not define it yet."""
    if f"{HALF_STORE_NAME}(" not in body or f"void {HALF_STORE_NAME}(" in src.of(src.root):
        return []
    top = kernel
    while top.parent is not None and top.parent.type != "translation_unit":
        top = top.parent
    return [(top.start_byte, top.start_byte, HALF_STORE)]


def _statement_end(text: str, pos: int) -> int | None:
    """Index of the ``;`` that ends the expression starting at ``pos`` (depth 0)."""
    depth = 0
    for k in range(pos, len(text)):
        ch = text[k]
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return None
        if ch == ";" and depth == 0:
            return k
    return None
