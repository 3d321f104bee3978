"""Drift of F* between rounds, and saving / loading a discovery."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from structcover.tools.data.atomic import write_text
from structcover.tools.mining.discover import Discovery


class TierChange(BaseModel):
    """A feature whose tier moved between two rounds."""

    name: str
    previous: str | None
    current: str | None


class Drift(BaseModel):
    """How F* and the tiers moved from the previous round's discovery to this one."""

    previous_round: int | None
    current_round: int | None
    entered: list[str] = Field(description="in F* now, not before")
    left: list[str] = Field(description="in F* before, not now")
    kept: list[str]
    jaccard: float = Field(description="|F*_t ∩ F*_{t-1}| / |F*_t ∪ F*_{t-1}| (1 when both empty)")
    tier_changes: list[TierChange]
    mi_delta: dict[str, float] = Field(description="current MI - previous MI, per shared feature")
    new_features: list[str] = Field(default_factory=list, description="measured only now")
    gone_features: list[str] = Field(default_factory=list, description="measured only before")


def compare_discoveries(prev: Discovery, cur: Discovery) -> Drift:
    """Compare ``F*_t`` with ``F*_{t-1}``: entries, exits, tier changes and MI deltas."""
    before, now = set(prev.f_star), set(cur.f_star)
    p = {f.name: f for f in prev.features}
    c = {f.name: f for f in cur.features}
    union = before | now
    changes = [TierChange(name=n, previous=p[n].tier if n in p else None,
                          current=c[n].tier if n in c else None)
               for n in sorted(set(p) | set(c))
               if (p[n].tier if n in p else None) != (c[n].tier if n in c else None)]
    delta = {n: round(cm - pm, 6) for n in sorted(set(p) & set(c))
             if (cm := c[n].mi) is not None and (pm := p[n].mi) is not None}
    return Drift(previous_round=prev.round, current_round=cur.round,
                 entered=[n for n in cur.f_star if n not in before],
                 left=[n for n in prev.f_star if n not in now],
                 kept=[n for n in cur.f_star if n in before],
                 jaccard=len(before & now) / len(union) if union else 1.0,
                 tier_changes=changes, mi_delta=delta,
                 new_features=sorted(set(c) - set(p)), gone_features=sorted(set(p) - set(c)))


def save_discovery(discovery: Discovery, path: Path | str) -> Path:
    """Write ``discovery`` as JSON, atomically (a reader never sees half a file)."""
    return write_text(discovery.model_dump_json(indent=2), path)


def load_discovery(path: Path | str) -> Discovery:
    """Read a discovery saved by ``save_discovery``.

    Raises:
        ValueError: The file is missing or is not a saved discovery.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no saved discovery there")
    try:
        return Discovery.model_validate_json(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: not a saved discovery ({exc})") from exc
