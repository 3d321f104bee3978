"""Structure mutation operators (docs/ARCHITECTURE.md, stage 5): one module per operator family.

Each operator is a plain function ``program -> MutationResult`` registered in ``base``;
``registry()`` lists them with the feature moves their docstrings promise.
"""

from __future__ import annotations

import importlib

MODULES = ("unroll", "fusion", "smem_promotion", "vectorize", "sync_granularity",
           "parallel_strategy", "reduction_strategy", "launch_config", "padding", "thread_mapping",
           "lane_loops", "direct_addressing", "ownership", "row_elements")
#: Operators on Triton programs (Python with @triton.jit kernels; ``language="triton"``).
TRITON_MODULES = ("triton_block_size", "triton_warps_stages", "triton_grouped_ordering",
                  "triton_fp32_accumulate", "triton_fuse_epilogue", "triton_mask_vectorize")


#: Set once every operator module has been imported (later calls return at once: the
#: registry is asked for on every operator application, twenty imports each time).
_loaded = False


def load_all() -> None:
    """Import every operator module so that each registers its operators."""
    global _loaded
    if _loaded:
        return
    for name in MODULES + TRITON_MODULES:
        importlib.import_module(f"structcover.tools.mutations.{name}")
    _loaded = True
