"""Proofs that an archive bin is infeasible, the only bins a feasibility-adjusted SCov drops.

Report SCov raw, and beside it an adjusted value only for bins *proven*
infeasible. Two kinds of proof are accepted: a contradiction between the bin's feature values
(with the reason, e.g. "warp shuffles need a warp-level reduction"), or at least N targeted
attempts that all failed, each with its reason. Anything less is not a proof and is rejected
with a reason; a bin that holds a program cannot be infeasible.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from structcover.tools.coverage.archive import Archive


class InfeasibilityProof(BaseModel):
    """Evidence that no valid program can land in ``bin``."""

    bin: str = Field(description="the bin's label")
    kind: Literal["contradiction", "failed-attempts"]
    reason: str
    attempts: list[str] = Field(default_factory=list,
                                description="one failure reason per targeted attempt")


class RejectedProof(BaseModel):
    """A proof that was not accepted, and why."""

    proof: InfeasibilityProof
    why: str


class Contradiction(BaseModel):
    """A rule: feature values that cannot hold together. ``when`` maps feature to value."""

    when: dict[str, str | float]
    reason: str


def contradiction_proofs(archive: Archive, rules: list[Contradiction]) -> list[InfeasibilityProof]:
    """Proofs for every bin whose bounds satisfy all of a rule's values.

    A categorical bound matches a value equal to its level; a numeric bound matches a number
    inside ``[low, high]``. Rules naming a feature the archive lacks match nothing.
    """
    proofs = []
    for label in archive.labels():
        bounds = archive.describe_bin(label)
        for rule in rules:
            if all(f in bounds and _matches(bounds[f], v) for f, v in rule.when.items()):
                proofs.append(InfeasibilityProof(bin=label, kind="contradiction",
                                                 reason=rule.reason))
                break
    return proofs


def _matches(bound, value) -> bool:
    if bound.value is not None:
        return str(bound.value) == str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    # high None: the open last bin of a fixed-edge axis.
    return bound.low is not None and bound.low <= x and (bound.high is None or x <= bound.high)


def check_proofs(proofs: list[InfeasibilityProof], *, labels: set[str], covered: set[str],
                 min_attempts: int = 3) -> tuple[list[InfeasibilityProof], list[RejectedProof]]:
    """Split proofs into accepted and rejected (with the reason).

    Args:
        proofs: Candidate proofs.
        labels: Every bin label of the archive.
        covered: Labels of bins that hold at least one program this round.
        min_attempts: Failed targeted attempts needed for a ``failed-attempts`` proof.
    """
    accepted: dict[str, InfeasibilityProof] = {}
    rejected = []
    for p in proofs:
        why = None
        if p.bin not in labels:
            why = "no such bin in the frozen archive"
        elif p.bin in covered:
            why = "the bin holds a program, so it is feasible"
        elif not p.reason.strip():
            why = "a proof needs a reason"
        elif p.kind == "failed-attempts" and (
                len(p.attempts) < min_attempts or not all(a.strip() for a in p.attempts)):
            why = f"needs {min_attempts} failed attempts, each with a reason"
        if why:
            rejected.append(RejectedProof(proof=p, why=why))
        else:
            accepted.setdefault(p.bin, p)
    return list(accepted.values()), rejected
