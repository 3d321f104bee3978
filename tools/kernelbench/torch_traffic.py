"""The memory traffic of torch's own operators inside ``forward``: GPU work the timer sees.

A KernelBench candidate's forward is more than its kernels. ``torch::zeros_like(x)`` for the
output is a fill kernel that writes the whole tensor before the candidate's kernel overwrites
it; ``x.contiguous()`` on a strided input, ``.clone()``, ``.to(dtype)`` are copy kernels. On a
memory-bound operation that work is of the same size as the kernel's own (an elementwise op
reads N and writes N; a zero fill adds another N writes), and the timed forward pays for it.
The emulator's counters see only the candidate's kernels, so the profile child also runs
``forward`` under :class:`TorchTrafficMeter`, a :class:`TorchDispatchMode` that records, per
aten operator, how often it ran and the bytes it read and wrote, for the timing model to add
(``tools/simulation/kb_profile_features.py``).

Bytes are a kernel's compulsory traffic, the way torch's elementwise kernels move data: every
tensor operand read once (a fill or factory reads nothing; a copy's or ``out=`` target is not
read), every written tensor written once (an in-place op reads and writes the tensor it
updates). Operators that launch no kernel on a GPU are not
counted: allocation (``empty*``), views and metadata. ``.item()`` (``_local_scalar_dense``)
is a device-to-host copy of one element: counted as a launch with its few bytes, since it also
synchronizes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["NO_KERNEL", "TorchTrafficMeter"]

#: aten operators (overload packets, without ``aten.``) that launch no GPU kernel.
NO_KERNEL = frozenset({
    # allocation without initialisation
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_",
    "set_", "lift_fresh", "scalar_tensor",
    # metadata and views
    "detach", "detach_", "alias", "is_same_size", "_has_compatible_shallow_copy_type",
    "view", "_unsafe_view", "_reshape_alias", "as_strided", "as_strided_", "expand",
    "permute", "transpose", "transpose_", "t", "t_", "select", "slice", "unsqueeze",
    "unsqueeze_", "squeeze", "squeeze_", "unflatten", "narrow", "unbind", "split",
    "split_with_sizes", "chunk", "diagonal", "unfold", "view_as", "expand_as", "movedim",
})
#: Copies into an existing tensor: they write it without reading it.
_OVERWRITES = frozenset({"copy_", "_copy_from", "_copy_from_and_resize"})
#: Fills and factories: they write their result (or the tensor they fill) and read nothing; a
#: ``*_like`` / ``new_*`` operand gives only the shape and dtype.
_READ_NOTHING = frozenset({"fill_", "zero_", "zeros", "zeros_like", "ones", "ones_like",
                           "full", "full_like", "new_zeros", "new_ones", "new_full", "arange"})


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of the distinct tensors (an operand passed twice is read once)."""
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def _mutated(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
             ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(tensors an in-place or ``out=`` operator writes, those of them it does not read:
    keyword-only ``out`` targets), from its schema's alias info."""
    written: list[torch.Tensor] = []
    targets: list[torch.Tensor] = []
    schema = getattr(func, "_schema", None)
    for i, arg in enumerate(getattr(schema, "arguments", [])):
        info = getattr(arg, "alias_info", None)
        if info is None or not info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        written += _tensors(value)
        if getattr(arg, "kwarg_only", False):
            targets += _tensors(value)
    return written, targets


class TorchTrafficMeter(TorchDispatchMode):
    """Per aten operator run while active: launches, bytes read, bytes written.

    Attributes:
        ops: Operator name -> ``{"launches", "read_bytes", "write_bytes"}``, in first-seen order.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in dynamo.disable unless told not to, and the
        # wrapper imports torch._dynamo on the first op: 1.3 s of every child for a compiler
        # that never runs here (the child calls no torch.compile).
        return False

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, dict[str, int]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = str(getattr(func, "overloadpacket", func)).removeprefix("aten.")
        operands = _tensors((args, kwargs))
        result = func(*args, **kwargs)
        if name in NO_KERNEL or name.startswith("sym_"):
            return result
        written, overwritten = _mutated(func, tuple(args), kwargs)
        written = written or _tensors(result)
        # An in-place op reads the tensor it updates (x.mul_(2)); a copy or ``out=`` target is
        # only written.
        if name in _OVERWRITES:
            overwritten = written
        read = [] if name in _READ_NOTHING else [t for t in operands
                                                if all(t is not w for w in overwritten)]
        row = self.ops.setdefault(name, {"launches": 0, "read_bytes": 0, "write_bytes": 0})
        row["launches"] += 1
        row["read_bytes"] += _bytes(read)
        row["write_bytes"] += _bytes(written)
        return result
