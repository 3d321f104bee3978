"""Tensors between the sandboxed torch child and the verifier: ``.npz`` files, never JSON.

Split from :mod:`child` (which re-exports these names): converting outputs to numpy and back
(bfloat16 travels as its 16-bit pattern), flattening a forward's result, saving and loading a
trial's tensors with their metadata, and the short exception text a result may carry (Triton's own description first).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def _triton_failure(exc: BaseException) -> tuple[str, str] | None:
    if "triton" not in sys.modules:
        return None
    from structcover.tools.kernelbench.triton_path import describe_failure

    return describe_failure(exc)


def _short(exc: BaseException, limit: int = 600) -> str:
    triton = _triton_failure(exc)
    if triton is not None:
        return triton[1]
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _to_numpy(t: Any) -> tuple[Any, str]:
    import numpy as np
    import torch

    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), "bfloat16"
    return t.numpy(), str(t.dtype).removeprefix("torch.")


def _from_numpy(arr: Any, dtype: str, device: str) -> Any:
    import numpy as np
    import torch

    # clone(): the tensor's memory comes from torch's allocator (on the CPU path the emulator's
    # guarded device allocator once an extension is loaded), not from numpy's buffer.
    if dtype == "bfloat16":
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16).clone().to(device)
    return torch.from_numpy(arr).clone().to(device)


def _flatten(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple | list) else [result]


def _save(path: Path, tensors: list[Any]) -> list[dict[str, Any]]:
    """Tensors to ``path`` (npz, keys a0..), their dtypes and shapes to the returned list."""
    import numpy as np
    import torch

    arrays: dict[str, Any] = {}
    meta: list[dict[str, Any]] = []
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor):
            arr, dtype = _to_numpy(t)
            arrays[f"a{i}"] = arr
            meta.append({"kind": "tensor", "dtype": dtype, "shape": list(arr.shape)})
        elif isinstance(t, bool | int | float) or t is None:
            meta.append({"kind": "value", "value": t})
        else:
            meta.append({"kind": "other", "type": type(t).__name__})
    np.savez(path, **arrays)
    return meta


def _load_inputs(path: Path, meta: list[dict[str, Any]], device: str) -> list[Any]:
    import numpy as np

    with np.load(path) as data:
        return [_from_numpy(data[f"a{i}"], m["dtype"], device) if m["kind"] == "tensor"
                else m.get("value") for i, m in enumerate(meta)]
