"""The prioritized gap list: which bins to fill next, and why (stages 2–3 of the loop).

Priority is a transparent sum, so a reader can check it:

* base by kind: zero bin 1.0, shortcut / hidden-optimization bin 0.8, low bin 0.5;
* + 0.5 when the bin takes a level of a feature that collapsed this round (the policy is
  leaving it, so the data must bring it back);
* + up to 0.5 from the best reward of an adjacent non-empty grid bin, relative to the best
  anywhere (a promising neighbour makes the empty bin worth trying and gives mutations a
  starting point);
* + the bin's |signed SRMis| for mismatch bins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from structcover.tools.coverage.bins import Bound
from structcover.tools.coverage.entropy import CollapseReport
from structcover.tools.coverage.srmis import SRMisReport

GapKind = Literal["zero", "low", "shortcut", "hidden-optimization"]
_BASE = {"zero": 1.0, "shortcut": 0.8, "hidden-optimization": 0.8, "low": 0.5}


class Gap(BaseModel):
    """One bin worth acting on."""

    bin: str
    kind: GapKind
    priority: float
    count: int
    reasons: list[str] = Field(default_factory=list)
    bounds: dict[str, Bound] = Field(default_factory=dict)
    action: str = Field(description="what stage 3 should do about it")


_ACTIONS = {
    "zero": "targeted synthesis: prompt with the bin's structural constraint; mutate the "
            "nearest verified programs toward it",
    "low": "up-weight in sampling and add verified programs to reach the low-count threshold",
    "shortcut": "contrast pairs: optimized-looking but slow vs naive-looking but fast",
    "hidden-optimization": "contrast pairs and a look at what the structure features miss",
}


def prioritize_gaps(*, zero: list[str], low: list[str], counts: dict[str, int],
                    srmis: SRMisReport, collapse: CollapseReport,
                    describe: Callable[[str], dict[str, Bound]],
                    neighbour_best: dict[int, tuple[int, float]] | None, labels: list[str],
                    max_gaps: int = 50) -> list[Gap]:
    """Build and sort the gap list (highest priority first, then label for stability)."""
    collapsed = {c.feature: c.ratio for c in collapse.key_features}
    index_of = {lab: i for i, lab in enumerate(labels)}
    best_all = max((b for _, b in (neighbour_best or {}).values()), default=0.0)
    mism = {b.label: b for b in srmis.per_bin}
    items: list[tuple[str, GapKind]] = [(b, "zero") for b in zero] + [(b, "low") for b in low]
    items += [(b, "shortcut") for b in srmis.shortcut_bins]
    items += [(b, "hidden-optimization") for b in srmis.hidden_bins]
    gaps = []
    for label, kind in items:
        bounds = describe(label)
        score, reasons = _BASE[kind], []
        n = counts.get(label, 0)
        if kind == "zero":
            reasons.append("no program of this round lands in this bin")
        elif kind == "low":
            reasons.append(f"only {n} program(s) in this bin")
        else:
            m = mism[label]
            score += abs(m.signed)
            reasons.append(
                f"structure predicts {'fast' if m.signed > 0 else 'slow'} but rewards are "
                f"{'low' if m.signed > 0 else 'high'} (signed rank mismatch {m.signed:+.2f} "
                f"over {m.count} programs)")
        hit = [f for f in bounds if f in collapsed]
        if hit:
            score += 0.5
            reasons.append("involves collapsed feature(s) " + ", ".join(
                f"{f} (entropy ratio {collapsed[f]:.2f})" for f in hit))
        nb = (neighbour_best or {}).get(index_of.get(label, -1))
        if kind == "zero" and nb and best_all > 0:
            score += 0.5 * nb[1] / best_all
            reasons.append(f"adjacent bin {labels[nb[0]]} reaches reward {nb[1]:.3g}")
        gaps.append(Gap(bin=label, kind=kind, priority=round(float(score), 4), count=int(n),
                        reasons=reasons, bounds=bounds, action=_ACTIONS[kind]))
    gaps.sort(key=lambda g: (-g.priority, g.bin))
    return gaps[:max_gaps]

