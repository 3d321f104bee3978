"""Nsight Compute metrics read under the emulator's counter names: the mapping and comparison.

The data half of the ncu cross-check (``ncu.py`` runs ncu; ``bench/cross_check_ncu.py``
compares):

* :data:`MAPPING`: for each of our counters that has an ncu equivalent, the ncu metric(s), how
  they combine into our counter and how close the two sides must be; :data:`UNMAPPED`: the
  counters with no like-for-like metric, and why. docs/EMULATOR.md, "Cross-check with Nsight
  Compute", is the prose form.
* :func:`to_counters`: ncu's launches (``ncu_csv.parse_ncu_csv``) into our counters, summed
  per kernel base name;
  :func:`compare_counters`: both sides per counter within its band.

State: tested against hand-made CSV only; it has not read a real GPU's ncu output yet. The
metric names are the commonly documented ones.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Rollup suffixes of a metric name (``base.sum``); ``--query-metrics`` lists bases only.
_ROLLUPS = frozenset({"sum", "avg", "min", "max"})


@dataclass(frozen=True)
class MetricMap:
    """How one of our counters is read from ncu.

    Attributes:
        counter: Our counter name (``profile.SUMMED`` / ``MAXED`` / ``launches``).
        metrics: The ncu metrics it is computed from (none for ``count``).
        combine: ``sum`` (the metrics added), ``count`` (1 per launch), ``per_block_warp``
            (first metric / warps per block; the second metric is ``launch__block_size``),
            ``grid_threads`` (grid size x block size), ``grid_warps`` (grid size x warps per
            block), ``max`` (largest over launches, like ``profile.MAXED``).
        emulator: Our counters whose sum is the emulator side of the comparison, when that is
            not ``counter`` alone (ncu counts fp16 and bf16 in the same metrics).
        tolerance: Relative band within which both sides agree: ``max / min - 1 <= tolerance``
            (0 = exact). It states how far the compiler may take SASS from source here.
        note: Why the mapping or the band is what it is.
    """

    counter: str
    metrics: tuple[str, ...]
    combine: str = "sum"
    emulator: tuple[str, ...] = ()
    tolerance: float = 0.0
    note: str = ""

    def emulator_counters(self) -> tuple[str, ...]:
        """Our counters that make up the emulator side."""
        return self.emulator or (self.counter,)


_GRID, _BLOCK = "launch__grid_size", "launch__block_size"
_LSU = "l1tex__t_{what}_pipe_lsu_mem_global_op_{op}.sum"
_SHARED = "l1tex__data_{what}_pipe_lsu_mem_shared_op_{op}.sum"
_THREAD_OP = "smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"
#: Source-level memory counts: exact on simple kernels, a 10 % band for vector loads the
#: compiler merges or splits and repeated reads it keeps in registers.
_MEM_BAND = 0.10
#: Source operations against SASS: common subexpressions, contraction and fast-math forms.
_OPS_BAND = 0.25
#: Branch and warp-collective counts depend on unrolling and predication: within a factor 2.
_LOOSE_BAND = 1.0

MAPPING: tuple[MetricMap, ...] = (
    MetricMap("launches", (), "count", note="one ncu row per kernel launch"),
    MetricMap("blocks", (_GRID,), "sum", note="launch__grid_size is the number of blocks"),
    MetricMap("threads", (_GRID, _BLOCK), "grid_threads"),
    MetricMap("warps", (_GRID, _BLOCK), "grid_warps"),
    MetricMap("shared_static_bytes", ("launch__shared_mem_per_block_static",), "max"),
    MetricMap("shared_dynamic_bytes", ("launch__shared_mem_per_block_dynamic",), "max"),
    *(MetricMap(f"global_{name}_{what}", (_LSU.format(what=what, op=op),), tolerance=_MEM_BAND)
      for name, op in (("load", "ld"), ("store", "st")) for what in ("requests", "sectors")),
    MetricMap("global_load_l1_miss_sectors",
              ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",),
              tolerance=_LOOSE_BAND,
              note="the emulator's L1 is 32 KB per block, direct-mapped and emptied at block "
                   "start; the GPU's is shared by the SM's resident blocks, set-associative, and "
                   "its size depends on the shared-memory carve-out"),
    *(MetricMap(f"global_{name}_bytes", (f"smsp__sass_data_bytes_mem_global_op_{op}.sum",),
                tolerance=_MEM_BAND, note="bytes the lanes asked for")
      for name, op in (("load", "ld"), ("store", "st"))),
    *(MetricMap(f"shared_{name}_requests", (f"smsp__sass_inst_executed_op_shared_{op}.sum",),
                tolerance=_MEM_BAND) for name, op in (("load", "ld"), ("store", "st"))),
    *(MetricMap(f"shared_{name}_wavefronts", (_SHARED.format(what="wavefronts", op=op),),
                tolerance=_MEM_BAND) for name, op in (("load", "ld"), ("store", "st"))),
    *(MetricMap(f"shared_{name}_bank_conflicts", (_SHARED.format(what="bank_conflicts", op=op),),
                tolerance=_MEM_BAND) for name, op in (("load", "ld"), ("store", "st"))),
    MetricMap("global_atomic_requests", ("smsp__sass_inst_executed_op_global_atom.sum",
                                         "smsp__sass_inst_executed_op_global_red.sum"),
              tolerance=_MEM_BAND, note="an atomic whose result is unused compiles to RED"),
    MetricMap("shared_atomic_requests", ("smsp__sass_inst_executed_op_shared_atom.sum",),
              tolerance=_MEM_BAND),
    MetricMap("barriers", ("smsp__inst_executed_op_barrier.sum", _BLOCK), "per_block_warp",
              note="every warp of a block executes each barrier: divided by warps per block"),
    MetricMap("warp_syncs", ("smsp__inst_executed_op_warp_sync.sum",), tolerance=_LOOSE_BAND),
    MetricMap("warp_collectives", ("smsp__inst_executed_op_shfl.sum",), tolerance=_LOOSE_BAND,
              note="shuffles only: votes and matches have no metric here"),
    MetricMap("branch_requests", ("smsp__sass_branch_targets.sum",), tolerance=_LOOSE_BAND,
              note="a short if may become predication; loops unroll"),
    MetricMap("divergent_branches", ("smsp__sass_branch_targets_threads_divergent.sum",),
              tolerance=_LOOSE_BAND),
    *(MetricMap(f"ops_fp32_{kind}", (_THREAD_OP.format(op=f"f{kind}"),), tolerance=_OPS_BAND)
      for kind in ("add", "mul", "fma")),
    *(MetricMap(f"ops_fp64_{kind}", (_THREAD_OP.format(op=f"d{kind}"),), tolerance=_OPS_BAND)
      for kind in ("add", "mul", "fma")),
    *(MetricMap(f"ops_fp16_{kind}", (_THREAD_OP.format(op=f"h{kind}"),),
                emulator=(f"ops_fp16_{kind}", f"ops_bf16_{kind}"), tolerance=_OPS_BAND,
                note="ncu counts bf16 in the h* metrics (HADD2/HMUL2/HFMA2 .BF16)")
      for kind in ("add", "mul", "fma")),
)

UNMAPPED: dict[str, str] = {
    **{f"{space}_atomic_lanes": "no per-lane atomic metric" for space in ("global", "shared")},
    **{f"{space}_atomic_serialized": "no direct metric (shows as L2 atomic throughput)"
       for space in ("global", "shared")},
    **{f"{space}_atomic_max_contention": "no direct metric (a maximum over requests)"
       for space in ("global", "shared")},
    "local_accesses": "the emulator counts accesses to the thread's own stack, not local-memory "
                      "spills (take those from ptxas -v or local_* metrics)",
    "branch_lanes": "no metric of active lanes per branch evaluation",
    **{f"ops_{cls}_{kind}": "no single metric: a GPU divide or special function is MUFU plus FMAs"
       for cls in ("fp32", "fp64", "fp16", "bf16") for kind in ("div", "special")},
    **{f"ops_bf16_{kind}": "counted with fp16 (ops_fp16_*), ncu does not separate them"
       for kind in ("add", "mul", "fma")},
    **{f"ops_int_{kind}": "smsp__sass_thread_inst_executed_op_integer_pred_on also counts address "
                          "arithmetic and loop control the emulator does not see"
       for kind in ("add", "mul", "fma", "div", "logic")},
}

#: Launch-shape counters: a disagreement there is a plumbing error, not an approximation.
SHAPE_COUNTERS: tuple[str, ...] = ("launches", "blocks", "threads", "warps")


def default_metrics(mapping: Iterable[MetricMap] = MAPPING) -> list[str]:
    """Every ncu metric the mapping needs, each once, in mapping order."""
    return list(dict.fromkeys(m for entry in mapping for m in entry.metrics))


def metric_base(metric: str) -> str:
    """A metric without its rollup suffix (``x__y.sum`` -> ``x__y``), as --query-metrics lists it."""
    head, _, tail = metric.rpartition(".")
    return head if head and tail in _ROLLUPS else metric


def parse_query_metrics(text: str) -> set[str]:
    """Metric base names from ``ncu --query-metrics`` output (the first word of each row)."""
    names = set()
    for line in text.splitlines():
        match = re.match(r"\s*([a-z0-9]+__[A-Za-z0-9_]+)\b", line)
        if match:
            names.add(match.group(1))
    return names


def split_known(metrics: Sequence[str], known: set[str] | None) -> tuple[list[str], list[str]]:
    """(metrics to request, metrics dropped because this ncu does not list them).

    One unknown metric makes ncu refuse the whole run, so unknown ones are dropped and
    reported. ``launch__*`` values are launch attributes, not hardware counters, and are not
    always in the query list: they are always kept.
    """
    if not known:
        return list(metrics), []
    keep = [m for m in metrics if m.startswith("launch__") or metric_base(m) in known]
    return keep, [m for m in metrics if m not in keep]


# --- our counters -------------------------------------------------------------------------

def _strip_balanced(text: str, open_ch: str, close_ch: str) -> str:
    """``text`` without every ``open_ch ... close_ch`` group (nesting respected)."""
    out, depth = [], 0
    for ch in text:
        if ch == open_ch:
            depth += 1
        elif ch == close_ch and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def base_name(kernel: str) -> str:
    """A kernel's base name: no return type, namespace, template arguments or parameters.

    ncu prints demangled names (``void ns::reduce<256>(const float *, float *, int)``); the
    emulator records the launch expression (``reduce<256>``). Both become ``reduce``.
    """
    name = kernel.strip()
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    name = _strip_balanced(name, "<", ">").strip()
    name = name.split()[-1] if name.split() else name
    return name.rsplit("::", 1)[-1]


def _warps(block_size: float) -> float:
    return float(math.ceil(block_size / 32))


def launch_value(entry: MetricMap, metrics: Mapping[str, float]) -> float | None:
    """One launch's value of ``entry``'s counter, or None when a metric it needs is missing."""
    if entry.combine == "count":
        return 1.0
    values = [metrics.get(m) for m in entry.metrics]
    if any(v is None for v in values):
        return None
    vals = [float(v) for v in values if v is not None]
    if entry.combine in ("sum", "max"):
        return sum(vals)
    if entry.combine == "grid_threads":
        return vals[0] * vals[1]
    if entry.combine == "grid_warps":
        return vals[0] * _warps(vals[1])
    if entry.combine == "per_block_warp":
        warps = _warps(vals[1])
        return vals[0] / warps if warps else None
    raise ValueError(f"unknown combine {entry.combine!r} for {entry.counter}")


def to_counters(launches: Iterable[Mapping[str, Any]], mapping: Iterable[MetricMap] = MAPPING,
                ) -> dict[str, dict[str, float]]:
    """Parsed launches (``ncu_csv.parse_ncu_csv``) as our counters, per kernel base name.

    Launches of one kernel add up (``max`` counters take the largest). A counter one of the
    kernel's launches could not give (a metric missing or ``n/a``) is left out for that
    kernel rather than summed over the launches that had it.
    """
    entries = list(mapping)
    out: dict[str, dict[str, float]] = {}
    missing: dict[str, set[str]] = {}
    for launch in launches:
        kernel = str(launch.get("kernel_base") or base_name(str(launch.get("kernel", ""))))
        counters = out.setdefault(kernel, {})
        for entry in entries:
            value = launch_value(entry, launch.get("metrics", {}))
            if value is None:
                missing.setdefault(kernel, set()).add(entry.counter)
            elif entry.combine == "max":
                counters[entry.counter] = max(counters.get(entry.counter, 0.0), value)
            else:
                counters[entry.counter] = counters.get(entry.counter, 0.0) + value
    for kernel, names in missing.items():
        for name in names:
            out[kernel].pop(name, None)
    return out


def total_counters(per_kernel: Mapping[str, Mapping[str, float]],
                   mapping: Iterable[MetricMap] = MAPPING) -> dict[str, float]:
    """Counters over all kernels: sums, and the largest for ``max`` counters.

    A counter missing for one kernel is missing in the total too.
    """
    entries = list(mapping)
    total: dict[str, float] = {}
    for entry in entries:
        values = [k.get(entry.counter) for k in per_kernel.values()]
        if not values or any(v is None for v in values):
            continue
        vals = [float(v) for v in values if v is not None]
        total[entry.counter] = max(vals) if entry.combine == "max" else sum(vals)
    return total


# --- comparison with the emulator -----------------------------------------------------------

def emulator_side(counters: Mapping[str, float], mapping: Iterable[MetricMap] = MAPPING,
                  ) -> dict[str, float]:
    """The emulator's counters in the mapping's names (fp16 and bf16 added, as ncu counts them)."""
    out = {}
    for entry in mapping:
        names = entry.emulator_counters()
        if all(n in counters for n in names):
            out[entry.counter] = float(sum(counters[n] for n in names))
    return out


def emulator_by_base(kernels: Mapping[str, Mapping[str, float]],
                     mapping: Iterable[MetricMap] = MAPPING) -> dict[str, dict[str, float]]:
    """The profile's per-kernel counters (``ProfileReport.kernels``) keyed by base name.

    Template instances of one kernel (``reduce<256>``, ``reduce<128>``) merge as ncu's
    base names do; ``max`` counters take the largest.
    """
    entries = {e.counter: e for e in mapping}
    out: dict[str, dict[str, float]] = {}
    for name, counters in kernels.items():
        merged = out.setdefault(base_name(name), {})
        for counter, value in emulator_side(counters, entries.values()).items():
            if entries[counter].combine == "max":
                merged[counter] = max(merged.get(counter, 0.0), value)
            else:
                merged[counter] = merged.get(counter, 0.0) + value
    return out


def agrees(emulator: float, ncu: float, tolerance: float) -> bool:
    """Whether two counts agree within ``tolerance`` (``max / min - 1``; both zero agree)."""
    if emulator == ncu:
        return True
    low, high = sorted((abs(emulator), abs(ncu)))
    if low == 0:
        return False
    return high / low - 1.0 <= tolerance + 1e-12


def compare_counters(emulator: Mapping[str, float], ncu: Mapping[str, float],
                     mapping: Iterable[MetricMap] = MAPPING) -> dict[str, dict[str, Any]]:
    """Per mapped counter: both values, ncu / emulator, and agreement within its band.

    Counters ncu did not measure get ``ncu: None`` and ``agree: None`` (not compared).
    """
    out: dict[str, dict[str, Any]] = {}
    for entry in mapping:
        emu, got = emulator.get(entry.counter), ncu.get(entry.counter)
        if emu is None:
            continue
        ratio = (got / emu if emu else None) if got is not None else None
        out[entry.counter] = {
            "emulator": emu, "ncu": got, "ratio": ratio, "tolerance": entry.tolerance,
            "agree": None if got is None else agrees(emu, got, entry.tolerance),
            "exact": None if got is None else emu == got}
    return out
