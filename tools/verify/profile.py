"""Profile counters of a program on the CPU emulator: what Nsight Compute would count.

``profile_program(source, task, sizes)`` builds the program's profile variant (the rewriter's
``profile=True``: accesses, atomics and branch conditions go through the runtime's counters,
``runtime/sc_prof.cpp``), runs it once in the jail (forward schedule, seeded inputs), and returns
a :class:`ProfileReport`: counters per launch, summed per kernel and in total, and normalized
per output element (and per useful FLOP when the caller knows the FLOP count). Counter
definitions and their ncu metrics: docs/EMULATOR.md, "Profiles".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from structcover.config import VerifySettings, load_settings
from structcover.schema import TaskSpec
from structcover.tools.verify.profile_rewrite import KINDS, Site

#: Per-launch counters that add up over launches (the rest are shapes or maxima).
SUMMED: tuple[str, ...] = ("blocks", "threads", "warps", "global_load_requests", "global_load_sectors",
          "global_load_bytes", "global_load_l1_miss_sectors", "global_store_requests", "global_store_sectors",
          "global_store_bytes", "shared_load_requests", "shared_load_wavefronts",
          "shared_load_bank_conflicts", "shared_store_requests", "shared_store_wavefronts",
          "shared_store_bank_conflicts", "global_atomic_requests", "global_atomic_lanes",
          "global_atomic_serialized", "shared_atomic_requests", "shared_atomic_lanes",
          "shared_atomic_serialized", "local_accesses", "barriers", "warp_syncs",
          "warp_collectives", "branch_requests", "branch_lanes", "divergent_branches")
#: Executed operations per thread (``ops_<class>_<kind>``, runtime/sc_prof.hpp): one per
#: operator, increment, compound assignment or math call of device code, by the C++ type of its
#: result; a product feeding + or - in one expression is one ``fma``.
OP_CLASSES = ("fp32", "fp64", "fp16", "bf16", "int")
OP_KINDS = ("add", "mul", "fma", "div", "special", "logic")
OPS = tuple(f"ops_{c}_{k}" for c in OP_CLASSES for k in OP_KINDS
            if (k != "special" if c == "int" else k != "logic"))
SUMMED = (*SUMMED, *OPS)
MAXED = ("global_atomic_max_contention", "shared_atomic_max_contention", "shared_static_bytes",
         "shared_dynamic_bytes")
#: Counters that scale as a fraction of another: extrapolated to a larger size as that
#: counter's extrapolation times their ratio at the larger measured size, not as a power of
#: the size of their own. L1 misses depend on whether a block's footprint fits the cache: at
#: two small sizes it fits, then it starts not to, and a power fitted to that climbs past the
#: sectors themselves (a GEMM's misses measured at 2.3e3 and 2.1e5 extrapolated to 50x its
#: sectors).
RATIO_OF = {"global_load_l1_miss_sectors": "global_load_sectors"}
_SPACES = {1: "global", 2: "shared", 4: "local"}


def rescale_ratios(row: dict[str, float], measured: dict[str, Any]) -> None:
    """Set each :data:`RATIO_OF` counter of an extrapolated ``row`` from its base counter in
    ``row`` and the ratio of the two in ``measured`` (the larger measured size)."""
    for key, base in RATIO_OF.items():
        if key in row and base in row and float(measured.get(base, 0) or 0) > 0:
            row[key] = row[base] * min(1.0, float(measured.get(key, 0)) / float(measured[base]))


class ProfileError(RuntimeError):
    """The profile run did not complete (the message says why)."""


@dataclass
class ProfileReport:
    """Counters of one profiled run."""

    launches: list[dict[str, Any]]
    kernels: dict[str, dict[str, int]]
    total: dict[str, int]
    sizes: dict[str, int]
    output_elements: int
    flops: float | None = None
    per_output_element: dict[str, float] = field(default_factory=dict)
    per_flop: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (the verdict's ``profile`` field)."""
        return {"sizes": self.sizes, "output_elements": self.output_elements,
                "flops": self.flops, "total": self.total, "kernels": self.kernels,
                "per_output_element": self.per_output_element, "per_flop": self.per_flop,
                "launches": self.launches}


def _sum(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {k: 0 for k in (*SUMMED, *MAXED)}
    out["launches"] = len(rows)
    for row in rows:
        for k in SUMMED:
            out[k] += int(row.get(k, 0))
        for k in MAXED:
            out[k] = max(out[k], int(row.get(k, 0)))
    return out


def _sites(rows: list[dict[str, Any]], sites: list[Site]) -> None:
    """Name each launch's sites (kind, line, expression) in place."""
    by_id = {s.site: s for s in sites}
    for row in rows:
        for entry in row.get("sites", []):
            s = by_id.get(entry["site"])
            entry["kind"] = KINDS[entry["kind"]] if 0 <= entry["kind"] < len(KINDS) else "?"
            entry["space"] = "+".join(n for b, n in _SPACES.items() if entry["space"] & b) or None
            if s is not None:
                entry["line"], entry["text"] = s.line, s.text


def build_report(counters_json: str, sites: list[Site], spec: TaskSpec, sizes: dict[str, int],
                 flops: float | None = None) -> ProfileReport:
    """A report from the runtime's JSON (``sc_profile_json``) and the rewrite's sites.

    Raises:
        ProfileError: The JSON is not the runtime's list of launches.
    """
    try:
        rows = json.loads(counters_json)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"profile counters are not JSON: {exc}") from exc
    if not isinstance(rows, list):
        raise ProfileError("profile counters: expected a list of launches")
    _sites(rows, sites)
    kernels: dict[str, dict[str, int]] = {}
    for name in dict.fromkeys(str(r.get("kernel", "")) for r in rows):
        kernels[name] = _sum([r for r in rows if str(r.get("kernel", "")) == name])
    total = _sum(rows)
    elements = sum(int(np.prod(spec.shape_of(a.name, sizes), dtype=np.int64))
                   for a in spec.tensors if a.role != "input")
    per_el = {k: total[k] / elements for k in SUMMED} if elements else {}
    per_flop = {k: total[k] / flops for k in SUMMED} if flops else {}
    return ProfileReport(rows, kernels, total, dict(sizes), elements, flops, per_el, per_flop)


def profile_program(source: str, spec: TaskSpec, sizes: dict[str, int] | None = None, *,
                    flops: float | None = None, seed: int = 0,
                    inputs: dict[str, np.ndarray] | None = None,
                    settings: VerifySettings | None = None, timeout_s: float = 60.0,
                    workers: int = 0) -> ProfileReport:
    """Profile ``source`` on ``spec`` at ``sizes`` (the spec's sizes by default), in the jail.

    Args:
        source: The program (untrusted: built and run only in the sandbox).
        spec: Its task.
        sizes: Size overrides.
        flops: Useful floating-point operations of the problem at these sizes, if known.
        seed: Seed of the generated inputs (``inputs.make_inputs``) when ``inputs`` is None.
        inputs: The arrays to run on, instead of generated ones.
        settings: Cache folder and memory limit (the loaded settings by default).
        timeout_s: Wall-clock limit of the run.
        workers: Worker threads (0 = one per core).

    Raises:
        ProfileError: The program did not build or run cleanly; the message has the verdict.
    """
    from structcover.tools.verify.inputs import make_inputs
    from structcover.tools.verify.jailed_cpu import run_profiled

    sizes = {**spec.sizes, **(sizes or {})}
    settings = settings or load_settings().verify
    arrays = inputs if inputs is not None else make_inputs(spec, seed, sizes)
    result, counters, sites = run_profiled(source, spec, arrays, settings=settings, sizes=sizes,
                                           timeout_s=timeout_s, workers=workers)
    if result.status != "ok":
        raise ProfileError(f"profile run: {result.status}: {result.detail.splitlines()[0] if result.detail else ''}")
    if not counters:
        raise ProfileError("profile run reported no counters")
    return build_report(counters, sites, spec, sizes, flops)
