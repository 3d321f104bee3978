"""Simulated feature tables with known ground truth, for discovery and ranking tests.

Every table is SIMULATED: rewards come from the formulas below, not from any GPU.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

POLICIES = ("policy-a", "policy-b", "policy-c")


def _frame(rng: np.random.Generator, n_tasks: int, per_task: int) -> pd.DataFrame:
    task = np.repeat([f"t{i:03d}" for i in range(n_tasks)], per_task)
    n = len(task)
    return pd.DataFrame({"program_id": [f"p{i:06d}" for i in range(n)], "task_id": task,
                         "round": 1, "correct": rng.random(n) > 0.05,
                         "task_offset": np.repeat(rng.normal(0, 1.0, n_tasks), per_task)})


def planted(n_tasks: int = 40, per_task: int = 50, *, seed: int = 0,
            decoy_corr: float = 0.3) -> pd.DataFrame:
    """Reward driven by ``mem.coalesced_fraction`` and ``smem.tiled`` plus noise.

    log speedup = task offset + 1.0 * a + 1.5 * tiled + N(0, 0.5²), coalesced = sigmoid(a).
    ``mem.vector_width`` correlates with coalescing (``decoy_corr``) but does not drive reward;
    ``sync.count``, ``loop.depth`` and ``launch.block`` are pure noise.
    """
    rng = np.random.default_rng(seed)
    f = _frame(rng, n_tasks, per_task)
    n = len(f)
    a = rng.normal(size=n)
    tiled = rng.random(n) < 0.5
    f["mem.coalesced_fraction"] = 1 / (1 + np.exp(-a))  # monotone in a, bounded like a fraction
    f["smem.tiled"] = tiled
    f["mem.vector_width"] = decoy_corr * a + np.sqrt(1 - decoy_corr**2) * rng.normal(size=n)
    f["sync.count"] = rng.poisson(3, n)
    f["loop.depth"] = rng.integers(1, 4, n).astype(str)
    f["launch.block"] = rng.choice([128, 256, 512], n)
    logs = f["task_offset"] + 1.0 * a + 1.5 * tiled + rng.normal(0, 0.5, n)
    f["speedup"] = np.exp(logs)
    return f.drop(columns="task_offset")


def policy_world(n_tasks: int = 30, per_task: int = 60, *, seed: int = 0,
                 driver: str = "policy") -> pd.DataFrame:
    """Structure correlated with the authoring policy; reward driven by one of them.

    Each policy tiles with probability 0.1 / 0.5 / 0.9 and coalesces more or less.
    ``driver="policy"``: log speedup = task + policy effect (0, 0.8, 1.6) + N(0, 0.4²), so
    structure only *looks* predictive. ``driver="structure"``: log speedup = task + 0.8 *
    tiled + 0.8 * z(coalesced) + N(0, 0.4²), whatever the policy.
    """
    rng = np.random.default_rng(seed)
    f = _frame(rng, n_tasks, per_task)
    n = len(f)
    pol = rng.integers(0, 3, n)
    f["policy"] = np.array(POLICIES)[pol]
    tiled = rng.random(n) < np.array([0.1, 0.5, 0.9])[pol]
    coal = np.array([-1.0, 0.0, 1.0])[pol] + rng.normal(0, 0.7, n)
    f["smem.tiled"] = tiled
    f["mem.coalesced_fraction"] = 1 / (1 + np.exp(-coal))
    f["sync.count"] = rng.poisson(3, n)
    if driver == "policy":
        effect = np.array([0.0, 0.8, 1.6])[pol]
    elif driver == "structure":
        effect = 0.8 * tiled + 0.8 * (coal - coal.mean()) / coal.std()
    else:
        raise ValueError(f"driver must be 'policy' or 'structure', got {driver!r}")
    f["speedup"] = np.exp(f["task_offset"] + effect + rng.normal(0, 0.4, n))
    return f.drop(columns="task_offset")
