"""Structural patterns: categorical features whose levels are what users and prompts name.

Each pattern is derived from the raw feature values by a fixed rule (below, and in
docs/FEATURES.md), so a level can always be explained by the features behind it. Levels are
strings; the coverage archive bins them as categories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

#: Arithmetic intensity class edges in FLOP per global byte: low < 1 <= medium < 8 <= high.
INTENSITY_LOW_BELOW = 1.0
INTENSITY_HIGH_FROM = 8.0

LEVELS: dict[str, tuple[str, ...]] = {
    "pattern.global_access": ("coalesced", "strided", "broadcast", "indirect", "mixed", "none"),
    "pattern.reuse": ("none", "smem_staging", "smem_tiling", "register_tiling",
                      "smem_and_register"),
    "pattern.sync": ("none", "block", "warp", "block_and_warp", "atomic_or_grid"),
    "pattern.intensity": ("low", "medium", "high"),
    "pattern.vector_width": ("1", "2", "4", "8"),
    "pattern.tensor_cores": ("no", "yes"),
}
#: Patterns whose levels are ordered, least to most of what the pattern names: more reuse,
#: higher intensity, wider accesses, tensor cores. A model may treat them as ranks, so a level
#: it never saw in training still has a place (one indicator per level cannot say anything
#: about an unseen level). Access and synchronization patterns are kinds, not amounts.
ORDINAL: dict[str, tuple[str, ...]] = {
    name: LEVELS[name] for name in ("pattern.reuse", "pattern.intensity",
                                    "pattern.vector_width", "pattern.tensor_cores")}


def numeric(values: Mapping[str, Any], name: str) -> float:
    """The value of feature ``name`` as a number (missing, text or unreadable -> 0)."""
    v = values.get(name)
    if v is None or isinstance(v, str):
        return 0.0
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def global_access(values: Mapping[str, Any]) -> str:
    """Rule: no global access -> none; any indirect -> indirect; coalesced and strided both
    present -> mixed; strided -> strided; coalesced -> coalesced; only broadcast ->
    broadcast; only unclassifiable (unknown) accesses -> mixed."""
    c, s, b, i, u = (numeric(values, f"mem.global_{k}") for k in
                     ("coalesced", "strided", "broadcast", "indirect", "unknown"))
    if c + s + b + i + u == 0:
        return "none"
    if i:
        return "indirect"
    if c and s:
        return "mixed"
    if s:
        return "strided"
    if c:
        return "coalesced"
    if b:
        return "broadcast"
    return "mixed"


def reuse(values: Mapping[str, Any]) -> str:
    """Rule: register tiling = a register-array accumulator of >= 2 elements per thread
    (``reg.tiled``); shared tiling = global data staged in shared memory (``smem.tiled``) and
    each staged element read >= 2 times (``smem.reads_per_staged``); shared staging = shared
    memory accessed without that reuse. Both register tiling and staged shared memory ->
    smem_and_register."""
    reg = bool(values.get("reg.tiled"))
    staged = bool(values.get("smem.tiled"))
    smem = numeric(values, "smem.accesses") > 0
    tiling = staged and numeric(values, "smem.reads_per_staged") >= 2.0
    if reg and staged:
        return "smem_and_register"
    if reg:
        return "register_tiling"
    if tiling:
        return "smem_tiling"
    if smem:
        return "smem_staging"
    return "none"


def sync(values: Mapping[str, Any]) -> str:
    """Rule: global atomics or a grid-wide sync -> atomic_or_grid (cross-block communication
    decides the pattern); else block barriers and warp-level primitives (shuffles, votes,
    __syncwarp) -> block_and_warp, block, warp, or none."""
    if numeric(values, "atomics.global") or values.get("sync.grid"):
        return "atomic_or_grid"
    block = numeric(values, "sync.block_barriers") > 0
    warp = (numeric(values, "warp.shuffles") + numeric(values, "warp.votes")
            + numeric(values, "sync.warp_syncs")) > 0
    if block and warp:
        return "block_and_warp"
    return "block" if block else "warp" if warp else "none"


def intensity(values: Mapping[str, Any]) -> str:
    """Rule: ``intensity.flop_per_byte`` < 1 -> low, < 8 -> medium, else high (missing -> low:
    no global traffic was found to divide by)."""
    v = values.get("intensity.flop_per_byte")
    if not isinstance(v, int | float) or math.isnan(v):
        return "low"
    if v < INTENSITY_LOW_BELOW:
        return "low"
    return "medium" if v < INTENSITY_HIGH_FROM else "high"


def vector_width(values: Mapping[str, Any]) -> str:
    """Rule: widest global access in elements (``mem.vector_width_global``): 2, 4 or 8 as
    themselves, wider -> "8", anything else (scalars, float3) -> "1"."""
    w = int(numeric(values, "mem.vector_width_global"))
    if w >= 8:
        return "8"
    return str(w) if w in (2, 4) else "1"


def tensor_cores(values: Mapping[str, Any]) -> str:
    """Rule: any tensor-core instruction (``tc.used``) -> yes."""
    return "yes" if values.get("tc.used") else "no"


#: The rule of each pattern feature (the planner asks for a few axes thousands of times).
PATTERN_RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "pattern.global_access": global_access, "pattern.reuse": reuse, "pattern.sync": sync,
    "pattern.intensity": intensity, "pattern.vector_width": vector_width,
    "pattern.tensor_cores": tensor_cores,
}


def pattern_features(values: Mapping[str, Any]) -> dict[str, str]:
    """Every ``pattern.*`` level of one program from its raw feature values."""
    return {name: rule(values) for name, rule in PATTERN_RULES.items()}
