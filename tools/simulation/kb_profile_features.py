"""``profile.*`` features of a KernelBench candidate and its modelled time, from a :class:`KbProfile`.

Features (docs/FEATURES.md, "Profile features") are read at the larger measured size and
normalized per output element, or are ratios that do not depend on the size (sectors per
request, bank conflicts per wavefront, divergent branches per evaluation). The timing model
(``tools/simulation/timing_model.py``) predicts the candidate's time at the problem's *own*
sizes: each counter is extrapolated from the two measured sizes as a power of the problem's
work (input elements, :meth:`Problem.work`): ``c = c1 * (W / w1) ** p`` with
``p = log(c1 / c0) / log(w1 / w0)`` rounded to the nearest half in ``[0, 3]`` (an elementwise
kernel's requests: 1; a fixed grid: 0; a square GEMM's FMAs over its 2 N^2 inputs: 1.5).
Halves rather than integers because the work counts input elements, so a contraction's
exponents are multiples of 1/2 (docs/SIMULATION.md rounds corpus exponents to integers of a
size scale). The compulsory bytes (inputs + outputs once) are extrapolated the same way. ptxas
is not run on KernelBench sources (torch's headers), so registers are the model's default (32).
torch's own operators in ``forward`` (a zero fill of the output, ``.contiguous()`` copies) are
GPU work the timed forward includes: their bytes per output element are ``torch_bytes``, their
launches ``torch_launches``, and the model adds their time (``timing_model.torch_ops_time``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from structcover.tools.simulation.gpu_specs import DEFAULT_GPU, GpuSpec, gpu_spec
from structcover.tools.simulation.kb_profile import KbProfile
from structcover.tools.simulation.timing_model import KernelInputs, kernel_time, torch_ops_time

#: Feature names (without the ``profile.`` prefix) of the per-output-element counters.
PER_ELEMENT = ("global_load_requests", "global_load_sectors", "global_load_l1_miss_sectors",
               "global_store_requests",
               "global_store_sectors", "shared_wavefronts", "shared_bank_conflicts",
               "barriers", "branch_requests", "divergent_branches", "threads",
               "atomic_requests", "warp_collectives", "ops_fp", "ops_int", "ops_special",
               "torch_bytes")
#: Size-independent ratios and shapes.
RATIOS = ("launches", "kernels", "torch_launches", "load_sectors_per_request", "store_sectors_per_request",
          "load_bytes_per_sector", "bank_conflicts_per_wavefront", "divergent_fraction",
          "threads_per_block", "traffic_over_compulsory", "model_time_s", "model_log10_time")
#: Every numeric column :func:`profile_features` fills (``profile.`` prefixed).
COLUMNS = tuple(f"profile.{n}_per_el" for n in PER_ELEMENT) + tuple(f"profile.{n}" for n in RATIOS)
_FP = ("fp32", "fp64", "fp16", "bf16")


def _total(kernels: dict[str, dict[str, int]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in kernels.values():
        for k, v in row.items():
            out[k] = out.get(k, 0.0) + float(v)
    return out


def _derived(c: dict[str, float]) -> dict[str, float]:
    """The grouped counters of :data:`PER_ELEMENT` from the raw ones."""
    def s(*keys: str) -> float:
        return sum(c.get(k, 0.0) for k in keys)

    return {
        "global_load_requests": s("global_load_requests"),
        "global_load_sectors": s("global_load_sectors"),
        "global_load_l1_miss_sectors": s("global_load_l1_miss_sectors"),
        "global_store_requests": s("global_store_requests"),
        "global_store_sectors": s("global_store_sectors"),
        "shared_wavefronts": s("shared_load_wavefronts", "shared_store_wavefronts"),
        "shared_bank_conflicts": s("shared_load_bank_conflicts", "shared_store_bank_conflicts"),
        "barriers": s("barriers"), "branch_requests": s("branch_requests"),
        "divergent_branches": s("divergent_branches"), "threads": s("threads"),
        "atomic_requests": s("global_atomic_requests", "shared_atomic_requests"),
        "warp_collectives": s("warp_collectives"),
        "ops_fp": s(*(f"ops_{f}_{k}" for f in _FP for k in ("add", "mul", "fma"))),
        "ops_int": s(*(f"ops_int_{k}" for k in ("add", "mul", "fma", "div", "logic"))),
        "ops_special": s(*(f"ops_{f}_{k}" for f in _FP for k in ("div", "special"))),
    }


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def _exponent(c1: float, c0: float, w1: float, w0: float) -> float:
    """The power of the work a counter grows with, rounded to a half in [0, 3]; 1 (in
    proportion to the work) when there is one measured size only, as where a problem's sizes
    could not shrink further (``kb_profile.profile_sizes``): 0 would predict at the emulated
    size whatever the problem's."""
    if w1 <= w0:
        return 1.0
    if c1 <= 0 or c0 <= 0:
        return 0.0
    return min(max(round(2.0 * math.log(c1 / c0) / math.log(w1 / w0)) / 2.0, 0.0), 3.0)


def _scaled(pair: list[dict[str, dict[str, int]]], prof: KbProfile, full_work: float,
            keep: frozenset[str] = frozenset()) -> dict[str, dict[str, float]]:
    """Per row (kernel or torch operator) of the two measured sizes, every figure at the
    problem's own size as a power of the work (:func:`_exponent`); ``keep`` as measured."""
    from structcover.tools.verify.profile import rescale_ratios

    (w1, w0), factor = prof.work, full_work / prof.work[0] if prof.work[0] else 1.0
    if w1 <= w0:  # one measured size: a kernel's launch count is taken as fixed
        keep = keep | {"launches"}
    large, small = pair
    out = {name: {k: float(v) if k in keep else
                  float(v) * factor ** _exponent(float(v), float(small.get(name, {}).get(k, 0)),
                                                 w1, w0)
                  for k, v in row.items()}
           for name, row in large.items()}
    for name, row in out.items():
        rescale_ratios(row, large[name])
    return out


def extrapolate(prof: KbProfile, full_work: float) -> tuple[dict[str, dict[str, float]], float]:
    """(kernel -> counters at the problem's own sizes, compulsory bytes there); ``{}`` when
    the profile failed. Maxima and footprints are kept as measured."""
    from structcover.tools.verify.profile import MAXED

    if prof.error or len(prof.kernels) != 2:
        return {}, 0.0
    out = _scaled(prof.kernels, prof, full_work, frozenset(MAXED))
    (w1, w0), factor = prof.work, full_work / prof.work[0] if prof.work[0] else 1.0
    compulsory = 0.0
    for series in (prof.input_bytes, prof.output_bytes):
        b1, b0 = float(series[0]), float(series[1])
        compulsory += b1 * factor ** _exponent(b1, b0, w1, w0)
    return out, compulsory


def extrapolate_torch_ops(prof: KbProfile, full_work: float) -> dict[str, dict[str, float]]:
    """torch's own operators in forward at the problem's own sizes (each figure extrapolated
    like a counter); ``{}`` without a profile or without torch-side work."""
    if prof.error or len(prof.torch_ops) != 2 or len(prof.work) != 2:
        return {}
    return _scaled(prof.torch_ops, prof, full_work)


def model_time(prof: KbProfile, full_work: float, gpu: GpuSpec | None = None
               ) -> tuple[float, str]:
    """(modelled seconds of one forward at the problem's sizes on ``gpu``, bound of the
    slowest kernel); (nan, "") without a profile. Compulsory bytes are split between
    kernels by their share of sector traffic, as ``simulation/modelled.py`` does."""
    gpu = gpu or gpu_spec(DEFAULT_GPU)
    counters, compulsory = extrapolate(prof, full_work)
    if not counters:
        return math.nan, ""
    sectors = {k: v.get("global_load_sectors", 0.0) + v.get("global_store_sectors", 0.0)
               for k, v in counters.items()}
    total = sum(sectors.values())
    seconds, slowest, bound = 0.0, -1.0, ""
    for name, row in counters.items():
        share = sectors[name] / total if total else 1.0 / len(counters)
        t = kernel_time(KernelInputs(counters=row, compulsory_bytes=compulsory * share), gpu)
        seconds += t.seconds
        if t.seconds > slowest:
            slowest, bound = t.seconds, t.bound
    return seconds + torch_ops_time(extrapolate_torch_ops(prof, full_work), gpu), bound


def profile_features(prof: KbProfile, full_work: float, gpu: GpuSpec | None = None
                     ) -> dict[str, Any]:
    """The ``profile.*`` row of one candidate: every :data:`COLUMNS` entry (NaN where the
    profile failed), ``profile.reason`` ("" when it ran) and ``profile.sizes`` (JSON)."""
    row: dict[str, Any] = {c: math.nan for c in COLUMNS}
    row["profile.reason"] = prof.error or ("" if len(prof.kernels) == 2 else "no profile")
    row["profile.sizes"] = json.dumps(prof.sizes[:1])
    if row["profile.reason"]:
        return row
    large = prof.kernels[0]
    raw = _total(large)
    d = _derived(raw)
    elements = float(prof.output_elements[0])
    torch_ops = prof.torch_ops[0] if prof.torch_ops else {}
    d["torch_bytes"] = float(sum(r.get("read_bytes", 0) + r.get("write_bytes", 0)
                                 for r in torch_ops.values()))
    for name in PER_ELEMENT:
        row[f"profile.{name}_per_el"] = _ratio(d[name], elements)
    seconds, _bound = model_time(prof, full_work, gpu)
    row.update({
        "profile.launches": raw.get("launches", 0.0), "profile.kernels": float(len(large)),
        "profile.torch_launches": float(sum(r.get("launches", 0) for r in torch_ops.values())),
        "profile.load_sectors_per_request": _ratio(d["global_load_sectors"],
                                                   d["global_load_requests"]),
        "profile.store_sectors_per_request": _ratio(d["global_store_sectors"],
                                                    d["global_store_requests"]),
        "profile.load_bytes_per_sector": _ratio(raw.get("global_load_bytes", 0.0),
                                                d["global_load_sectors"]),
        "profile.bank_conflicts_per_wavefront": _ratio(d["shared_bank_conflicts"],
                                                       d["shared_wavefronts"]),
        "profile.divergent_fraction": _ratio(d["divergent_branches"], d["branch_requests"]),
        "profile.threads_per_block": _ratio(d["threads"], raw.get("blocks", 0.0)),
        "profile.traffic_over_compulsory": _ratio(
            32.0 * (d["global_load_sectors"] + d["global_store_sectors"]),
            float(prof.input_bytes[0] + prof.output_bytes[0])),
        "profile.model_time_s": seconds,
        "profile.model_log10_time": math.log10(seconds) if seconds > 0 else math.nan,
    })
    return row
