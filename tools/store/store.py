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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from structcover.tools.store.embedding import FeatureSpace
from structcover.tools.store.index import ProgramIndex
from structcover.tools.store.ledger import Ledger, StoreError, StoreOpenError
from structcover.tools.store.models import (
    GAP_STATUSES,
    AttemptRecord,
    DiscoveredFeature,
    GapHistory,
    GapStatus,
    InfeasibilityProof,
    Neighbor,
    OperatorOutcome,
    OperatorTally,
    ProgramRecord,
    RoundFeatures,
)

if TYPE_CHECKING:  # only for annotations: importing mining pulls in scikit-learn
    from structcover.tools.mining.discover import Discovery
    from structcover.tools.mining.drift import Drift

_SPACE_KEY = "feature_space"


class MemoryStore:
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
        recs = list(records)
        if not recs:
            return []
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
        return [r.program_id for r in recs]

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

    # gaps ----------------------------------------------------------------------------------
    def record_attempt(self, task: str, bin_label: str, attempt: AttemptRecord) -> None:
        """Record one attempt at a gap (idempotent) and move the gap's status.

        The attempt's id hashes (task, bin, every field): the same attempt replayed after a
        resume is stored once; set ``candidate_id`` so distinct candidates stay distinct.

        An ``open`` gap becomes ``targeted``; an attempt with outcome ``filled`` makes it
        ``filled``. An ``infeasible`` gap keeps its status unless an attempt fills it (which
        disproves the proof; the proof is kept in the history for inspection).
        """
        aid = attempt.attempt_id(task, bin_label)
        with self._ledger.transaction() as db:
            new = db.execute("INSERT OR IGNORE INTO attempts VALUES (?, ?, ?, ?, ?)",
                             (aid, task, bin_label, attempt.round,
                              attempt.model_dump_json())).rowcount
            if not new:
                return
            row = db.execute("SELECT status FROM gaps WHERE task = ? AND bin_label = ?",
                             (task, bin_label)).fetchone()
            status = "open" if row is None else row[0]
            if attempt.outcome == "filled":
                status = "filled"
            elif status == "open":
                status = "targeted"
            db.execute("INSERT INTO gaps VALUES (?, ?, ?, ?, NULL) ON CONFLICT (task, bin_label)"
                       " DO UPDATE SET status = excluded.status, round = excluded.round",
                       (task, bin_label, status, attempt.round))

    def set_gap_status(self, task: str, bin_label: str, status: GapStatus, round: int
                       ) -> None:
        """Set a gap's status (use :meth:`mark_infeasible` for ``infeasible``: it needs a proof).

        Raises:
            ValueError: Unknown status, or ``infeasible`` without a proof.
        """
        if status not in GAP_STATUSES:
            raise ValueError(f"gap status {status!r} is not one of {GAP_STATUSES}")
        if status == "infeasible":
            raise ValueError("set_gap_status: a gap becomes infeasible only with a proof; "
                             "call mark_infeasible")
        with self._ledger.transaction() as db:
            db.execute("INSERT INTO gaps VALUES (?, ?, ?, ?, NULL) ON CONFLICT (task, bin_label)"
                       " DO UPDATE SET status = excluded.status, round = excluded.round",
                       (task, bin_label, status, round))

    def mark_infeasible(self, task: str, bin_label: str, proof: InfeasibilityProof) -> None:
        """Mark a gap infeasible, storing why; later rounds skip it."""
        with self._ledger.transaction() as db:
            db.execute("INSERT INTO gaps VALUES (?, ?, 'infeasible', ?, ?) "
                       "ON CONFLICT (task, bin_label) DO UPDATE SET status = 'infeasible', "
                       "round = excluded.round, proof = excluded.proof",
                       (task, bin_label, proof.round, proof.model_dump_json()))

    def gap_history(self, task: str, bin_label: str) -> GapHistory:
        """Status, proof and every attempt of one gap (``open``, no attempts, if never seen)."""
        row = self._ledger.rows("SELECT status, round, proof FROM gaps WHERE task = ? AND "
                                "bin_label = ?", (task, bin_label))
        attempts = [AttemptRecord.model_validate_json(r[0]) for r in self._ledger.rows(
            "SELECT record FROM attempts WHERE task = ? AND bin_label = ? ORDER BY rowid",
            (task, bin_label))]
        if not row:
            return GapHistory(task=task, bin_label=bin_label, status="open", round=0,
                              attempts=attempts)
        status, rnd, proof = row[0]
        return GapHistory(task=task, bin_label=bin_label, status=status, round=rnd,
                          attempts=attempts,
                          proof=None if proof is None
                          else InfeasibilityProof.model_validate_json(proof))

    def gaps(self, *, task: str | None = None, status: GapStatus | None = None
             ) -> list[GapHistory]:
        """Every recorded gap (filtered), ordered by (task, bin label)."""
        sql, args = "SELECT task, bin_label FROM gaps WHERE 1=1", []
        if task is not None:
            sql += " AND task = ?"
            args.append(task)
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        return [self.gap_history(t, b)
                for t, b in self._ledger.rows(sql + " ORDER BY task, bin_label", args)]

    # operators -----------------------------------------------------------------------------
    def record_operator_outcome(self, outcome: OperatorOutcome) -> None:
        """Record one operator application (idempotent)."""
        self.record_operator_outcomes([outcome])

    def record_operator_outcomes(self, outcomes: Iterable[OperatorOutcome]) -> None:
        """Record operator applications in one atomic write (idempotent per outcome).

        An outcome's id hashes all its fields, so recording it again after a resume is a
        no-op — and two applications equal in every field count once. Give each its
        ``program_id`` (the parent it was applied to) so distinct applications stay distinct,
        and its ``levels_before``/``levels_after`` so the planner can learn from it.
        """
        with self._ledger.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO operator_outcomes VALUES (?, ?, ?, ?)",
                           [(o.outcome_id(), o.operator, o.family, o.model_dump_json())
                            for o in outcomes])

    def operator_outcomes(self, family: str | None = None, operator: str | None = None
                          ) -> list[OperatorOutcome]:
        """Recorded operator applications, oldest first."""
        sql, args = "SELECT record FROM operator_outcomes WHERE 1=1", []
        if family is not None:
            sql += " AND family = ?"
            args.append(family)
        if operator is not None:
            sql += " AND operator = ?"
            args.append(operator)
        return [OperatorOutcome.model_validate_json(r[0])
                for r in self._ledger.rows(sql + " ORDER BY rowid", args)]

    def operator_tallies(self, family: str | None = None) -> dict[str, OperatorTally]:
        """Success / failure counts per operator (on ``family``, or on all families)."""
        out: dict[str, OperatorTally] = {}
        for o in self.operator_outcomes(family):
            t = out.setdefault(o.operator, OperatorTally(operator=o.operator, family=family,
                                                         successes=0, failures=0))
            if o.success:
                t.successes += 1
            else:
                t.failures += 1
                t.failure_stages[o.stage] = t.failure_stages.get(o.stage, 0) + 1
        return dict(sorted(out.items()))

    # discovered features -------------------------------------------------------------------
    def record_features(self, round: int, discovery: Discovery,
                        drift: Drift | None = None) -> RoundFeatures:
        """Store one round's discovered features (MI, tier, F*, drift); replaces that round."""
        if round < 0:
            raise ValueError(f"record_features: round must be >= 0, got {round}")
        prev = {c.name: c.previous for c in drift.tier_changes} if drift else {}
        feats = [DiscoveredFeature(
            name=f.name, mi=f.mi, tier=f.tier, selected=f.selected, stability=f.stability,
            mi_delta=drift.mi_delta.get(f.name) if drift else None,
            previous_tier=prev.get(f.name)) for f in discovery.features]
        rf = RoundFeatures(round=round, features=feats, f_star=list(discovery.f_star),
                           jaccard=drift.jaccard if drift else None,
                           entered=list(drift.entered) if drift else [],
                           left=list(drift.left) if drift else [])
        with self._ledger.transaction() as db:
            db.execute("INSERT OR REPLACE INTO round_features VALUES (?, ?)",
                       (round, rf.model_dump_json()))
        return rf

    def features_of_round(self, round: int) -> RoundFeatures | None:
        """The features recorded for ``round``, or None if that round was never recorded."""
        rows = self._ledger.rows("SELECT record FROM round_features WHERE round = ?", (round,))
        return RoundFeatures.model_validate_json(rows[0][0]) if rows else None

    def rounds(self) -> list[int]:
        """Rounds with recorded features, ascending."""
        return [int(r[0]) for r in self._ledger.rows(
            "SELECT round FROM round_features ORDER BY round")]

    def summary(self) -> dict[str, Any]:
        """Counts for reports: programs, gaps by status, attempts, operator outcomes."""
        by_status = dict(self._ledger.rows("SELECT status, COUNT(*) FROM gaps GROUP BY status"))
        return {"path": str(self.root), "programs": self.count_programs(),
                "gaps": {s: int(by_status.get(s, 0)) for s in GAP_STATUSES},
                "attempts": int(self._ledger.rows("SELECT COUNT(*) FROM attempts")[0][0]),
                "operator_outcomes": int(self._ledger.rows(
                    "SELECT COUNT(*) FROM operator_outcomes")[0][0]),
                "rounds": self.rounds(), "repairs": list(self.repairs)}


def round_(d: float) -> float:
    """Distances rounded to 6 decimals so float noise does not reorder ties."""
    return round(d, 6)


__all__ = ["MemoryStore", "StoreError", "StoreOpenError"]
