"""Open a GPU through the first device API implementation that works.

The factory lives apart from ``gpu_api`` (the protocol and its types) so that the
implementations (``gpu_cuda_python``, ``gpu_pycuda``) import the protocol and this module
imports them: no import cycle.
"""

from __future__ import annotations

from structcover.tools.verify import gpu_cuda_python, gpu_pycuda
from structcover.tools.verify.gpu_api import DeviceApi, GpuError


def open_device(index: int = 0, prefer: str | None = None) -> DeviceApi:
    """Open GPU ``index`` with the first implementation that works.

    Args:
        index: Device ordinal.
        prefer: ``"cuda-python"`` or ``"pycuda"`` to try that one first.

    Returns:
        An open device.

    Raises:
        GpuError: No implementation could open the device; the message lists why for each.
    """
    impls = [gpu_cuda_python, gpu_pycuda]
    if prefer == "pycuda":
        impls.reverse()
    reasons = []
    for impl in impls:
        try:
            return impl.open_device(index)
        except Exception as exc:  # missing module, missing driver, no device: try the next
            reasons.append(f"{impl.NAME}: {type(exc).__name__}: {exc}")
    raise GpuError("open_device", "; ".join(reasons))
