"""Compare a candidate child's outputs with the reference child's, in the verifier's process.

Order (the KernelBench protocol, hardened):

1. **Counts, shapes and dtypes** of every trial's outputs first, before any value: a candidate
   that hard-codes the original sizes of a shrunk problem fails here.
2. **Inputs unchanged**: the inputs as the candidate left them must equal the inputs it was
   given, bit for bit (NaN equal to NaN).
3. **Cached across calls**: trial ``t``'s outputs equal to an earlier trial's, bit for bit, while
   the reference's differ: the candidate returned a result it computed for other inputs.
4. **Values** per trial (``tools/verify/compare.compare_output``): NaN/infinity placement,
   ``|c - r| <= atol + rtol·|r|`` at the problem's tolerance, and the magnitude guard (an
   all-zero or tiny output against a tiny reference fails). On the CPU path fresh torch memory
   is NaN (fill-uninitialized-memory), so a NaN where the reference is finite is reported as
   ``uninitialised-read``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from structcover.tools.verify.compare import compare_output

__all__ = ["Outcome", "compare_runs"]


@dataclass
class Outcome:
    """The comparison's result: ``failure`` None when every trial matched."""

    failure: str | None = None
    detail: str = ""
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    first_mismatch: list[int] | None = None
    notes: list[str] = field(default_factory=list)


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _tensor_meta(meta: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, m) for i, m in enumerate(meta) if m.get("kind") == "tensor"]


def compare_runs(ref: dict[str, Any], ref_dir: Path, cand: dict[str, Any], cand_dir: Path, *,
                 atol: float, rtol: float, cpu_path: bool) -> Outcome:
    """Apply the module's rules to the two children's ``result.json`` and arrays."""
    ref_trials, cand_trials = ref["trials"], cand["trials"]
    if len(cand_trials) != len(ref_trials):
        return Outcome("crash", f"the candidate ran {len(cand_trials)} of {len(ref_trials)} "
                                "trials")
    for t, (rt, ct) in enumerate(zip(ref_trials, cand_trials, strict=True)):
        if len(ct["outputs"]) != len(rt["outputs"]):
            return Outcome("output-count", f"trial {t}: {len(ct['outputs'])} outputs, the "
                                           f"reference returns {len(rt['outputs'])}")
        for i, (ro, co) in enumerate(zip(rt["outputs"], ct["outputs"], strict=True)):
            if co.get("kind") != "tensor":
                return Outcome("bad-output", f"trial {t}: output {i} is not a tensor")
            if ro.get("kind") == "tensor" and list(co["shape"]) != list(ro["shape"]):
                return Outcome("shape-mismatch", f"trial {t}: output {i} has shape "
                                                 f"{tuple(co['shape'])}, the reference "
                                                 f"{tuple(ro['shape'])}")
            if ro.get("kind") == "tensor" and co["dtype"] != ro["dtype"]:
                return Outcome("dtype-mismatch", f"trial {t}: output {i} has dtype "
                                                 f"{co['dtype']}, the reference {ro['dtype']}")
    ref_out = [_arrays(ref_dir / f"out_{t}.npz") for t in range(len(ref_trials))]
    cand_out = [_arrays(cand_dir / f"out_{t}.npz") for t in range(len(cand_trials))]
    for t in range(len(ref_trials)):
        given, after = _arrays(ref_dir / f"in_{t}.npz"), _arrays(cand_dir / f"after_{t}.npz")
        for key, arr in given.items():
            if key not in after or not _same(arr, after[key]):
                return Outcome("modified-inputs", f"trial {t}: input {key.removeprefix('a')} "
                                                  "was changed by the call")
    for t in range(1, len(ref_trials)):
        for s in range(t):
            cand_same = cand_out[t].keys() == cand_out[s].keys() and all(
                _same(cand_out[t][k], cand_out[s][k]) for k in cand_out[t])
            ref_same = all(_same(ref_out[t][k], ref_out[s][k]) for k in ref_out[t])
            if cand_same and not ref_same and cand_out[t]:
                return Outcome("cached-output", f"trial {t} returned exactly trial {s}'s outputs "
                                                "for different inputs (a result cached across "
                                                "calls)")
    result = Outcome()
    for t, rt in enumerate(ref_trials):
        for i, meta in _tensor_meta(rt["outputs"]):
            key = f"a{i}"
            cmp = compare_output(f"trial {t} output {i}", cand_out[t][key], ref_out[t][key],
                                 meta["dtype"], atol, rtol)
            result.max_abs_error = max(result.max_abs_error, cmp.max_abs_error)
            result.max_rel_error = max(result.max_rel_error, cmp.max_rel_error)
            result.notes += [n for n in cmp.notes if n not in result.notes]
            if not cmp.ok:
                kind, detail = cmp.failure or "mismatch", cmp.detail
                c, r = cand_out[t][key], ref_out[t][key]
                if cpu_path and kind == "nan-mismatch" and c.dtype.kind == "f" and \
                        bool((np.isnan(c) & np.isfinite(r)).any()):
                    kind = "uninitialised-read"
                    detail += ("; fresh torch memory is NaN on the CPU path, so these elements "
                               "were left unwritten or computed from uninitialised memory")
                result.failure, result.detail, result.first_mismatch = kind, detail, \
                    cmp.first_mismatch
                return result
    return result
