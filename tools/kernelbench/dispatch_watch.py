"""Torch compute inside ``forward``, seen at run time: the behaviour side of library delegation.

The text checks (``tools/verify/hacking_py.py`` and the C++ rules of ``hacking_torch``) resolve
the usual spellings of a torch call, but a policy trained for reward finds the others: a dunder
(``A.__matmul__(B)``), a method looked up by a computed name (``getattr(A, "mat" + "mul")``),
``operator``/``functools`` indirection, or, inside the extension, an operator called through the
c10 dispatcher by its schema name. All of them reach torch's dispatcher, so a
:class:`TorchDispatchMode` around each trial's ``forward`` sees them, whatever they were called
from (Python, the candidate's C++ extension, a helper): C++ calls of ``at::`` functions go
through the dispatcher too. What it cannot see is compute that never enters the dispatcher
(``at::native::`` / ``at::cpu::`` functions called directly, numpy): the text checks name those,
and on the CPU path host code cannot read tensor memory outside a launch at all.

Ops that allocate, describe, view, copy or fill tensors are harness plumbing. Compute is
delegation only when it can carry the answer: when one of its tensor operands may hold data from
the inputs. Compute over *constants* (``torch::ones({M, N}, opts) * 0``, a public solution's way
of zeroing its output) cannot, so it is not counted. A tensor is a constant when every op that
produced it ran inside the watch on constants only (factories, fills, compute on constants) and
its values are unchanged since: a kernel (or numpy) that writes into it outside the dispatcher
changes them, and from then on it counts as data. Everything else (the inputs, the module's
parameters, kernel outputs) is data. A candidate that defines a kernel and still runs torch
compute on data in ``forward`` delegates (the ``no_library_delegation`` check, whose policy this
mirrors); a candidate with no kernel at all is a pure-torch answer, flagged ``defines_kernel``
and not watched.

**A finishing step is not delegation.** A kernel that reduces its input to per-block partial
sums and lets torch add the partials (``partials.sum()``), or that updates a BatchNorm's running
statistics with torch (a vector per channel), did the work. So torch compute on data is allowed
when everything it read is small next to the inputs: at most 1/:data:`FINISHER_SHARE` of the
bytes of ``forward``'s input tensors (operand bytes, counted per op; a view counts the elements
it spans) and a kernel ran in the call. Torch computing over anything the size of the inputs
(``x / norm``, ``loss.mean()`` over a per-element loss, ``x.mean(dim)``) still delegates. The
answer cannot come from torch alone through that allowance: with 1/16 of the input bytes it can
see at most 1/16 of the inputs (less once packed to a lower precision).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakTensorKeyDictionary

#: Torch compute on data reading at most 1 / FINISHER_SHARE of the input bytes is a finishing step.
FINISHER_SHARE = 16

#: aten operators (overload packets) that are plumbing: allocation, metadata, views, copies,
#: fills and casts. Anything else run inside ``forward`` is compute.
PLUMBING = frozenset({
    # allocation
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "scalar_tensor", "arange", "lift_fresh", "lift_fresh_copy", "resize_", "set_",
    # fills and copies (contiguous() is clone, .to()/.cuda()/.float() are _to_copy)
    "fill_", "zero_", "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "clone",
    "detach", "detach_", "alias", "_local_scalar_dense", "is_same_size",
    "_has_compatible_shallow_copy_type", "is_nonzero",
    # views
    "view", "_unsafe_view", "_reshape_alias", "reshape", "as_strided", "as_strided_", "expand",
    "permute", "transpose", "transpose_", "t", "t_", "select", "slice", "unsqueeze",
    "unsqueeze_", "squeeze", "squeeze_", "flatten", "unflatten", "narrow", "unbind", "split",
    "split_with_sizes", "chunk", "diagonal", "unfold", "view_as", "expand_as", "movedim",
    "contiguous",
})


def _name(func: Any) -> str:
    packet = str(getattr(func, "overloadpacket", func))
    return packet.removeprefix("aten.")


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _same(now: torch.Tensor, then: torch.Tensor) -> bool:
    """Bit-for-bit the same values (NaN equal to NaN: uninitialised memory may hold one)."""
    if now.shape != then.shape or now.dtype != then.dtype:
        return False
    if now.is_floating_point() or now.is_complex():
        return bool(torch.allclose(now, then, rtol=0.0, atol=0.0, equal_nan=True))
    return bool(torch.equal(now, then))


class TorchComputeWatch(TorchDispatchMode):
    """Counts the torch compute dispatched on data while the mode is active.

    Attributes:
        compute: Operator name (``mm``, ``sum`` ...) -> times run on data, in first-seen order.
        constant_compute: The same for compute whose operands were all constants (not counted
            as delegation; kept so a report can say what was seen).
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in dynamo.disable unless told not to, and the
        # wrapper imports torch._dynamo on the first op: 1.3 s of every child for a compiler
        # that never runs here (the child calls no torch.compile).
        return False

    def __init__(self) -> None:
        super().__init__()
        self.compute: Counter[str] = Counter()
        self.constant_compute: Counter[str] = Counter()
        #: Bytes of the data operands that compute read (each op's operands, summed).
        self.data_bytes = 0
        #: Bytes of tensors read into Python (``.item()`` on data, ``.tolist()``, ``.numpy()``).
        self.host_bytes = 0
        self.host_reads: Counter[str] = Counter()
        # Constant tensor -> a copy of its values when last produced inside the watch.
        self._constants = WeakTensorKeyDictionary()

    def _is_constant(self, tensor: torch.Tensor) -> bool:
        then = self._constants.get(tensor)
        return then is not None and _same(tensor, then)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        operands = _tensors((args, kwargs))
        # Decided before the op runs: an in-place op changes its operand's values.
        constant = [self._is_constant(t) for t in operands]
        on_constants = all(constant)
        result = func(*args, **kwargs)
        name = _name(func)
        if name == "_local_scalar_dense" and not on_constants:  # `.item()`, `float(t)`
            self.host_bytes += sum(t.element_size() for t in operands)
            self.host_reads["item"] += 1
        if name not in PLUMBING and not name.startswith("sym_"):
            (self.constant_compute if on_constants else self.compute)[name] += 1
            self.data_bytes += sum(t.numel() * t.element_size()
                                   for t, const in zip(operands, constant, strict=True) if not const)
        # In-place and out= ops return the tensor they wrote; operands they wrote without
        # returning keep their old copy, so they stop comparing equal and count as data.
        for out in _tensors(result):
            if on_constants:
                self._constants[out] = out.detach().clone()
            else:
                self._constants.pop(out, None)
        return result

    def __enter__(self) -> TorchComputeWatch:
        _ACTIVE.append(self)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _ACTIVE.remove(self)

    def _ops(self) -> str:
        ops = [f"aten.{op} x{n}" for op, n in list(self.compute.items())[:5]]
        return ", ".join(ops + [f"{how} x{n}" for how, n in self.host_reads.items()])

    def _read(self) -> int:
        return self.data_bytes + self.host_bytes

    def finishing(self, input_bytes: int, launched: bool) -> str | None:
        """A note when the compute and host reads seen are a finishing step (module doc)."""
        if not (self.compute or self.host_bytes) or not launched or \
                self._read() * FINISHER_SHARE > input_bytes:
            return None
        share = 100.0 * self._read() / max(input_bytes, 1)
        return (f"torch finished the answer ({self._ops()}; {self._read()} bytes read, "
                f"{share:.2g} % of the input bytes, at most {100 / FINISHER_SHARE:g} % allowed): "
                "a finishing step after the candidate's kernels, not delegation")

    def finding(self, trial: int, input_bytes: int = 0, launched: bool = False) -> str | None:
        """The hacking detail for what was seen, or None when ``forward`` computed on no data
        (and read none into Python) or only finished (:meth:`finishing`) what its kernels
        computed."""
        if not (self.compute or self.host_bytes) or self.finishing(input_bytes, launched):
            return None
        share = f", {100.0 * self._read() / input_bytes:.3g} % of the input bytes read" \
            if input_bytes else ""
        if not self.compute:
            return (f"trial {trial}: host_compute: forward read tensor data into Python at run "
                    f"time ({self._ops()}{share}): the output was computed on the host, not by "
                    "the candidate's kernel")
        return (f"trial {trial}: no_library_delegation: forward ran torch compute at run time "
                f"({self._ops()}{share}) although the candidate defines its own kernel: the "
                "output came from torch, however the call was spelled")


#: The watches in force (innermost last): the Python-side reads below count into the last.
_ACTIVE: list[TorchComputeWatch] = []
_READERS_INSTALLED = False


#: Tensor methods that copy a tensor's data into Python or numpy.
_DATA_READERS = ("tolist", "numpy", "__array__")
#: ``ctypes`` turns an address (``x.data_ptr()``, reachable with ``torch.ctypes``) into memory
#: Python reads unseen. The audit events CPython raises for it, and the module's functions that
#: raise none (``cast`` makes a readable pointer from an integer), are counted when the
#: candidate's own code triggers them.
_CTYPES_EVENTS = frozenset({"ctypes.cdata", "ctypes.cdata/buffer", "ctypes.string_at",
                            "ctypes.wstring_at", "ctypes.memmove", "ctypes.memset"})
_CTYPES_FUNCTIONS = ("cast", "_cast", "memmove", "memset", "string_at", "wstring_at")
#: Counted as read for a raw-memory access: more than any input, so never a finishing step.
RAW_READ_BYTES = 1 << 62


def _note_raw(how: str) -> None:
    from structcover.tools.kernelbench.candidate_frames import called_from_candidate

    if _ACTIVE and called_from_candidate(3):
        _ACTIVE[-1].host_bytes += RAW_READ_BYTES
        _ACTIVE[-1].host_reads[how] += 1


def _audit(event: str, args: Any) -> None:
    if _ACTIVE and event in _CTYPES_EVENTS:
        _note_raw(event)


def install_host_read_watch() -> None:
    """Count tensor data read into Python while a watch is active: ``Tensor.tolist()``,
    ``.numpy()``, ``__array__`` (the whole tensor each), and raw memory read through ``ctypes``
    by the candidate's code (an audit hook, which cannot be removed, and wrappers of the
    ``ctypes`` functions that raise no event). Once per process, before the candidate is
    imported (what it binds early is the wrapper); inactive outside a watch."""
    global _READERS_INSTALLED
    if _READERS_INSTALLED:
        return
    import ctypes
    import sys

    for method in _DATA_READERS:
        original = getattr(torch.Tensor, method)

        def reader(self: torch.Tensor, *args: Any, _how: str = method, _fn: Any = original,
                   **kwargs: Any) -> Any:
            if _ACTIVE:
                _ACTIVE[-1].host_bytes += self.numel() * self.element_size()
                _ACTIVE[-1].host_reads[_how] += 1
            return _fn(self, *args, **kwargs)

        setattr(torch.Tensor, method, reader)
    for name in _CTYPES_FUNCTIONS:
        fn = getattr(ctypes, name, None)
        if fn is None:
            continue

        def raw(*args: Any, _how: str = f"ctypes.{name}", _fn: Any = fn, **kwargs: Any) -> Any:
            _note_raw(_how)
            return _fn(*args, **kwargs)

        setattr(ctypes, name, raw)
    sys.addaudithook(_audit)
    _READERS_INSTALLED = True
