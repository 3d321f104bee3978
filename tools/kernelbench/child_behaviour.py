"""Behaviour checks of the KernelBench candidate child on the CPU path (``child.py``).

* :func:`in_first_storage`: trials after the first pass their input values in trial 0's
  tensors, so a result cached by address, shape or object identity hits on new values and shows
  (``output-reused`` or a mismatch).
* :func:`fallback_call`: the fault-injection call, ``forward`` once more with every extension
  call failing at entry; a candidate that still answers, computing with torch, has a fallback.
"""

from __future__ import annotations

from typing import Any

__all__ = ["fallback_call", "in_first_storage"]


def in_first_storage(first: list[Any], inputs: list[Any]) -> list[Any]:
    """Trial ``t``'s input values in trial 0's tensors (same objects, same storage)."""
    import torch

    out = []
    for old, new in zip(first, inputs, strict=True):
        if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and \
                old.shape == new.shape and old.dtype == new.dtype and old.stride() == new.stride():
            old.copy_(new)
            out.append(old)
        else:
            out.append(new)
    return out


def fallback_call(model: Any, inputs: list[Any], watch: Any) -> str:
    """``forward`` on ``inputs`` with every loaded extension's calls failing at entry, under the
    torch-compute ``watch``. An honest candidate lets the failure reach its caller (or returns
    without computing); one that answers with torch instead has a fallback. Returns the hacking
    detail, or '' (also when no CPU-built extension was loaded)."""
    import torch

    from structcover.tools.kernelbench import cpu_shims

    if not cpu_shims.LOADED:
        return ""
    for module in cpu_shims.LOADED:
        module._sc_inject(True)
    try:
        with torch.no_grad(), watch:
            model(*inputs)
    except Exception:  # noqa: BLE001 - the failure reached the caller: what an honest one does
        return ""
    finally:
        for module in cpu_shims.LOADED:
            module._sc_inject(False)
    if not getattr(watch, "compute", None):
        return ""
    ops = ", ".join(f"aten.{op} x{n}" for op, n in list(watch.compute.items())[:5])
    return ("no_fallback: with every extension call failing (the fault-injection call), forward "
            f"still returned, computing with torch ({ops}): a fallback to the reference op "
            "when the kernel fails")
