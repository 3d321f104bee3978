"""Kernel text for one (access mapping, synchronization) combination of a one-thread-per-element
kernel (:class:`~structcover.tools.mutations.parallel_strategy.PerElement`).

The element loop (which elements a thread handles, in what order) is one of :data:`MAPPINGS`:

* ``coalesced``: one element per thread, ``i = gid`` (the original mapping);
* ``strided``: a contiguous chunk of :data:`CHUNK` elements per thread, ``i = gid * 4 + c``
  (the launcher's grid shrinks by 4);
* ``broadcast``: the elements loop in order, ``i = 0 .. N-1``, in one thread (no thread index
  in any address);
* ``indirect``: one element per thread, the index read back from the thread's shared-memory
  slot, ``s_idx_[threadIdx.x] = gid; i = s_idx_[threadIdx.x]`` (an address that reads memory);
* ``mixed``: elements ``[0, N/2)`` one per thread (coalesced), ``[N/2, N)`` in contiguous
  chunks of 4 per thread (strided), in one kernel; the grid is unchanged.

The synchronization (:data:`SYNCS`) around each element:

* ``none``;
* ``block`` / ``warp`` / ``block_and_warp``: the element's read-only inputs (``p[i]``) pass
  through a per-thread shared slot — load, barrier, compute from the slot — or, for a kernel
  without such inputs, its trailing output stores ``y[index] = v;`` do (compute into the slot,
  barrier, store from the slot); the indirect mapping puts the barrier between writing and
  reading the index slot instead. Barriers sit outside every bounds guard and their loops have
  uniform trip counts, so every thread of the block (``__syncthreads()``) or every lane of the
  warp (``__syncwarp()``) reaches each of them. The broadcast mapping runs its loop in every
  thread of block 0 (every lane of warp 0 of block 0 for ``warp``), thread 0 doing the loads
  and stores; other blocks (warps) return before any barrier;
* ``atomic_or_grid``: every output element is stored with ``atomicExch(&y[index], v)`` (float,
  int and unsigned outputs: the types ``atomicExch`` has), or for ``__half`` outputs with
  ``_atomic_store.HALF_STORE``'s ``sc_atomic_store_half(&y[index], v)`` (a compare-and-swap loop on the
  element's 16 bits: ``atomicExch`` has no 16-bit overload); reads ``__ldg(p + i)`` are written
  ``__ldg(&p[i])``, the same load in the form the feature extractor counts (it counts neither
  ``__ldg(p + i)`` nor the address an atomic takes).

Every variant runs the kernel's body exactly once per element; each thread touches only its
own shared slots, so the barriers order nothing between threads and add no race.
"""

from __future__ import annotations

import re

from structcover.tools.mutations._atomic_store import (
    _top_level_comma,
    atomic_text,
    helper_edits,
    pure_index,
)
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    indent_block,
    param_names,
    parse,
    pointer_params,
)
from structcover.tools.mutations.parallel_strategy import PerElement, _wrap_grid

MAPPINGS = ("coalesced", "strided", "broadcast", "indirect", "mixed")
SYNCS = ("none", "block", "warp", "block_and_warp", "atomic_or_grid")

#: Elements per thread of the chunked mapping.
CHUNK = 4
#: Shared slots per staged input: the most threads a CUDA block can have, so every thread of
#: any launch has its own slot.
MAX_BLOCK = 1024
#: Bytes of one element of the types a staged input may have.
_SIZES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4, "__half": 2,
          "half": 2, "__nv_bfloat16": 2, "float2": 8, "float4": 16, "int2": 8, "int4": 16,
          "__half2": 4, "long": 8, "long long": 8, "char": 1, "unsigned char": 1,
          "signed char": 1, "short": 2, "int8_t": 1, "uint8_t": 1, "int32_t": 4,
          "uint32_t": 4, "int64_t": 8}
#: Static shared memory the staged slots may take (48 KB is the static limit; keep headroom).
_SMEM_BUDGET = 32 * 1024
THREAD_BUILTINS = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim|warpSize)\b")
_BARRIERS = {"block": ["__syncthreads();"], "warp": ["__syncwarp();"],
             "block_and_warp": ["__syncwarp();", "__syncthreads();"]}
#: Names the generated code declares (a kernel already using one is left alone).
_OWN_NAMES = re.compile(r"\b(?:c_|h_|s_idx_|s_\w+_)\b")
_GID = "blockIdx.x * blockDim.x + threadIdx.x"
_SLOT = "[threadIdx.x]"


def reads(name: str, var: str) -> str:
    """A regex for the element reads of input ``name`` at index ``var``: ``p[i]``,
    ``__ldg(p + i)``, ``__ldg(&p[i])`` and ``*(p + i)``."""
    n, v = re.escape(name), re.escape(var)
    return (rf"(?<![&\w.]){n}\s*\[\s*{v}\s*\]|__ldg\(\s*{n}\s*\+\s*{v}\s*\)"
            rf"|__ldg\(\s*&\s*{n}\s*\[\s*{v}\s*\]\s*\)|\*\s*\(\s*{n}\s*\+\s*{v}\s*\)")


def staged_inputs(src: Src, pe: PerElement) -> dict[str, str]:
    """Read-only pointer inputs whose element ``i`` the body reads (:func:`reads`): name ->
    element type (empty when none, or when their slots would pass the shared budget)."""
    written = assigned_names(src, pe.kernel)
    out = {}
    for name, ctype in pointer_params(src, pe.kernel).items():
        ctype = " ".join(ctype.split())
        if not re.fullmatch(r"\w+", name) or name in written or ctype not in _SIZES:
            continue
        if re.search(reads(name, pe.var), pe.body):
            out[name] = ctype
    total = sum(_SIZES[t] * MAX_BLOCK for t in out.values())
    return out if out and total <= _SMEM_BUDGET else {}


def _statements(body: str) -> list[str]:
    """The body's top-level statements, as text."""
    wrapped = parse("__device__ void f_() {\n" + body + "\n}\n")
    fn = next(n for n in wrapped.root.named_children if n.type == "function_definition")
    return [wrapped.of(s) for s in fn.child_by_field_name("body").named_children
            if s.type != "comment"]


def _store(stmt: str, names: dict[str, str]) -> tuple[str, str, str] | None:
    """``(name, index, value)`` when ``stmt`` is exactly ``name[index] = value;`` for one of
    ``names``, with an index free of side effects (:func:`pure_index`)."""
    m = re.fullmatch(r"(\w+)\s*\[([^\[\];]*)\]\s*=(?!=)\s*(.+?)\s*;", stmt, re.S)
    if m and m.group(1) in names and pure_index(m.group(2)) and \
            not _top_level_comma(m.group(3)):
        return m.group(1), m.group(2).strip(), m.group(3)
    return None


def _prelude(stmts: list[str], pe: PerElement, needed: set[str],
             params: set[str]) -> list[str] | None:
    """The body's leading ``const T n = expr;`` declarations that ``needed`` names depend on,
    in order, when each such ``expr`` reads only the element index, parameters and earlier
    ones (so it may run again after the barrier); None when a needed name is not such."""
    pure: dict[str, tuple[str, set[str]]] = {}
    for stmt in stmts:
        m = re.fullmatch(r"const\s+[\w\s]+?\s+(\w+)\s*=\s*([^;]+);", stmt)
        if m is None or not pure_index(m.group(2)):
            break
        pure[m.group(1)] = (stmt, set(re.findall(r"\b[A-Za-z_]\w*\b", m.group(2))))
    known = {pe.var} | params
    out: list[str] = []
    todo = set(needed) - known
    for name, (stmt, uses) in reversed(list(pure.items())):
        if name in todo:
            todo |= uses - known
            todo.discard(name)
            out.insert(0, stmt)
    return None if todo else out


class Outputs:
    """The trailing output stores a staging moves after the barrier."""

    def __init__(self, stores: list[tuple[str, str, str, str]], head: list[str],
                 prelude: list[str]) -> None:
        #: ``(name, element type, index, value)`` per store, in order.
        self.stores = stores
        #: The body's statements before them.
        self.head = head
        #: Declarations the stores' indices need, run again after the barrier.
        self.prelude = prelude


def staged_outputs(src: Src, pe: PerElement) -> Outputs | None:
    """The trailing statements ``y[index] = v;`` of the body whose pointer ``y`` the body
    names nowhere else (None when there are none or their slots pass the shared budget).
    Storing them after a barrier reorders nothing: they are the body's last statements. An
    index other than the element's own may use only parameters and the body's leading pure
    ``const`` declarations (``const int r = i / C;``), which are declared again after it."""
    ptrs = {n: " ".join(t.split()) for n, t in pointer_params(src, pe.kernel).items()}
    stmts = _statements(pe.body)
    out: list[tuple[str, str, str, str]] = []
    for stmt in reversed(stmts):
        st = _store(stmt, ptrs)
        if st is None or ptrs[st[0]] not in _SIZES or any(st[0] == o[0] for o in out):
            break
        out.insert(0, (st[0], ptrs[st[0]], st[1], st[2]))
    if not out:
        return None
    head = stmts[:len(stmts) - len(out)]
    names = {o[0] for o in out}
    if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", s) for s in head for n in names) or \
            any(re.search(rf"(?<![\w.]){re.escape(n)}\b", o[2] + " " + o[3])
                for o in out for n in names):
        return None
    if sum(_SIZES[o[1]] * MAX_BLOCK for o in out) > _SMEM_BUDGET:
        return None
    written = assigned_names(src, pe.kernel)
    params = {n for n in param_names(src, pe.kernel) if n not in written}
    used = {w for o in out for w in re.findall(r"\b[A-Za-z_]\w*\b", o[2])}
    prelude = _prelude(head, pe, used, params)
    if prelude is None:
        return None
    return Outputs(out, head, prelude)


def atomic_body(src: Src, pe: PerElement) -> tuple[str | None, str]:
    """The element body with every output store written atomically (:func:`atomic_text`)."""
    return atomic_text(src, pe.kernel, pe.body)


class _Staging:
    """Per element: ``pre`` under the guard, the barriers, then ``post`` under the guard."""

    def __init__(self, decls: list[str], pre: str, post: str) -> None:
        self.decls, self.pre, self.post = decls, pre, post


def _staging(src: Src, pe: PerElement) -> _Staging | None:
    inputs = staged_inputs(src, pe)
    if inputs:
        decls, loads, body = [], [], pe.body
        for p, ctype in sorted(inputs.items()):
            decls.append(f"__shared__ {ctype} s_{p}_[{MAX_BLOCK}];")
            loads.append(f"s_{p}_{_SLOT} = {p}[{pe.var}];")
            body = re.sub(reads(p, pe.var), f"s_{p}_{_SLOT}", body)
        return _Staging(decls, "\n".join(loads), body)
    outputs = staged_outputs(src, pe)
    if outputs:
        decls = [f"__shared__ {t} s_{y}_[{MAX_BLOCK}];" for y, t, _, _ in outputs.stores]
        pre = "\n".join([*outputs.head,
                         *(f"s_{y}_{_SLOT} = {v};" for y, _, _, v in outputs.stores)])
        post = "\n".join([*outputs.prelude,
                          *(f"{y}[{i}] = s_{y}_{_SLOT};" for y, _, i, _ in outputs.stores)])
        return _Staging(decls, pre, post)
    return None


def _if(cond: str, body: str) -> list[str]:
    return [f"if ({cond}) {{", indent_block(body, "    "), "}"]


def _element(pe: PerElement, index: str, bound: str, sync: str, body: str,
             st: _Staging | None) -> list[str]:
    """One element per thread at ``index`` (guarded by ``< bound``), synchronised."""
    v = pe.var
    if sync == "none" or sync == "atomic_or_grid" or st is None:
        return [f"const {pe.ctype} {v} = {index};", *_if(f"{v} < {bound}", body)]
    return [f"const {pe.ctype} {v} = {index};", *_if(f"{v} < {bound}", st.pre),
            *_BARRIERS[sync], *_if(f"{v} < {bound}", st.post)]


def _chunks(pe: PerElement, base: str, sync: str, body: str, st: _Staging | None) -> list[str]:
    inner = _element(pe, f"{base}({_GID}) * {CHUNK} + c_", pe.bound, sync, body, st)
    return [f"for (int c_ = 0; c_ < {CHUNK}; ++c_) {{  // {CHUNK} consecutive elements per "
            "thread", indent_block("\n".join(inner), "    "), "}"]


def generate(src: Src, pe: PerElement, mapping: str,
             sync: str) -> tuple[list[tuple[int, int, str]] | None, str]:
    """Edits turning ``pe`` into the (``mapping``, ``sync``) form, or ``(None, why not)``."""
    if mapping not in MAPPINGS or sync not in SYNCS:
        raise ValueError(f"generate: unknown combination {mapping}/{sync}")
    if _OWN_NAMES.search(src.of(pe.kernel)):
        return None, "the kernel already uses a name the rewrite declares (c_, h_, s_*_)"
    body, st, decls = pe.body, None, []
    barrier = sync in _BARRIERS
    if sync == "atomic_or_grid":
        body, why = atomic_body(src, pe)
        if body is None:
            return None, why
    elif barrier and mapping != "indirect":
        st = _staging(src, pe)
        if st is None:
            return None, (f"no read-only input read as p[{pe.var}] (element types "
                          f"{', '.join(sorted(_SIZES))}, at most {_SMEM_BUDGET // 1024} KB of "
                          f"slots) and no trailing output store y[{pe.var}] = value; to stage "
                          "through shared memory around the barrier")
        decls = st.decls
    edits: list[tuple[int, int, str]] = []
    v, n, ct = pe.var, pe.bound, pe.ctype
    if mapping == "coalesced":
        lines = _element(pe, _GID, n, sync, body, st)
    elif mapping == "strided":
        grid = _wrap_grid(src, pe.kernel, f"(({{}}) + {CHUNK - 1}) / {CHUNK}")
        if grid is None:
            return None, "a launch of the kernel has no 1-D integer grid to shrink"
        edits += grid
        lines = _chunks(pe, "", sync, body, st)
    elif mapping == "mixed":
        first = _element(pe, _GID, "h_", sync, body, st)
        lines = [f"const {ct} h_ = ({n}) / 2;  // [0, h_): one element per thread; "
                 f"[h_, {n}): {CHUNK} consecutive elements per thread",
                 "{", indent_block("\n".join(first), "    "), "}",
                 *_chunks(pe, "h_ + ", sync, body, st)]
    elif mapping == "indirect":
        decls = [f"__shared__ {ct} s_idx_[{MAX_BLOCK}];  // each thread's element index"]
        lines = [f"s_idx_{_SLOT} = {_GID};", *_BARRIERS.get(sync, []),
                 f"const {ct} {v} = s_idx_{_SLOT};", *_if(f"{v} < {n}", body)]
    else:  # broadcast
        if THREAD_BUILTINS.search(pe.body) or THREAD_BUILTINS.search(n):
            return None, "the body (or bound) reads the thread or block index itself"
        loop = f"for ({ct} {v} = 0; {v} < {n}; ++{v}) {{"
        if not barrier:
            lines = ["if (blockIdx.x == 0 && threadIdx.x == 0) {  // one thread, every element",
                     "    " + loop, indent_block(body, "        "), "    }", "}"]
        else:
            who = "blockIdx.x != 0" + (" || threadIdx.x >= 32" if sync == "warp" else "")
            step = [*_if("threadIdx.x == 0", st.pre), *_BARRIERS[sync],
                    *_if("threadIdx.x == 0", st.post)]
            lines = [f"if ({who}) return;  // the loop runs in "
                     + ("warp 0" if sync == "warp" else "every thread") + " of block 0, "
                     "thread 0 does the work", loop, indent_block("\n".join(step), "    "), "}"]
    text = indent_block("\n".join([*decls, *lines]), pe.indent)[len(pe.indent):]
    edits.append((pe.start, pe.end, text))
    edits += helper_edits(src, pe.kernel, text)
    return edits, ""
