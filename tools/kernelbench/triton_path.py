"""Triton candidates: the CPU path runs their ``@triton.jit`` kernels in Triton's interpreter.

A KernelBench candidate may write its kernels in Triton (``@triton.jit`` functions launched as
``kernel[grid](...)``) instead of ``load_inline`` CUDA. On a GPU they compile as usual; on the
CPU path the sandboxed child runs them in Triton's interpreter (``triton.runtime.interpreter``,
numpy per program instance), which Triton selects when ``TRITON_INTERPRET=1`` is in the
environment at the time ``@triton.jit`` decorates a function (``triton.knobs.runtime.interpret``
reads the variable lazily, so it only has to be set before the candidate is imported; the jail
sets it at process start, see :func:`child_env`).

What this module adds on top of the interpreter, in the child, before the candidate is
imported (:func:`install_cpu_triton`):

* **Bounds**: every load, store and atomic a kernel makes (plain pointers, block pointers and
  tensor descriptors all end in the interpreter builder's masked load/store) must fall, for
  every element its mask lets through, inside the storage of one tensor argument of that
  launch. Otherwise the launch raises ``out-of-bounds`` naming the kernel: the interpreter
  itself reads and writes raw process memory, so a mask ``offsets <= n`` would otherwise touch
  the allocator's neighbouring bytes silently and could still give the right values.
* **Autotuning**: ``@triton.autotune`` would benchmark every config on a device the CPU does not
  have. The rule here: the first config, in the order listed, that survives the candidate's own
  pruning (``prune_configs_by``: ``early_config_prune`` and ``perf_model``/``top_k``). It is
  deterministic; a kernel wrong only for a later config is not seen (the GPU path tunes).
* **Devices**: the child's CPU shims already make ``.cuda()`` and ``device="cuda"`` the CPU;
  here ``Tensor.is_cuda`` also reads True, since Triton wrappers check it (``x.device.type``
  still says ``cpu``).
* **Launch count**: the launches of interpreted kernels are counted, so the child can tell a
  Triton candidate whose ``forward`` never launched a kernel (a decoy) from one that did.
* **Unsupported**: constructs the interpreter cannot run (``tl.inline_asm_elementwise``, extern
  and ``libdevice`` calls that have no numpy meaning, ...) raise ``NotImplementedError`` in the
  interpreter; :func:`describe_failure` turns that into ``unsupported: triton interpreter: ...``
  (``equivalent: null``), never a wrong verdict. :func:`unsupported_constructs` names the ones
  the syntax tree shows before anything runs.

Not faithful, and documented (docs/KERNELBENCH.md, "Triton"): program instances run one after
another, so races between programs and missing atomics do not show; ``tl.dot`` on fp32 inputs
is exact fp32 here (a GPU uses TF32 by default: less precise); ``num_warps``, ``num_stages``
and cache modifiers have no effect; accesses outside a tensor's *view* but inside its storage
are not flagged.
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["child_env", "describe_failure", "install_cpu_triton", "launches", "unsupported_constructs",
           "uses_triton"]

#: Where the interpreter's Triton may write: the jail's private ``/tmp`` (a tmpfs gone with
#: the jail). The interpreter compiles nothing, but ``triton`` resolves these folders at use.
_JAIL_TRITON_HOME = "/tmp/triton"

#: Constructs the interpreter has no meaning for (checked on the syntax tree first).
_UNSUPPORTED = (
    (re.compile(r"(^|\.)inline_asm_elementwise$"), "tl.inline_asm_elementwise (inline PTX)"),
    (re.compile(r"(^|\.)extern_elementwise$"), "tl.extern_elementwise (extern device library)"),
    (re.compile(r"^triton\.language\.extra\.cuda\.(?!libdevice)"),
     "triton.language.extra.cuda intrinsics (globaltimer, smid, ...)"),
    (re.compile(r"(^|\.)dot_scaled$"), "tl.dot_scaled (microscaled formats)"),
)

_state: dict[str, Any] = {"launches": 0, "ranges": None, "kernel": "?"}


def uses_triton(source: str) -> bool:
    """Whether the candidate imports ``triton`` (a static look at its syntax tree)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton"
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
            return True
    return False


def _dotted(node: ast.AST, alias: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([alias.get(node.id, node.id), *reversed(parts)])


def unsupported_constructs(source: str) -> list[str]:
    """Triton constructs in ``source`` the interpreter cannot run faithfully (``line N: what``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    alias: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                alias[a.asname or a.name] = f"{node.module}.{a.name}"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Name):
            target = _dotted(node, alias)
            for pattern, what in _UNSUPPORTED:
                if target.startswith("triton") and pattern.search(target):
                    entry = f"line {node.lineno}: {what}"
                    if entry not in found:
                        found.append(entry)
    return found


def child_env(device: str) -> dict[str, str]:
    """Environment for the jailed child: the interpreter on the CPU path, nothing on the GPU.

    Every Triton folder points into the jail's private ``/tmp`` so nothing is written outside
    the child's own folders (the GPU path compiles, and its cache lands there too).
    """
    env = {"TRITON_HOME": _JAIL_TRITON_HOME, "TRITON_CACHE_DIR": f"{_JAIL_TRITON_HOME}/cache",
           "TRITON_DUMP_DIR": f"{_JAIL_TRITON_HOME}/dump",
           "TRITON_OVERRIDE_DIR": f"{_JAIL_TRITON_HOME}/override"}
    if device != "cuda":
        env["TRITON_INTERPRET"] = "1"
    return env


def launches() -> int:
    """Interpreted kernel launches so far in this process."""
    return int(_state["launches"])


def _tensor_ranges(values: list[Any]) -> list[tuple[int, int, str]]:
    """(start, end, argument) byte ranges of the storages of the tensors among ``values``."""
    import torch

    out: dict[int, tuple[int, int, str]] = {}

    def visit(value: Any, name: str) -> None:
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            start = storage.data_ptr()
            out.setdefault(start, (start, start + storage.nbytes(), name))
        elif isinstance(value, tuple | list):
            for i, v in enumerate(value):
                visit(v, f"{name}[{i}]")
        elif hasattr(value, "base") and hasattr(value, "block_shape"):  # TensorDescriptor
            visit(value.base, name)

    for i, v in enumerate(values):
        visit(v, f"argument {i}")
    return sorted(out.values())


def _check(ptrs: Any, mask: Any, what: str) -> None:
    """Raise ``out-of-bounds`` when a masked-in pointer leaves every tensor argument."""
    import numpy as np

    ranges = _state["ranges"]
    if ranges is None:
        return
    data = np.asarray(ptrs.data, dtype=np.uint64)
    live = np.broadcast_to(np.asarray(mask.data, dtype=bool), data.shape) if mask is not None \
        else np.ones(data.shape, dtype=bool)
    addr = data[live]
    if addr.size == 0:
        return
    size = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
    starts = np.array([r[0] for r in ranges], dtype=np.uint64)
    ends = np.array([r[1] for r in ranges], dtype=np.uint64)
    idx = np.searchsorted(starts, addr, side="right").astype(np.int64) - 1
    ok = idx >= 0
    ok[ok] = addr[ok] + np.uint64(size) <= ends[idx[ok]]
    if ok.all():
        return
    bad = int((~ok).sum())
    raise IndexError(f"out-of-bounds: Triton kernel `{_state['kernel']}` {what} {bad} element(s) "
                     "outside the memory of every tensor argument of its launch (every "
                     "masked-in address is checked on the CPU path)")


def _patch_builder() -> None:
    from triton.runtime import interpreter  # type: ignore[import-untyped]

    builder = interpreter.InterpreterBuilder
    load, store = builder.create_masked_load, builder.create_masked_store
    cas, rmw = builder.create_atomic_cas, builder.create_atomic_rmw

    def masked_load(self: Any, ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check(ptrs, mask, "loads")
        return load(self, ptrs, mask, *args, **kwargs)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any
                     ) -> Any:
        _check(ptrs, mask, "stores")
        return store(self, ptrs, value, mask, *args, **kwargs)

    def atomic_cas(self: Any, ptr: Any, *args: Any, **kwargs: Any) -> Any:
        _check(ptr, None, "atomically updates")
        return cas(self, ptr, *args, **kwargs)

    def atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any
                   ) -> Any:
        _check(ptr, mask, "atomically updates")
        return rmw(self, op, ptr, val, mask, *args, **kwargs)

    builder.create_masked_load = masked_load
    builder.create_masked_store = masked_store
    builder.create_atomic_cas = atomic_cas
    builder.create_atomic_rmw = atomic_rmw

    executor = interpreter.GridExecutor
    call = executor.__call__

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        _state["launches"] += 1
        outer = (_state["ranges"], _state["kernel"])
        _state["ranges"] = _tensor_ranges([*args, *kwargs.values()])
        _state["kernel"] = getattr(self.fn, "__name__", "?")
        try:
            return call(self, *args, **kwargs)
        finally:
            _state["ranges"], _state["kernel"] = outer

    executor.__call__ = launch


def _patch_autotune() -> None:
    from triton.runtime import autotuner

    prune = autotuner.Autotuner.prune_configs

    def first_config(self: Any, kwargs: dict[str, Any]) -> list[Any]:
        # The candidate's own pruning first, then the first survivor (module doc).
        return list(prune(self, kwargs))[:1]

    autotuner.Autotuner.prune_configs = first_config


def install_cpu_triton() -> None:
    """Import Triton in interpreter mode and install the module doc's checks (CPU path).

    Raises:
        RuntimeError: ``TRITON_INTERPRET`` was not set before the import (a GPU-path child).
    """
    import triton  # type: ignore[import-untyped]

    if not triton.knobs.runtime.interpret:
        raise RuntimeError("the CPU path needs TRITON_INTERPRET=1 in the child's environment")
    _patch_builder()
    _patch_autotune()
    _patch_is_cuda()


def _patch_is_cuda() -> None:
    """``Tensor.is_cuda`` is True: Triton wrappers assert it (``assert x.is_cuda``) or branch
    to torch when it is False, which on the CPU path would skip the kernel under test."""
    import torch

    torch.Tensor.is_cuda = property(lambda self: True)  # type: ignore[assignment]


def describe_failure(exc: BaseException) -> tuple[str, str] | None:
    """(kind, detail) for a Triton interpreter failure, or None to use the generic rules."""
    text = f"{type(exc).__name__}: {exc}"
    match = re.search(r"(\w[\w ]*) not supported in interpreter mode", text)
    if match:
        return "unsupported", f"unsupported: triton interpreter: {match.group(1).strip()}"
    if "out-of-bounds: Triton kernel" in text:
        start = text.index("out-of-bounds: Triton kernel")
        return "out-of-bounds", re.split(r"['\"]", text[start:])[0][:400]
    return None
