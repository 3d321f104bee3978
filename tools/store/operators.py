"""The memory store's operator ledger: every recorded application of a mutation operator and
the per-operator tallies the planner's success rates start from. A mixin of
:class:`structcover.tools.store.store.MemoryStore` over its SQLite ledger."""

from __future__ import annotations

from collections.abc import Iterable

from structcover.tools.store.ledger import Ledger
from structcover.tools.store.models import OperatorOutcome, OperatorTally


class OperatorLedger:
    """Operator outcomes (the ledger's ``operator_outcomes`` table)."""

    _ledger: Ledger

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

    def count_operator_outcomes(self, family: str | None = None) -> int:
        """Number of recorded operator applications (on ``family``, or on all families);
        grows with every new outcome."""
        if family is None:
            return int(self._ledger.rows("SELECT COUNT(*) FROM operator_outcomes")[0][0])
        return int(self._ledger.rows("SELECT COUNT(*) FROM operator_outcomes WHERE family = ?",
                                     [family])[0][0])

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
