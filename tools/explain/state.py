"""Read-only view of a campaign state folder: the frozen archive, the memory store (programs,
gaps, attempts, proofs) and the diagnosis' infeasibility proofs. Every explanation and every
Inspector tool reads through it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class StateError(ValueError):
    """A state folder that cannot be explained (named, with the reason)."""


@dataclass
class StateView:
    """What a state folder holds, opened once."""

    state_dir: Path
    archive: Any
    store: Any | None
    proofs: dict[str, dict[str, str]] = field(default_factory=dict)  # bin -> {reason, rule}
    round: int | None = None

    @classmethod
    def open(cls, state_dir: Path) -> StateView:
        """Open ``state_dir``.

        Raises:
            StateError: Not a folder, or no frozen archive in it (run ``structcover
                diagnose`` or ``campaign`` first).
        """
        from structcover.tools.coverage.archive import load_archive

        state_dir = Path(state_dir)
        if not state_dir.is_dir():
            raise StateError(f"--state {state_dir}: not a folder")
        archive = load_archive(state_dir)
        if archive is None:
            raise StateError(f"--state {state_dir}: no frozen archive (archive.json); run "
                             "`structcover diagnose` or `structcover campaign` on it first")
        store = None
        if (state_dir / "memory").is_dir():
            from structcover.tools.store import MemoryStore

            store = MemoryStore.open(state_dir / "memory")
        n, proofs = _diagnosis_proofs(state_dir)
        return cls(state_dir=state_dir, archive=archive, store=store, proofs=proofs, round=n)

    def close(self) -> None:
        """Release the memory store."""
        if self.store is not None:
            self.store.close()

    def __enter__(self) -> StateView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tasks(self) -> list[str]:
        """Tasks memory knows (programs or gaps)."""
        if self.store is None:
            return []
        return sorted({p.task for p in self.store.programs()}
                      | {g.task for g in self.store.gaps()})

    def programs(self, task: str | None = None) -> list[Any]:
        """Verified programs in memory (of ``task``)."""
        return [] if self.store is None else self.store.programs(task=task, verified=True)

    def gaps(self, task: str) -> dict[str, Any]:
        """Recorded gap histories of ``task`` by bin label."""
        if self.store is None:
            return {}
        return {g.bin_label: g for g in self.store.gaps(task=task)}


def _diagnosis_proofs(state_dir: Path) -> tuple[int | None, dict[str, dict[str, str]]]:
    """The latest round's bin-level infeasibility proofs (diagnosis.json) plus the
    user-supplied ``infeasible.json``."""
    out: dict[str, dict[str, str]] = {}
    rounds = sorted((int(p.name) for p in (state_dir / "rounds").glob("*")
                     if p.name.isdigit() and (p / "diagnosis.json").is_file()), reverse=True)
    n = rounds[0] if rounds else None
    items: list[Any] = []
    if n is not None:
        try:
            items += json.loads((state_dir / "rounds" / str(n) / "diagnosis.json").read_text()
                                ).get("infeasible") or []
        except (OSError, ValueError) as exc:
            raise StateError(f"{state_dir}/rounds/{n}/diagnosis.json: unreadable ({exc})") from exc
    extra = state_dir / "infeasible.json"
    if extra.is_file():
        try:
            items += json.loads(extra.read_text()) or []
        except ValueError as exc:
            raise StateError(f"{extra}: not JSON ({exc})") from exc
    for p in items:
        if isinstance(p, dict) and p.get("bin"):
            out[str(p["bin"])] = {"reason": str(p.get("reason", "")),
                                  "rule": str(p.get("rule") or p.get("kind") or "diagnosis")}
    return n, out
