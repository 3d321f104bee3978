"""Features for the optimizations experts name: register tiling, shared-memory reuse, double
buffering, warp tiling, vector width, arithmetic intensity, fusion and library delegation.

Every measure is per thread and static. Loop bodies are weighted by their trip count when the
source fixes it (``for (int i = 0; i < TM; ++i)`` with ``TM`` a macro, constexpr or template
argument); a trip count the source does not fix weighs :data:`UNKNOWN_TRIPS` in the
arithmetic-intensity estimate (so a K loop outweighs the prologue and epilogue around it)
and 1 elsewhere (so grid-stride loops do not inflate per-thread counts).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from structcover.tools.cuda_ast import field_id
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.memory import MemoryFacts
from structcover.tools.features.model import Facts, Func
from structcover.tools.features.poly import Indirect, NotAffine, const_of
from structcover.tools.features.tensorcore import wmma_work
from structcover.tools.features.trips import UNKNOWN_TRIPS, Trips

_F_ARGUMENT = field_id("argument")
_F_INDICES = field_id("indices")
_F_LEFT = field_id("left")
_F_OPERATOR = field_id("operator")
_F_RIGHT = field_id("right")


_NAME = re.compile(rb"[A-Za-z_]\w*")
_MATH_NAMES = (b"expf exp __expf exp2f logf log __logf tanhf tanh sqrtf sqrt rsqrtf rsqrt erff erf "
               b"powf sinf cosf __sinf __cosf fmaxf fminf max min fabsf abs __fdividef sigmoid "
               b"relu gelu hexp h2exp __hmax __hmul __hadd __hmul2 __hadd2 fma fmaf __fmaf_rn "
               b"__fmaf_rz __fma_rn __hfma __hfma2").split()
#: One search decides "value statement": a float literal or a math/fma call.
_VALUE = re.compile(rb"\b\d+\.\d*|\.\d|\b\d+[eE][-+]?\d|\b\d+f\b|\b(?:"
                    + b"|".join(re.escape(n) for n in _MATH_NAMES) + rb")\s*\(")
#: A division by a warp (or a shift by 5): how a warp id is computed.
_WARP_ID = re.compile(rb"/\s*\(?\s*(?:32\b|warpSize|\w*WARP\w*|\w*[Ww]arp_?[Ss]ize\w*)|>>\s*5\b")
_ARITH = re.compile(rb"(?<![-+*/<>=!&|])[-+*/](?![-+=>])")
_BRACKETS = re.compile(rb"\[[^\[\]]*\]")
_FMA = (b"fma", b"fmaf", b"__fmaf_rn", b"__fmaf_rz", b"__fma_rn", b"__hfma", b"__hfma2")
_MATH = frozenset({b"expf", b"exp", b"__expf", b"exp2f", b"logf", b"log", b"__logf", b"tanhf",
                   b"tanh", b"sqrtf", b"sqrt", b"rsqrtf", b"rsqrt", b"erff", b"erf", b"powf",
                   b"sinf", b"cosf", b"__sinf", b"__cosf", b"fmaxf", b"fminf", b"max", b"min",
                   b"fabsf", b"abs", b"__fdividef", b"sigmoid", b"relu", b"gelu", b"hexp",
                   b"h2exp", b"__hmax", b"__hmul", b"__hadd", b"__hmul2", b"__hadd2"})
_WARP_DIVISORS = (b"32", b"warpSize", b"WARP", b"warp", b"Warp")
_ASYNC_COPY = (b"memcpy_async", b"__pipeline_memcpy_async", b"cp_async", b"cp.async")
_PIPE_WAIT = (b"__pipeline_wait_prior", b"cp_async_wait", b"cp.async.wait_group",
              b"pipeline_wait", b".consumer_wait", b".producer_acquire", b"wait_prior")


def _enclosing(spans: list[tuple[int, int, Node]], node: Node) -> tuple[Node, ...]:
    """The loops (``(start, end, node)`` spans) around ``node``."""
    s = node.start_byte
    return tuple(n for a, b, n in spans if a <= s < b)


def _flops(text: bytes, op: str) -> float:
    """Floating-point operations of one value statement (operators outside index brackets)."""
    body = text
    while b"[" in body:
        stripped = _BRACKETS.sub(b"[]", body)
        if stripped == body:
            break
        body = stripped
    n = len(_ARITH.findall(body))
    if b"(" in body:
        for name in _NAME.findall(body):
            n += 2 if name in _FMA else name in _MATH
    if op in ("+=", "-=", "*=", "/="):
        n += 1
    return float(n)


def _is_value(text: bytes) -> bool:
    """A statement computes on data (not indices): it reads an array, a float literal, or
    calls a math function."""
    return b"[" in text or _VALUE.search(text) is not None


def _local_array_elems(res: Resolver, func: Func, name: bytes) -> int:
    dims = func.local_array_dims.get(name, [])
    total = 1
    for dim in dims:
        try:
            value = const_of(res.resolve(dim)[0])
        except (NotAffine, Indirect):
            return 0
        if value is None:
            return 0
        total *= int(value)
    return total


def _array_base(node: Node | None) -> tuple[Node | None, list[Node]]:
    """Base identifier and indices (outermost dimension first) of a subscript chain."""
    idx: list[Node] = []
    while node is not None and node.type == "subscript_expression":
        i = node.child_by_field_id(_F_INDICES)
        if i is not None and i.type == "subscript_argument_list" and i.named_children:
            idx.append(i.named_children[0])
        node = node.child_by_field_id(_F_ARGUMENT)
    idx.reverse()
    return node, idx


def expert_features(facts: Facts, mem: MemoryFacts, resolvers: dict[int, Resolver]
                    ) -> dict[str, float | int | bool | None]:
    """``reg.*``, ``smem.reads_per_staged``, ``pipeline.*``, ``warp.tiling``,
    ``mem.vector_width_*``, ``intensity.*`` and ``fusion.kernel_stages`` values."""
    outputs = 0.0
    accumulators = 0
    smem_reads = smem_stores = 0.0
    double_buffer = False
    stages = 0
    warp_tiling = False
    vec_global = vec_shared = 1
    flops = gbytes = 0.0
    kernel_stages = 0
    # The call names joined by NUL (which no needle holds): one substring search per needle
    # finds the same names as a search in each name.
    called = b"\0".join(facts.all_calls)
    async_copy = any(a in called for a in _ASYNC_COPY) or any(
        b"cp.async" in a for a in facts.asm)
    waits = any(w in called for w in _PIPE_WAIT) or any(
        b"cp.async.wait" in a or b"commit_group" in a for a in facts.asm)
    src = facts.parsed.src
    for func in facts.funcs:
        if not func.is_device:
            continue
        res = resolvers.setdefault(id(func), Resolver(facts, func))
        trips = Trips(res)
        accesses = mem.of(func)
        func_outputs = 0.0
        for acc in accesses:
            w, wu = trips.weights(acc.site.loops) if acc.site.loops else (1.0, 1.0)
            if acc.space == "global":
                vec_global = max(vec_global, acc.vector)
                gbytes += 4.0 * acc.vector * wu
                if acc.store:
                    func_outputs += w * acc.vector
            elif acc.space == "shared":
                vec_shared = max(vec_shared, acc.vector)
                if acc.store:
                    smem_stores += w * acc.vector
                else:
                    smem_reads += w * acc.vector
        # Tensor-core calls: FLOPs, fragment traffic and accumulator tiles (tensorcore.py).
        tc = wmma_work(facts, func, res, trips)
        func_outputs += tc.outputs
        gbytes += tc.global_bytes
        flops += tc.flops
        smem_reads += tc.smem_reads
        smem_stores += tc.smem_stores
        accumulators += tc.accumulators
        outputs = max(outputs, func_outputs)  # per kernel (or helper), not summed over them
        # Register-array accumulators and value arithmetic.
        acc_arrays: set[bytes] = set()
        stores = func.stores
        for site in func.subscripts:
            if not site.loop_depth:
                continue  # accumulators and the arithmetic that counts sit in loops
            node = site.node
            if (node.start_byte, node.end_byte) not in stores:
                continue  # not the target of an assignment (reading the parent is costly)
            parent = node.parent
            if parent is None or parent.type != "assignment_expression" \
                    or parent.child_by_field_id(_F_LEFT) != node:
                continue
            op_node = parent.child_by_field_id(_F_OPERATOR)
            op = op_node.type if op_node is not None else "="
            right = parent.child_by_field_id(_F_RIGHT)
            base, idx = _array_base(node)
            rtext = (right.text or b"") if right is not None else b""
            btext = (base.text or b"") if base is not None else b""
            if base is not None and base.type == "identifier" and btext in func.local_arrays:
                if op in ("+=", "-=", "*=") or btext in rtext:
                    acc_arrays.add(btext)
            if right is not None and (op != "=" or _is_value(rtext)):
                flops += _flops(rtext, op) * trips.weight(site.loops, UNKNOWN_TRIPS)
        # Value statements on scalars inside loops (outside loops they are too few to count:
        # a loop body weighs at least its trip count).
        spans = [(site.node.start_byte, site.node.end_byte, site.node) for site in func.loops]
        lo = min((a for a, _, _ in spans), default=0)
        hi = max((b for _, b, _ in spans), default=0)
        for defs in func.defs.values() if spans else ():
            first = None
            for op, value in defs:
                if op == "for":
                    continue
                at = value.start_byte
                if not lo <= at < hi:
                    continue
                loops = _enclosing(spans, value)
                if not loops:
                    continue
                text = value.text
                if not _is_value(text):
                    if op not in ("+=", "-=", "*=", "/="):
                        continue  # index arithmetic, pointer increments, plain copies
                    if first is None:  # an accumulator: declared with a value (0.0f)
                        first = defs[0][0] == "decl" and _is_value(defs[0][1].text)
                    if not first:
                        continue
                flops += _flops(text, op) * trips.weight(loops, UNKNOWN_TRIPS)
        # Sorted: resolving a size memoizes variables, so the order must not follow the hash seed.
        accumulators += sum(_local_array_elems(res, func, a) for a in sorted(acc_arrays))
        # Double buffering: a staged shared array with a small leading stage dimension that
        # is indexed by a variable (As[buf][..], As[k % 2][..]).
        for arr in func.shared.values():
            if len(arr.dims) < 2:
                continue
            try:
                lead = const_of(res.resolve(arr.dims[0])[0])
            except (NotAffine, Indirect):
                continue
            if lead is None or not 2 <= lead <= 8:
                continue
            for acc in accesses:
                if acc.space != "shared" or acc.base != arr.name:
                    continue
                _, idx = _array_base(acc.site.node)
                if len(idx) == len(arr.dims) and _stage_index(func, idx[0]):
                    double_buffer = True
                    stages = max(stages, int(lead))
                    break
        warp_tiling = warp_tiling or _warp_tiled(func, accesses, src)
        if func.kind == "global":
            kernel_stages = max(kernel_stages, _stages(func))
    if async_copy and waits:
        double_buffer = True
        stages = max(stages, 2)
    return {
        "reg.outputs_per_thread": int(outputs),
        "reg.accumulators": accumulators,
        "reg.tiled": accumulators >= 2,
        "smem.reads_per_staged": (smem_reads / smem_stores) if smem_stores else None,
        "pipeline.double_buffered": double_buffer,
        "pipeline.stages": stages,
        "pipeline.async_copy": async_copy,
        "warp.tiling": warp_tiling,
        "mem.vector_width_global": int(vec_global),
        "mem.vector_width_shared": int(vec_shared),
        "intensity.flop_per_byte": (flops / gbytes) if gbytes else None,
        "fusion.kernel_stages": kernel_stages,
        "sync.grid": any(b"this_grid" in n or n.startswith(b"cudaLaunchCooperativeKernel")
                         or b"grid_group" in n for n in facts.all_calls),
    }


def _stage_index(func: Func, idx: Node) -> bool:
    """The index picks a pipeline stage: it changes from iteration to iteration (a loop
    variable, a variable reassigned in the function such as ``cur ^= 1``, or a name derived
    from one), and does not depend on the thread (``As[warp][...]`` is a per-warp slice)."""
    text = idx.text or b""
    if b"threadIdx" in text or idx.type == "number_literal":
        return False
    names = set(_NAME.findall(text))

    def varying(name: bytes) -> bool:
        defs = func.defs.get(name, ())
        return name in func.loop_vars or any(op not in ("decl", "for") for op, _ in defs)

    for name in names:
        if varying(name):
            return True
        defs = func.defs.get(name, ())
        if any(op == "decl" and any(varying(n) for n in _NAME.findall(v.text))
               and b"threadIdx" not in v.text for op, v in defs[:1]):
            return True
    return False


def _warp_tiled(func: Func, accesses: list, src: bytes) -> bool:
    """A shared-memory read inside a loop whose index follows a warp id (a thread index
    divided by a warp): each warp works on its own sub-tile."""
    if not any(a.space == "shared" and not a.store and a.site.loop_depth > 0 for a in accesses):
        return False
    if _WARP_ID.search(src, func.node.start_byte, func.node.end_byte) is None:
        return False
    warp_vars: set[bytes] = set()
    for name, defs in func.defs.items():
        for _, value in defs[:2]:
            t = value.text
            if (b"threadIdx" in t or b"thread_rank" in t) and (
                    (b"/" in t and any(d in t.split(b"/", 1)[1] for d in _WARP_DIVISORS))
                    or b">> 5" in t or b">>5" in t):
                warp_vars.add(name)
    if not warp_vars:
        return False
    for _ in range(3):  # names derived from a warp id (warpRow = warpIdx / (BN / WN))
        grown = {name for name, defs in func.defs.items()
                 if any(warp_vars & set(_NAME.findall(v.text)) for _, v in defs[:2])}
        if grown <= warp_vars:
            break
        warp_vars |= grown
    for acc in accesses:
        if acc.space == "shared" and not acc.store and acc.site.loop_depth > 0:
            if warp_vars & set(_NAME.findall(acc.site.node.text)):
                return True
    return False


def _stages(func: Func) -> int:
    """Distinct computation stages of a kernel: scalars reduced across loop iterations
    (``s += ...``, ``m = fmaxf(m, ...)``, shuffle reductions) plus distinct elementwise math
    functions; a max-then-sum softmax in one kernel has three."""
    reduced: set[bytes] = set()
    spans = [(site.node.start_byte, site.node.end_byte) for site in func.loops]
    if spans:
        for name, defs in func.defs.items():
            if len(defs) < 2 and defs[0][0] in ("decl", "for") or name in func.local_arrays:
                continue  # never updated after its declaration
            decl = -2
            for op, value in defs:
                if op != "+=" and op != "*=" and op != "=":
                    continue
                t = value.text
                if op == "=":
                    carried = (b"max" in t or b"min" in t or b"shfl" in t) \
                        and name in _NAME.findall(t)
                else:
                    carried = b"shfl" in t or _is_value(t)
                if not carried:
                    continue
                if decl == -2:
                    decl = next((v.start_byte for o, v in defs if o in ("decl", "for")), -1)
                at = value.start_byte
                # Carried across iterations: updated in a loop that its declaration is outside.
                if any(s <= at < e and not s <= decl < e for s, e in spans):
                    reduced.add(name)
                    break
    math = {n.lstrip(b"_").rstrip(b"f") for n, _ in func.calls
            if n in _MATH and n not in (b"max", b"min", b"fmaxf", b"fminf")}
    return len(reduced) + len(math)
