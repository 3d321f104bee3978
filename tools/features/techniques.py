"""Named refinements: which of the optimizations GPU experts name, beyond the patterns.

The pattern features (``tools/features/structure.py``) say how a kernel is organised: its
access pattern, reuse strategy, vector width, tensor cores. The refinements here are what
experts add on top of that organisation (warp shuffles, bank-conflict padding, more work per
thread, the read-only path, ``__launch_bounds__``, fast math, pipelining, ...). Each is a fixed
rule over the features the other families report, so it can be explained by them, and
``opt.refinements`` counts the ones present; the patterns are not counted again (one home
per concept).

Why a count: it carries across tasks what a single feature cannot. A refinement that only
one task's programs use (padding in a transpose, fast math in a softmax) still moves it, so
a model fit on other tasks can rank it. It is a count, not a weighting: ``__launch_bounds__``
and pipelining weigh one each, and a refinement applied where it does not help still counts
(the rules say what is present, not what pays).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from structcover.tools.features.structure import numeric as _n

#: Refinement name -> (rule over the feature values, what the rule reads). The order is the
#: documented one (docs/FEATURES.md, "Named refinements").
TECHNIQUES: dict[str, tuple[Callable[[Mapping[str, Any]], bool], str]] = {
    "warp_shuffle": (lambda v: _n(v, "warp.shuffles") > 0, "warp.shuffles > 0"),
    "bank_padding": (lambda v: bool(v.get("smem.padded")), "smem.padded"),
    "work_per_thread": (lambda v: _n(v, "par.coarsening_loops") > 0
                        or _n(v, "reg.outputs_per_thread") > 1 or _n(v, "loop.grid_stride") > 0,
                        "par.coarsening_loops > 0, reg.outputs_per_thread > 1 or "
                        "loop.grid_stride > 0"),
    "read_only_path": (lambda v: _n(v, "mem.restrict_params") > 0 or _n(v, "mem.ldg") > 0,
                       "mem.restrict_params > 0 or mem.ldg > 0 (__restrict__ or __ldg)"),
    "constant_memory": (lambda v: bool(v.get("mem.constant_memory")), "mem.constant_memory"),
    "unrolling": (lambda v: _n(v, "loop.unroll_pragmas") > 0, "loop.unroll_pragmas > 0"),
    "launch_bounds": (lambda v: _n(v, "kernel.launch_bounds") > 0, "kernel.launch_bounds > 0"),
    "fast_math": (lambda v: _n(v, "math.fast_intrinsics") > 0, "math.fast_intrinsics > 0"),
    "pipelining": (lambda v: bool(v.get("pipeline.double_buffered"))
                   or bool(v.get("pipeline.async_copy")),
                   "pipeline.double_buffered or pipeline.async_copy"),
    "warp_tiling": (lambda v: bool(v.get("warp.tiling")), "warp.tiling"),
    "single_launch": (lambda v: _n(v, "fusion.launches_per_forward") == 1,
                      "fusion.launches_per_forward = 1 (the forward is one fused kernel)"),
}


def techniques(values: Mapping[str, Any]) -> list[str]:
    """The refinements a program applies, in the documented order.

    Args:
        values: Its feature values, pattern features included (``extract_values`` output).
    """
    return [name for name, (rule, _) in TECHNIQUES.items() if rule(values)]


def technique_features(values: Mapping[str, Any]) -> dict[str, int]:
    """``opt.techniques``: how many of :data:`TECHNIQUES` the program applies.

    A program without CUDA code of its own (a torch-only forward) has no facts for most
    rules; what it has still counts (one launch, say), as for any other program.
    """
    return {"opt.refinements": len(techniques(values))}
