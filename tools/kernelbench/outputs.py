"""Compare a candidate child's outputs with the reference child's, in the verifier's process.

Order (the KernelBench protocol, hardened):

1. **Counts, shapes and dtypes** of every trial's outputs first, before any value: a candidate
   that hard-codes the original sizes of a shrunk problem fails here.
2. **Inputs unchanged**: the inputs as the candidate left them must equal the inputs it was
   given, bit for bit (NaN equal to NaN).
3. **Values** per trial (``tools/verify/compare.compare_output``): NaN/infinity placement,
   ``|c - r| <= atol + rtol·|r|`` at the problem's tolerance, and the magnitude guard (an
   all-zero or tiny output against a tiny reference fails). On the CPU path fresh torch memory
   is NaN (fill-uninitialized-memory), so a NaN where the reference is finite is reported as
   ``unwritten-output`` when only a tail of the output is NaN (a skipped tail), else as
   ``uninitialised-read``. A wrong trial whose outputs repeat an earlier trial's bit for bit
   (where the reference's differ) is ``cached-output``: a result computed for other inputs.
4. **Precision** (``precision.py``), once every trial matched: where the reference child also
   ran the model in float64 (the CPU path), each floating output's error against that run,
   pooled over the trials, must stay within ``PRECISION_FACTOR`` times the reference's own
   rounding error (``precision``: computed at a lower precision than the task's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from structcover.tools.kernelbench.precision import judge, rule_text, squared_errors
from structcover.tools.verify.accumulation import UNIT_ROUNDOFF
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
    #: The largest ``||c - r64|| / scale`` over the outputs (None: no precision check ran).
    precision_ratio: float | None = None
    #: The precision rule applied (empty: none ran).
    rule: str = ""


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


def _nan_kind(c: np.ndarray, r: np.ndarray, detail: str) -> tuple[str, str]:
    """NaN where the reference is finite, on the CPU path (fresh memory is NaN there).

    Only the end of the output (in memory order) NaN: the candidate skipped a tail, elements
    it never wrote (``unwritten-output``). NaN elsewhere: values read from, or accumulated
    into, memory nothing wrote (``uninitialised-read``).
    """
    bad = (np.isnan(c) & np.isfinite(r)).ravel()
    count, total = int(bad.sum()), bad.size
    if count == 0:
        return "nan-mismatch", detail
    if count < total and bad[total - count:].all():
        return "unwritten-output", (f"the last {count} of {total} output elements were never "
                                    "written (a skipped tail: NaN, the CPU path's fill of fresh "
                                    "memory, where the reference has values)")
    return "uninitialised-read", (f"{count} of {total} output elements are NaN where the "
                                  "reference is finite: computed from memory nothing wrote "
                                  "(fresh torch memory is NaN on the CPU path); " + detail)


def _cached_from(t: int, cand_out: list[dict[str, np.ndarray]],
                 ref_out: list[dict[str, np.ndarray]]) -> int | None:
    """The earlier trial whose outputs trial ``t`` repeats bit for bit, where the reference's
    differ (a wrong trial that is a copy of an earlier answer), or None."""
    for s in range(t):
        cand_same = cand_out[t].keys() == cand_out[s].keys() and all(
            _same(cand_out[t][k], cand_out[s][k]) for k in cand_out[t])
        ref_same = all(_same(ref_out[t][k], ref_out[s][k]) for k in ref_out[t])
        if cand_out[t] and cand_same and not ref_same:
            return s
    return None


def _precision(ref: dict[str, Any], ref_dir: Path, ref_out: list[dict[str, np.ndarray]],
               cand_out: list[dict[str, np.ndarray]], min_precision: str | None,
               result: Outcome) -> None:
    """Rule 4 (module doc) into ``result``: a ``precision`` failure, or the ratio and rule."""
    fp64 = ref.get("fp64")
    if not fp64:
        return  # a reference run without the float64 pass (the GPU path): the caller notes it
    if min_precision == "any":
        result.notes.append("no precision check: the problem allows any precision "
                            "(MIN_PRECISION = 'any')")
        return
    if not fp64.get("ran"):
        result.notes.append(f"no precision check: {fp64.get('why') or 'no float64 run'}")
        return
    wide = [_arrays(ref_dir / f"out64_{t}.npz") for t in range(len(ref["trials"]))]
    ratios: list[float] = []
    for i, meta in _tensor_meta(ref["trials"][0]["outputs"]):
        key = f"a{i}"
        if meta["dtype"] not in UNIT_ROUNDOFF or not all(key in w for w in wide):
            continue  # integers compare exactly; a non-float output has no float64 run
        sums = [squared_errors(cand_out[t][key], ref_out[t][key], wide[t][key], meta["dtype"])
                for t in range(len(wide))]
        pooled = (sum(s[0] for s in sums), sum(s[1] for s in sums), sum(s[2] for s in sums))
        check = judge(f"output {i}", pooled, meta["dtype"], min_precision)
        ratios.append(check.ratio)
        if not check.ok:
            result.failure, result.detail = "precision", check.detail
            break
    if ratios:
        result.precision_ratio, result.rule = max(ratios), rule_text(min_precision)


def compare_runs(ref: dict[str, Any], ref_dir: Path, cand: dict[str, Any], cand_dir: Path, *,
                 atol: float, rtol: float, cpu_path: bool,
                 min_precision: str | None = None) -> Outcome:
    """Apply the module's rules to the two children's ``result.json`` and arrays.

    ``min_precision``: the problem's ``MIN_PRECISION`` (rule 4; None: the outputs' dtypes).
    """
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
    try:
        # Written in the candidate's process: a file it removed, truncated or replaced (the
        # child's folder keeps regular files only) is its failure, not the verifier's.
        cand_out = [_arrays(cand_dir / f"out_{t}.npz") for t in range(len(cand_trials))]
        cand_after = [_arrays(cand_dir / f"after_{t}.npz") for t in range(len(cand_trials))]
        missing = [(t, i) for t, rt in enumerate(ref_trials)
                   for i, _ in _tensor_meta(rt["outputs"]) if f"a{i}" not in cand_out[t]]
    except (OSError, ValueError, EOFError) as exc:
        return Outcome("crash", f"the candidate's saved outputs are missing or unreadable "
                                f"({type(exc).__name__}): its process changed them")
    if missing:
        return Outcome("crash", f"trial {missing[0][0]}: output {missing[0][1]} is missing from "
                                "the candidate's saved outputs")
    for t in range(len(ref_trials)):
        given, after = _arrays(ref_dir / f"in_{t}.npz"), cand_after[t]
        for key, arr in given.items():
            if key not in after or not _same(arr, after[key]):
                return Outcome("modified-inputs", f"trial {t}: input {key.removeprefix('a')} "
                                                  "was changed by the call")
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
                if cpu_path and kind == "nan-mismatch" and c.dtype.kind == "f":
                    kind, detail = _nan_kind(c, r, detail)
                cached = _cached_from(t, cand_out, ref_out)
                if cached is not None:
                    kind, detail = "cached-output", (
                        f"trial {t} returned exactly trial {cached}'s outputs for different "
                        f"inputs (a result cached across calls); {detail}")
                result.failure, result.detail, result.first_mismatch = kind, detail, \
                    cmp.first_mismatch
                return result
    _precision(ref, ref_dir, ref_out, cand_out, min_precision, result)
    return result
