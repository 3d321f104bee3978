"""The input sets of one verification: per-trial seed, sizes and input profile.

**Inputs that vary.** A program that ignores ``n``, special-cases the tested shape or memorizes
the outputs for known seeds must fail, so one verification runs ``trials`` different input
sets, planned from one seed by :func:`plan_trials`: the sizes cycle through the low end of
every ``TaskSpec.size_ranges`` entry, the high end, and odd sizes drawn between (odd, so never a
multiple of a power-of-two block size); the input profiles cycle through the task's
``input_profiles`` (large magnitudes, ties, edge values, specials where the task allows). The
plan is a pure function of ``(spec, seed, trials)``, so the verdict's seed replays it exactly.
"""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass

import numpy as np

from structcover.schema import TaskSpec
from structcover.tools.verify.inputs import csr_nnz


@dataclass(frozen=True)
class Trial:
    """One planned input set of a verification."""

    seed: int
    sizes: dict[str, int]
    profile: str

    def describe(self) -> str:
        """``seed S, sizes N=…, profile P`` for verdict messages."""
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"seed {self.seed}, sizes {sizes or '-'}, profile {self.profile}"


def fresh_seed() -> int:
    """A seed no program can predict (31 bits, from the OS's entropy pool)."""
    return secrets.randbits(31)


def _odd_in(rng: np.random.Generator, low: int, high: int) -> int:
    """An odd integer in ``[low, high]`` (``low`` itself when the range holds no odd number)."""
    value = int(rng.integers(low, high + 1))
    if value % 2 == 0:
        value = value + 1 if value + 1 <= high else value - 1
    return value if low <= value <= high else low


def size_plan(spec: TaskSpec, seed: int, count: int) -> list[dict[str, int]]:
    """``count`` size assignments for one verification (see the module doc).

    The first is the low end of every range, the second the high end, the rest odd sizes drawn
    uniformly in between (one draw per three further trials, shared by them). Without
    ``size_ranges`` every entry is the task's own sizes.

    Raises:
        ValueError: ``count`` < 1, or a drawn size makes a shape expression invalid.
    """
    if count < 1:
        raise ValueError(f"size_plan: count must be >= 1, got {count}")
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(b"sizes")])
    # Trials of one size run in one sandbox child, so the draws between the ends are shared by
    # up to three trials (3 size sets for 5 trials): the draw is what a program cannot guess,
    # the ends are what breaks size assumptions.
    pool = [{name: _odd_in(rng, low, high) for name, (low, high) in spec.size_ranges.items()}
            for _ in range(max(1, (count - 2) // 3))]
    plans: list[dict[str, int]] = []
    for index in range(count):
        sizes = dict(spec.sizes)
        for name, (low, high) in spec.size_ranges.items():
            sizes[name] = low if index == 0 else high if index == 1 else \
                pool[(index - 2) % len(pool)][name]
        if spec.generator == "csr" and "N" in spec.size_ranges and "NNZ" in sizes:
            # NNZ follows N for the csr generator; a range on NNZ itself would be inconsistent.
            sizes["NNZ"] = csr_nnz(str(spec.generator_params.get("pattern")), sizes["N"],
                                   spec.generator_params)
        for arg in spec.tensors:
            if any(d < 0 for d in spec.shape_of(arg.name, sizes)):
                raise ValueError(f"task {spec.task_id}: sizes {sizes} give {arg.name} a negative "
                                 "dimension; narrow size_ranges")
        plans.append(sizes)
    return plans


def plan_trials(spec: TaskSpec, seed: int, trials: int, *, vary: bool = True) -> list[Trial]:
    """The input sets of one verification: per-trial seed, sizes and profile.

    Args:
        spec: The task.
        seed: The verification's seed (recorded in the verdict; replays the plan).
        trials: Number of input sets.
        vary: False keeps the task's own sizes and the nominal profile for every trial (an
            explicit ``sizes`` override, or a caller that wants the old fixed behaviour).

    Returns:
        ``trials`` trials with seeds ``seed, seed+1, …``. Sizes: low end, high end, then
        odd draws; profiles cycle through ``spec.input_profiles`` starting at the third trial,
        so the size extremes are always tried on nominal data too.
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not vary:
        return [Trial(seed + t, dict(spec.sizes), "nominal") for t in range(trials)]
    sizes = size_plan(spec, seed, trials)
    # The size extremes run on nominal data; the other trials cycle the non-nominal profiles.
    extra: list[str] = [p for p in spec.input_profiles if p != "nominal"] or ["nominal"]
    plan = []
    for t in range(trials):
        profile = "nominal" if t < 2 else extra[(t - 2) % len(extra)]
        plan.append(Trial(seed + t, sizes[t], profile))
    return plan
