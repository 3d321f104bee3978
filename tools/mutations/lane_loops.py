"""Thread mapping of cooperative kernels: which lane runs which iteration of a lane-strided
loop, and how outputs are stored.

Block-, warp- and grid-cooperative kernels (tree reductions, softmax and layernorm with a
block or warp per row, grid-stride histograms) spread a range over the threads of a group
with a *lane-strided loop*::

    for (int c = tid; c < cols; c += BLOCK)          // a block's threads share a row
    for (int c = lane; c < cols; c += 32)            // a warp's lanes share a row
    for (int i = gid; i < n; i += blockDim.x * gridDim.x)   // the grid shares the range

Lane ``L`` of the group runs iterations ``O + L, O + L + S, ...`` below the bound ``B``
(``O`` the part of the start that is the same for the whole group). Over the lanes
``0 .. S-1`` that visits every iteration of ``[O, B)`` once, so any other assignment of the
same iterations to the lanes computes the same result when the body's iterations are
independent or only accumulate: partial sums, maxima and counts combine the same way
afterwards, up to floating-point reassociation. The operators here re-assign them:

* ``lanes_chunked``: lane ``L`` runs the contiguous chunk ``[O + L*ch, O + L*ch + ch)``,
  ``ch = ceil((B - O) / S)``: neighbouring lanes read addresses ``ch`` elements apart
  (strided access);
* ``lanes_serial``: lane 0 runs every iteration in order, the other lanes none (the address
  has no thread index: broadcast access; the other lanes keep their accumulators' initial
  values, as lanes past the bound did before);
* ``lanes_split``: the first half of the range in chunks, the second half lane-strided as
  before (strided and coalesced access in one kernel: mixed).

``stores_atomic`` stores every output element with ``atomicExch(&y[index], v)`` in any kernel,
the store a policy writes when it is unsure that one thread owns an element
(``pattern.sync`` = atomic_or_grid). ``loads_indirect`` reads a kernel's first global load
through an index the thread wrote to its own shared-memory slot just before (an address that
reads memory: indirect access), in any kernel, whatever its synchronization.

None of them is meant to be fast; they put verified programs in access-pattern and
synchronization bins of tasks whose kernels the one-thread-per-element operators
(:mod:`structcover.tools.mutations.thread_mapping`) cannot rewrite. Whether a re-assignment is
valid for a given body (a scan's iterations depend on their order) is the verifier's
question: the operators only keep the loop's iteration set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter as ts

from structcover.tools.mutations._atomic_store import atomic_text, helper_edits, pure_index
from structcover.tools.mutations._lanes import COLLECTIVE, Names, terms
from structcover.tools.mutations._loops import Loop, breaks_out, canonical, pragma_before
from structcover.tools.mutations._tree import (
    Src,
    assigned_names,
    enclosing,
    find,
    indent_of,
    is_read,
    kernels,
    parse,
    pointer_params,
    splice,
)
from structcover.tools.mutations.base import Builder, MutationResult, operator

#: Names the generated code declares.
_OWN_NAMES = re.compile(r"\bll_\w+_\b")


@dataclass
class LaneLoop:
    """A lane-strided loop: ``for (T v = offset + lane; v < bound; v += stride)``."""

    loop: Loop
    lane: str
    offset: str
    stride: str
    pragma: ts.Node | None

    @property
    def start_byte(self) -> int:
        """Where the loop's text (with its ``#pragma unroll``) begins."""
        return (self.pragma or self.loop.node).start_byte


def lane_loops(src: Src, kernel: ts.Node) -> list[LaneLoop]:
    """The kernel's outermost lane-strided loops whose iterations may move between lanes."""
    names = Names(src, kernel)
    out: list[LaneLoop] = []
    for node in find(kernel, "for_statement"):
        loop = canonical(src, node)
        if loop is None or loop.op != "<" or loop.step.strip() == "1":
            continue
        if any(enclosing(node, "for_statement") == o.loop.node or
               _inside(node, o.loop.node) for o in out):
            continue
        grid = "gridDim" in names.expand(loop.step)
        if names.varies(loop.step, grid) or names.varies(loop.bound, grid):
            continue
        parts = terms(loop.start)
        lane = [t for t in parts if names.varies(t, grid)]
        if not lane:
            continue
        offset = [t for t in parts if t not in lane]
        body = src.of(loop.body)
        if COLLECTIVE.search(body) or re.search(r"\b(?:return|goto)\b", body) or \
                breaks_out(node) or loop.var in assigned_names(src, loop.body):
            continue
        out.append(LaneLoop(loop, " + ".join(lane), " + ".join(offset) or "0",
                            loop.step.strip(), pragma_before(src, node)))
    return out


def _inside(node: ts.Node, outer: ts.Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _body_text(src: Src, ll: LaneLoop) -> str:
    body = src.of(ll.loop.body)
    return body if ll.loop.body.type == "compound_statement" else "{ " + body + " }"


def _chunked(src: Src, ll: LaneLoop, k: int, ind: str) -> str:
    lp = ll.loop
    t, v, o, b, s, lane = lp.ctype, lp.var, ll.offset, lp.bound, ll.stride, ll.lane
    return (f"{{  // lanes_chunked: a contiguous chunk of the range per lane\n"
            f"{ind}    const {t} ll_ch{k}_ = (({b}) - ({o}) + ({s}) - 1) / ({s});\n"
            f"{ind}    const {t} ll_lo{k}_ = {o} + ({lane}) * ll_ch{k}_;\n"
            f"{ind}    for ({t} {v} = ll_lo{k}_; {v} < ll_lo{k}_ + ll_ch{k}_ && {v} < {b}; ++{v}) "
            f"{_body_text(src, ll)}\n{ind}}}")


def _serial(src: Src, ll: LaneLoop, k: int, ind: str) -> str:
    lp = ll.loop
    t, v, o, b = lp.ctype, lp.var, ll.offset, lp.bound
    return (f"if (({ll.lane}) == 0) {{  // lanes_serial: lane 0 runs the whole range in order\n"
            f"{ind}    for ({t} {v} = {o}; {v} < {b}; ++{v}) {_body_text(src, ll)}\n{ind}}}")


def _split(src: Src, ll: LaneLoop, k: int, ind: str) -> str:
    lp = ll.loop
    t, v, o, b, s, lane = lp.ctype, lp.var, ll.offset, lp.bound, ll.stride, ll.lane
    body = _body_text(src, ll)
    return (f"{{  // lanes_split: first half in chunks per lane, second half lane-strided\n"
            f"{ind}    const {t} ll_mid{k}_ = {o} + (({b}) - ({o})) / 2;\n"
            f"{ind}    const {t} ll_ch{k}_ = (ll_mid{k}_ - ({o}) + ({s}) - 1) / ({s});\n"
            f"{ind}    const {t} ll_lo{k}_ = {o} + ({lane}) * ll_ch{k}_;\n"
            f"{ind}    for ({t} {v} = ll_lo{k}_; {v} < ll_lo{k}_ + ll_ch{k}_ && {v} < ll_mid{k}_; "
            f"++{v}) {body}\n"
            f"{ind}    for ({t} {v} = ll_mid{k}_ + {lane}; {v} < {b}; {v} += {s}) {body}\n{ind}}}")


Rewrite = Callable[[Src, LaneLoop, int, str], str]


def _remap(program: str, name: str, rewrite: Rewrite) -> MutationResult:
    src = parse(program)
    b = Builder(name, program)
    if _OWN_NAMES.search(program):
        return b.done("the program already uses ll_*_ names this operator declares")
    edits: list[tuple[int, int, str]] = []
    count = 0
    for kernel in kernels(src):
        for ll in lane_loops(src, kernel):
            ind = indent_of(src, ll.loop.node)
            edits.append((ll.start_byte, ll.loop.node.end_byte, rewrite(src, ll, count, ind)))
            count += 1
    if not edits:
        return b.done("no lane-strided loop (for (v = offset + lane; v < bound; v += stride) "
                      "with a collective-free body) in a kernel")
    b.add(splice(src.text, edits), loops=count)
    return b.done()


@operator("lanes_chunked", family="lane_loops")
def lanes_chunked(program: str) -> MutationResult:
    """Give each lane of a lane-strided loop a contiguous chunk of the range instead of every
    S-th iteration: neighbouring lanes read ``ceil(range / S)`` elements apart (strided).

    Moves:
        mem.global_strided: up
        mem.global_coalesced: down

    Applies to kernels with a lane-strided loop (module docstring) whose body has no
    barrier, warp collective, ``return``, ``break`` or ``continue`` and keeps the loop
    variable.
    """
    return _remap(program, "lanes_chunked", _chunked)


@operator("lanes_serial", family="lane_loops")
def lanes_serial(program: str) -> MutationResult:
    """Let lane 0 of a lane-strided loop's group run the whole range in order; the other
    lanes run none of it. No address in the loop has a thread index (broadcast).

    Moves:
        mem.global_broadcast: up
        mem.global_coalesced: down

    Applies to the loops ``lanes_chunked`` takes.
    """
    return _remap(program, "lanes_serial", _serial)


@operator("lanes_split", family="lane_loops")
def lanes_split(program: str) -> MutationResult:
    """Split a lane-strided loop's range in two: the first half in a contiguous chunk per lane,
    the second half lane-strided as before (strided and coalesced access: mixed).

    Moves:
        mem.global_strided: up

    Applies to the loops ``lanes_chunked`` takes.
    """
    return _remap(program, "lanes_split", _split)


@operator("stores_atomic", family="lane_loops")
def stores_atomic(program: str) -> MutationResult:
    """Store every output element of a kernel with ``atomicExch(&y[index], v)``: the same
    value in the same place, as a policy writes it when it is unsure one thread owns the
    element (global atomics: ``pattern.sync`` = atomic_or_grid).

    Moves:
        atomics.global: up

    Applies to kernels whose every write of a float, int, unsigned or ``__half`` output is a
    plain ``y[index] = value;`` statement (a ``__half`` is stored with a 16-bit
    compare-and-swap loop, ``_atomic_store.HALF_STORE``; ``double`` has no ``atomicExch``).
    """
    src = parse(program)
    b = Builder("stores_atomic", program)
    edits: list[tuple[int, int, str]] = []
    helper: list[tuple[int, int, str]] = []
    why = "no kernel"
    for kernel in kernels(src):
        body = kernel.child_by_field_name("body")
        if body is None:
            continue
        text, why = atomic_text(src, kernel, src.of(body))
        if text is not None:
            edits.append((body.start_byte, body.end_byte, text))
            if not helper:  # one definition of the __half store helper, before its first user
                helper = helper_edits(src, kernel, text)
    if not edits:
        return b.done(why)
    b.add(splice(src.text, edits + helper))
    return b.done()


#: The block's linear thread index: every thread of any block shape has its own slot.
_LINEAR_TID = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)"
#: Slots of the index array: the most threads a CUDA block can have.
_SLOTS = 1024
#: Statements a load's index can be computed just before (a loop or branch header cannot).
_PLAIN_STATEMENTS = ("expression_statement", "declaration", "return_statement")


def _global_pointers(src: Src, kernel: ts.Node) -> set[str]:
    """The kernel's pointer parameters and the local pointers declared in it (``const float*
    xr = x + r * cols;``), the names a global read goes through."""
    names = set(pointer_params(src, kernel))
    body = kernel.child_by_field_name("body")
    for decl in find(body, "declaration") if body is not None else []:
        if "__shared__" in src.of(decl):
            continue
        for ptr in find(decl, "pointer_declarator"):
            if ptr.parent is not None and ptr.parent.type == "init_declarator":
                names.add(src.of(ptr.child_by_field_name("declarator")))
    return names


def _first_read(src: Src, kernel: ts.Node) -> tuple[ts.Node, ts.Node, str] | None:
    """(the read ``p[index]``, the statement holding it, the index) of the kernel's first global
    read whose side-effect-free index can be computed just before its statement."""
    pointers = _global_pointers(src, kernel)
    for sub in find(kernel, "subscript_expression"):
        arg, idx = sub.child_by_field_name("argument"), sub.child_by_field_name("indices")
        if arg is None or idx is None or src.of(arg) not in pointers:
            continue
        if not is_read(sub):
            continue
        index = src.of(idx)[1:-1].strip()
        if not pure_index(index):
            continue
        stmt = sub
        while stmt.parent is not None and stmt.parent.type != "compound_statement":
            stmt = stmt.parent
        if stmt.type in _PLAIN_STATEMENTS and stmt.parent is not None and \
                not enclosing(stmt, "lambda_expression"):
            return sub, stmt, index
    return None


@operator("loads_indirect", family="lane_loops")
def loads_indirect(program: str) -> MutationResult:
    """Read each kernel's first global load through its thread's shared-memory index slot:
    ``ll_idx_[t] = index; ... p[ll_idx_[t]]`` (the same element; an address that reads memory
    is indirect access). Each thread reads only the slot it wrote, so no barrier is needed
    and the kernel's synchronization is unchanged.

    Moves:
        mem.global_indirect: up

    Applies to kernels with a global read ``p[index]`` (a pointer parameter or a local
    pointer) whose index has no call, assignment or subscript, in a plain statement (not a
    loop or branch header).
    """
    src = parse(program)
    b = Builder("loads_indirect", program)
    if _OWN_NAMES.search(program):
        return b.done("the program already uses ll_*_ names this operator declares")
    edits: list[tuple[int, int, str]] = []
    for kernel in kernels(src):
        found, body = _first_read(src, kernel), kernel.child_by_field_name("body")
        if found is None or body is None:
            continue
        sub, stmt, index = found
        slot = f"ll_idx_[{_LINEAR_TID}]"
        ind = indent_of(src, stmt)
        edits += [(body.start_byte + 1, body.start_byte + 1,
                   f"\n    __shared__ long long ll_idx_[{_SLOTS}];  // loads_indirect: "
                   "one index slot per thread"),
                  (stmt.start_byte, stmt.start_byte, f"{slot} = ({index});\n{ind}"),
                  (sub.start_byte, sub.end_byte,
                   f"{src.of(sub.child_by_field_name('argument'))}[{slot}]")]
    if not edits:
        return b.done("no global read p[index] with a side-effect-free index in a plain "
                      "kernel statement")
    b.add(splice(src.text, edits))
    return b.done()


__all__ = ["LaneLoop", "lane_loops", "lanes_chunked", "lanes_serial", "lanes_split",
           "loads_indirect", "stores_atomic"]
