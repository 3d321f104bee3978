"""The memory store's gap ledger: attempts at (task, bin) gaps, statuses and infeasibility
proofs. A mixin of :class:`structcover.tools.store.store.MemoryStore` over its SQLite ledger."""

from __future__ import annotations

from structcover.tools.store.ledger import Ledger
from structcover.tools.store.models import (
    GAP_STATUSES,
    AttemptRecord,
    GapHistory,
    GapStatus,
    InfeasibilityProof,
)


class GapLedger:
    """Gaps and their attempts (the ledger's ``gaps`` and ``attempts`` tables)."""

    _ledger: Ledger

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
        """Every recorded gap (filtered) with its attempts, ordered by (task, bin label).

        Two queries whatever the number of gaps (a campaign reads them all every step).
        """
        where, args = " WHERE 1=1", []
        if task is not None:
            where += " AND task = ?"
            args.append(task)
        attempts: dict[tuple[str, str], list[AttemptRecord]] = {}
        for t, b, rec in self._ledger.rows(
                "SELECT task, bin_label, record FROM attempts" + where + " ORDER BY rowid", args):
            attempts.setdefault((t, b), []).append(AttemptRecord.model_validate_json(rec))
        if status is not None:
            where += " AND status = ?"
            args.append(status)
        return [GapHistory(task=t, bin_label=b, status=st, round=rnd,
                           attempts=attempts.get((t, b), []),
                           proof=None if proof is None
                           else InfeasibilityProof.model_validate_json(proof))
                for t, b, st, rnd, proof in self._ledger.rows(
                    "SELECT task, bin_label, status, round, proof FROM gaps" + where
                    + " ORDER BY task, bin_label", args)]
