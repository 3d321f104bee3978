"""Python-side shims that let a KernelBench candidate written for CUDA run on torch's CPU.

Installed in the sandboxed child before the problem or the candidate is imported (CPU path
only), never by editing the user's text:

* ``torch.utils.cpp_extension.load_inline`` returns the extension the verifier built for the
  CPU beforehand (``cpu_build.build_cpu_extension``, outside this process, in the compiler
  jail), found by the call's content key (:meth:`InlineExtension.key`). A call whose text the
  static scan did not see is refused: the candidate built its source at run time.
* ``Tensor.cuda()`` / ``Module.cuda()`` return the CPU object; ``Tensor.to("cuda")``,
  ``Module.to("cuda")`` and ``device="cuda"`` in tensor factories mean the CPU.
* ``Tensor.is_cuda`` is True for CPU tensors, as the C++ side's ``is_cuda()`` is
  (``sc_kb_device.hpp``): a candidate that runs its kernel only ``if x.is_cuda`` (and falls back
  to torch otherwise) takes the branch it takes on a GPU. ``x.device.type`` stays ``"cpu"``.
* ``torch.cuda.is_available()`` is True, ``synchronize()`` returns at once (extension calls
  are synchronous on the CPU), ``current_stream()``/``default_stream()`` give a stream object
  whose ``cuda_stream`` is 0 (the emulator's default stream), ``current_device()`` is 0.

The memory the candidate's kernels see is torch's CPU memory; with
``torch.utils.deterministic.fill_uninitialized_memory`` on (set by the child), ``torch.empty``
from Python and ``torch::empty`` from C++ are filled with NaN (floats) or the largest value
(integers), so a kernel that leaves output elements unwritten, or reads them, shows up.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any

__all__ = ["LOADED", "install_cpu_shims", "map_device"]

#: The CPU-built extension modules the candidate loaded, in order (the precision probe fixes
#: their emulator schedule).
LOADED: list[Any] = []

#: Factories whose ``device=`` keyword the shims rewrite.
_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange",
              "linspace", "tensor", "as_tensor", "empty_like", "zeros_like", "ones_like",
              "full_like", "rand_like", "randn_like", "randint_like", "empty_strided", "eye",
              "randperm", "logspace", "from_numpy")


def map_device(device: Any) -> Any:
    """``cuda``, ``cuda:N`` or a CUDA ``torch.device`` become ``cpu``; anything else is kept."""
    import torch

    if isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    if isinstance(device, str) and device.split(":")[0] == "cuda":
        return "cpu"
    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"  # `.to(0)` / `.cuda(0)` name a CUDA ordinal
    return device


class _Stream:
    """What ``torch.cuda.current_stream()`` returns on the CPU path."""

    cuda_stream = 0
    device = None

    def synchronize(self) -> None:
        """Extension calls are synchronous on the CPU."""

    def wait_stream(self, other: object) -> None:
        """Nothing is in flight."""

    def query(self) -> bool:
        """Always idle."""
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _wrap_factory(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "device" in kwargs:
            kwargs["device"] = map_device(kwargs["device"])
        return fn(*args, **kwargs)
    return wrapper


def _install_device_shims() -> None:
    import torch

    for name in _FACTORIES:
        fn = getattr(torch, name, None)
        if fn is not None:
            setattr(torch, name, _wrap_factory(fn))

    def tensor_cuda(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self

    original_to = torch.Tensor.to

    def tensor_to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        args = tuple(map_device(a) if isinstance(a, str | torch.device) else a for a in args)
        if "device" in kwargs:
            kwargs["device"] = map_device(kwargs["device"])
        return original_to(self, *args, **kwargs)

    # setattr: the patches replace methods and module functions on purpose.
    setattr(torch.Tensor, "cuda", tensor_cuda)  # noqa: B010
    setattr(torch.Tensor, "to", tensor_to)  # noqa: B010
    module_to = torch.nn.Module.to

    def mod_to(self: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.nn.Module:
        args = tuple(map_device(a) if isinstance(a, str | torch.device) else a for a in args)
        if "device" in kwargs:
            kwargs["device"] = map_device(kwargs["device"])
        return module_to(self, *args, **kwargs)

    # Shadows TensorBase's descriptor for Python code only; torch's C++ sees the real device.
    setattr(torch.Tensor, "is_cuda", property(  # noqa: B010
        lambda self: self.device.type in ("cpu", "cuda"), doc="True on the CPU path (shim)"))
    setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)  # noqa: B010
    setattr(torch.nn.Module, "to", mod_to)  # noqa: B010
    stream = _Stream()
    for name, fn in {"is_available": lambda: True, "synchronize": lambda *a, **k: None,
                     "current_stream": lambda *a, **k: stream,
                     "default_stream": lambda *a, **k: stream, "current_device": lambda: 0,
                     "device_count": lambda: 1, "set_device": lambda *a, **k: None}.items():
        setattr(torch.cuda, name, fn)


def _install_load_inline(extensions: dict[str, str]) -> None:
    """``load_inline`` returns the prebuilt CPU module of the call with the same content key."""
    import torch.utils.cpp_extension as cpp_extension

    from structcover.tools.kernelbench.candidate import InlineExtension

    def load_inline(name: str, cpp_sources: Any, cuda_sources: Any = None,
                    sycl_sources: Any = None, functions: Any = None, **kwargs: Any) -> Any:
        ext = InlineExtension.from_call(name, cpp_sources, cuda_sources, functions, **kwargs)
        path = extensions.get(ext.key())
        if path is None:
            raise RuntimeError(f"load_inline({name!r}): sources differ from the text found in "
                               "the file (built at run time?); the CPU path builds only "
                               "static text")
        spec = importlib.util.spec_from_file_location(ext.name, path)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"load_inline({name!r}): cannot load the CPU build")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        LOADED.append(module)
        return module

    cpp_extension.load_inline = load_inline  # type: ignore[assignment]


def install_cpu_shims(extensions: dict[str, str]) -> None:
    """Install every shim of the module doc (once per process, before any user import).

    Args:
        extensions: Prebuilt CPU extension libraries by :meth:`InlineExtension.key`.
    """
    _install_device_shims()
    _install_load_inline(extensions)
