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

Only ops that allocate, describe, view, copy or fill tensors are harness plumbing; everything
else is compute. A candidate that defines a kernel and still runs torch compute in ``forward``
delegates (the ``no_library_delegation`` check, whose policy this mirrors); a candidate with no
kernel at all is a pure-torch answer, flagged ``defines_kernel`` and not watched.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

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


class TorchComputeWatch(TorchDispatchMode):
    """Counts the non-plumbing torch operators dispatched while the mode is active.

    Attributes:
        compute: Operator name (``mm``, ``sum`` ...) -> times run, in first-seen order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.compute: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = _name(func)
        if name not in PLUMBING and not name.startswith("sym_"):
            self.compute[name] += 1
        return func(*args, **(kwargs or {}))

    def finding(self, trial: int) -> str | None:
        """The hacking detail for what was seen, or None when ``forward`` ran plumbing only."""
        if not self.compute:
            return None
        ops = ", ".join(f"aten.{op} x{n}" for op, n in list(self.compute.items())[:5])
        return (f"trial {trial}: no_library_delegation: forward ran torch compute at run time "
                f"({ops}) although the candidate defines its own kernel: the output came from "
                "torch, however the call was spelled")
