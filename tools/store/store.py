"""MemoryStore: the campaign's memory across rounds (programs, gaps, operator outcomes, features).

Layout under the store folder: ``ledger.sqlite`` (source of truth, one transaction per write)
and ``chroma/`` (a Chroma index of programs for nearest look-up, rebuilt from the ledger when
out of sync). One writer process at a time; readers may share the folder.

Example::

    store = MemoryStore.open(state_dir / "memory")
    store.add_programs([ProgramRecord(task="t", source=src, features=f, verified=True, round=0)])
    near = store.nearest(f, k=3, task="t", verified=True)
    store.record_attempt("t", "pattern.reuse=high", AttemptRecord(round=1, outcome="wrong_bin",
                         stage="structure", reason="landed in pattern.reuse=none"))

This module holds opening, index repair and programs; gaps and attempts live in
:mod:`~structcover.tools.store.gaps`, operator outcomes in
:mod:`~structcover.tools.store.operators`, per-round features in
:mod:`~structcover.tools.store.rounds` (mixins over the same ledger).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from structcover.tools.store.embedding import FeatureSpace
from structcover.tools.store.gaps import GapLedger
from structcover.tools.store.index import ProgramIndex
from structcover.tools.store.ledger import Ledger, StoreError, StoreOpenError
from structcover.tools.store.models import GAP_STATUSES, Neighbor, ProgramRecord
from structcover.tools.store.operators import OperatorLedger
from structcover.tools.store.rounds import RoundLedger

_SPACE_KEY = "feature_space"


class MemoryStore(GapLedger, OperatorLedger, RoundLedger):
    """Typed access to the campaign memory. Build with :meth:`open`."""

    def __init__(self, root: Path, ledger: Ledger) -> None:
        self.root = root
        self._ledger = ledger
        self._index: ProgramIndex | None = None
        #: What :meth:`open` had to repair in the index (empty when it was in sync).
        self.repairs: list[str] = []

    # opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str, *, space: FeatureSpace | None = None) -> MemoryStore:
        """Open (creating if needed) the store at ``path`` and bring its index in sync.

        Args:
            path: The store folder.
            space: Feature space to embed programs in. A new store without one fits it on the
                first :meth:`add_programs` batch; an existing store keeps the space it has.

        Raises:
            StoreOpenError: ``path`` is not a folder, cannot be created, holds no valid
                ledger, or ``space`` differs from the space the store was built with.
            StoreSchemaError: The store was written with another schema version.
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise StoreOpenError(f"memory store {root}: not a folder")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreOpenError(f"memory store {root}: cannot create it: {exc}") from exc
        store = cls(root, Ledger(root))
        stored = store._stored_space()
        if stored is not None and space is not None and stored != space:
            store.close()
            raise StoreOpenError(f"memory store {root}: it embeds programs in another feature "
                                 f"space ({len(stored.names)} features) than the one given "
                                 f"({len(space.names)}); open it without a space or start a "
                                 "new store")
        if stored is None and space is not None:
            store._ledger.set_meta(_SPACE_KEY, space.model_dump_json())
        store._sync_index()
        return store

    def close(self) -> None:
        """Close the ledger and the index."""
        if self._index is not None:
            self._index.close()
            self._index = None
        self._ledger.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def space(self) -> FeatureSpace | None:
        """The feature space programs are embedded in (None before the first program)."""
        return self._stored_space()

    def _stored_space(self) -> FeatureSpace | None:
        raw = self._ledger.meta(_SPACE_KEY)
        return None if raw is None else FeatureSpace.model_validate_json(raw)

    def _sync_index(self) -> None:
        """Open the index and make it hold exactly the ledger's programs."""
        space = self._stored_space()
        if space is None:
            return
        self._index = ProgramIndex(self.root, space)
        note = self._index.open_checked()
        if note:
            self.repairs.append(note)
        indexed = self._index.ids()
        ledger_ids = {r[0] for r in self._ledger.rows("SELECT program_id FROM programs")}
        missing, stray = sorted(ledger_ids - indexed), sorted(indexed - ledger_ids)
        if stray:
            self._index.delete(stray)
            self.repairs.append(f"removed {len(stray)} indexed programs absent from the ledger")
        if missing:
            self._index.upsert(self._programs_by_id(missing))
            self.repairs.append(f"indexed {len(missing)} ledger programs missing from the index")

    # programs ------------------------------------------------------------------------------
    def add_programs(self, records: Iterable[ProgramRecord]) -> list[str]:
        """Add (or replace, by id) programs; one atomic write. Returns their ids, in order.

        Re-adding a program with the same id is idempotent. The first batch of a store
        without a feature space fixes the space (fitted on that batch).
        """
        given = list(records)
        if not given:
            return []
        # One record per id (the last wins), as INSERT OR REPLACE would leave it: the index
        # refuses a batch that repeats an id.
        recs = list({r.program_id: r for r in given}.values())
        space = self._stored_space()
        with self._ledger.transaction() as db:
            if space is None:
                space = FeatureSpace.fit(r.features for r in recs)
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                           (_SPACE_KEY, space.model_dump_json()))
            db.executemany(
                "INSERT OR REPLACE INTO programs VALUES (?, ?, ?, ?, ?)",
                [(r.program_id, r.task, r.round, int(r.verified), r.model_dump_json())
                 for r in recs])
        # Index after the ledger commits: a kill here leaves the index behind the ledger,
        # which the next open repairs.
        if self._index is None:
            self._index = ProgramIndex(self.root, space)
            if note := self._index.open_checked():
                self.repairs.append(note)
        self._index.upsert(recs)
        return [r.program_id for r in given]

    def get_program(self, program_id: str) -> ProgramRecord | None:
        """The program with this id, or None."""
        got = self._programs_by_id([program_id])
        return got[0] if got else None

    def _programs_by_id(self, ids: Sequence[str]) -> list[ProgramRecord]:
        out: dict[str, ProgramRecord] = {}
        for i in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
            chunk = list(ids[i:i + 500])
            marks = ",".join("?" * len(chunk))
            for pid, rec in self._ledger.rows(
                    f"SELECT program_id, record FROM programs WHERE program_id IN ({marks})",
                    chunk):
                out[pid] = ProgramRecord.model_validate_json(rec)
        return [out[i] for i in ids if i in out]

    def programs(self, *, task: str | None = None, verified: bool | None = None,
                 round: int | None = None) -> list[ProgramRecord]:
        """Programs matching the filters, ordered by id (deterministic)."""
        sql, args = "SELECT record FROM programs WHERE 1=1", []
        for col, val in (("task", task), ("verified", None if verified is None
                                          else int(verified)), ("round", round)):
            if val is not None:
                sql += f" AND {col} = ?"
                args.append(val)
        return [ProgramRecord.model_validate_json(r[0])
                for r in self._ledger.rows(sql + " ORDER BY program_id", args)]

    def count_programs(self) -> int:
        """Number of programs in the ledger."""
        return int(self._ledger.rows("SELECT COUNT(*) FROM programs")[0][0])

    def nearest(self, query: Mapping[str, float] | Sequence[float], k: int = 5, *,
                task: str | None = None, verified: bool | None = None,
                round: int | None = None,
                where: Mapping[str, Any] | None = None) -> list[Neighbor]:
        """The ``k`` programs nearest to ``query`` in feature space (cosine), nearest first.

        Args:
            query: Raw features (normalised through the store's space) or an already
                normalised vector of length ``space.dim``.
            k: How many neighbours at most.
            task, verified, round: Metadata equality filters, combined with AND.
            where: Extra Chroma ``where`` clause (e.g. ``{"round": {"$lte": 2}}``).

        Raises:
            ValueError: ``k`` < 1, or a vector of the wrong length.
        """
        if k < 1:
            raise ValueError(f"nearest: k must be >= 1, got {k}")
        space = self._stored_space()
        if space is None or self._index is None:
            return []
        if isinstance(query, Mapping):
            vector = space.embed(query)
        else:
            vector = [float(x) for x in query]
            if len(vector) != space.dim:
                raise ValueError(f"nearest: vector has {len(vector)} values, the store's "
                                 f"space has {space.dim} (features + 1)")
        clauses: list[dict[str, Any]] = [
            {key: val} for key, val in (("task", task), ("verified", verified),
                                        ("round", round)) if val is not None]
        if where:
            clauses.append(dict(where))
        flt = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        hits = self._index.query(vector, k, flt)
        recs = {r.program_id: r for r in self._programs_by_id([i for i, _ in hits])}
        # Ties broken by id so equal-distance neighbours come back in a stable order.
        ranked = sorted(((round_(d), i) for i, d in hits if i in recs))
        return [Neighbor(program=recs[i], distance=d) for d, i in ranked]

    def summary(self) -> dict[str, Any]:
        """Counts for reports: programs (and per origin: input, mutant, llm...), gaps by
        status, attempts, operator outcomes."""
        by_status = dict(self._ledger.rows("SELECT status, COUNT(*) FROM gaps GROUP BY status"))
        origins = {str(o): int(n) for o, n in self._ledger.rows(
            "SELECT json_extract(record, '$.origin'), COUNT(*) FROM programs GROUP BY 1 "
            "ORDER BY 1")}
        return {"path": str(self.root), "programs": self.count_programs(), "origins": origins,
                "gaps": {s: int(by_status.get(s, 0)) for s in GAP_STATUSES},
                "attempts": int(self._ledger.rows("SELECT COUNT(*) FROM attempts")[0][0]),
                "operator_outcomes": int(self._ledger.rows(
                    "SELECT COUNT(*) FROM operator_outcomes")[0][0]),
                "rounds": self.rounds(), "repairs": list(self.repairs)}


def round_(d: float) -> float:
    """Distances rounded to 6 decimals so float noise does not reorder ties."""
    return round(d, 6)


__all__ = ["MemoryStore", "StoreError", "StoreOpenError"]
