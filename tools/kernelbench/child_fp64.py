"""The reference ``Model`` in float64 on the reference's own inputs (the precision check's r64).

Split from :mod:`child`, whose ``run_reference`` calls it when ``job["fp64"]`` is set; the
check itself is ``precision.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from structcover.tools.kernelbench.child_io import _flatten, _short


def widened(model: Any) -> tuple[Any, str]:
    """A float64 copy of the reference model, or (None, why not)."""
    import copy

    if not callable(getattr(model, "double", None)):
        return None, "the reference Model has no .double()"
    try:
        return copy.deepcopy(model).double(), ""
    except Exception as exc:  # noqa: BLE001 - the precision check is skipped, with the reason
        return None, "copying the reference Model to float64 raised " + _short(exc, 200)


def fp64_outputs(model64: Any, inputs: list[Any], outputs: list[Any],
                 rng_state: Any) -> tuple[list[Any] | None, str]:
    """The reference model in float64 on the same inputs (floating inputs upcast).

    The random generator is set to ``rng_state`` (the state the task-dtype forward started
    from: a forward that draws, dropout, draws the same) and restored after; tensors a forward
    creates without a dtype are float64 meanwhile.

    Returns:
        One entry per output: the float64 tensor where the output is a floating tensor, None
        elsewhere; or (None, why) when the run raised or its outputs do not match in count or
        shape.
    """
    import torch

    wide_in = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
               for x in inputs]
    after, default = torch.get_rng_state(), torch.get_default_dtype()
    torch.set_rng_state(rng_state)
    try:
        torch.set_default_dtype(torch.float64)
        with torch.no_grad():
            wide = _flatten(model64(*wide_in))
    except Exception as exc:  # noqa: BLE001
        return None, "the float64 run raised " + _short(exc, 200)
    finally:
        torch.set_default_dtype(default)
        torch.set_rng_state(after)
    if len(wide) != len(outputs):
        return None, f"the float64 run returned {len(wide)} outputs, not {len(outputs)}"
    found: list[Any] = []
    for i, (o, w) in enumerate(zip(outputs, wide, strict=True)):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()):
            found.append(None)
        elif not (isinstance(w, torch.Tensor) and w.is_floating_point()
                  and tuple(w.shape) == tuple(o.shape)):
            return None, f"the float64 run's output {i} is not a tensor of the same shape"
        else:
            found.append(w.detach().to("cpu", torch.float64))
    return found, ""


def save_fp64(path: Path, wide: list[Any]) -> None:
    import numpy as np

    np.savez(path, **{f"a{i}": w.numpy() for i, w in enumerate(wide) if w is not None})
