"""The SQLite ledger: the memory store's source of truth.

Every write is one SQLite transaction (WAL journal), so a process killed mid-write leaves either
the whole batch or none of it. The Chroma index is derived from this ledger and rebuilt from it
when the two disagree (:mod:`structcover.tools.store.index`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Bump when the tables change; a store with another version refuses to open.
SCHEMA_VERSION = 1
LEDGER_FILE = "ledger.sqlite"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS programs (
    program_id TEXT PRIMARY KEY, task TEXT NOT NULL, round INTEGER NOT NULL,
    verified INTEGER NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS programs_task ON programs (task);
CREATE TABLE IF NOT EXISTS gaps (
    task TEXT NOT NULL, bin_label TEXT NOT NULL, status TEXT NOT NULL, round INTEGER NOT NULL,
    proof TEXT, PRIMARY KEY (task, bin_label));
CREATE TABLE IF NOT EXISTS attempts (
    attempt_id TEXT PRIMARY KEY, task TEXT NOT NULL, bin_label TEXT NOT NULL,
    round INTEGER NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_gap ON attempts (task, bin_label);
CREATE TABLE IF NOT EXISTS operator_outcomes (
    outcome_id TEXT PRIMARY KEY, operator TEXT NOT NULL, family TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS operator_family ON operator_outcomes (family);
CREATE TABLE IF NOT EXISTS round_features (round INTEGER PRIMARY KEY, record TEXT NOT NULL);
"""


class StoreError(Exception):
    """Base class of memory-store errors."""


class StoreOpenError(StoreError):
    """The store at a path cannot be opened; the message names the path and the reason."""


class StoreSchemaError(StoreOpenError):
    """The store was written with another schema version than this code reads."""


class Ledger:
    """Thin transactional wrapper over the ledger database."""

    def __init__(self, root: Path) -> None:
        self.path = root / LEDGER_FILE
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, one transaction per call.
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode loses nothing on a process kill (only on power loss).
            self.db.execute("PRAGMA synchronous=NORMAL")
            # Empty database (new, or killed before its first commit): create the tables.
            fresh = not self.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
            if fresh:
                with self.transaction():
                    # One statement at a time: executescript would commit mid-transaction.
                    for stmt in filter(str.strip, _TABLES.split(";")):
                        self.db.execute(stmt)
                    self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                                    (str(SCHEMA_VERSION),))
            version = self.meta("schema_version")
        except sqlite3.Error as exc:
            raise StoreOpenError(f"memory store {root}: cannot open its ledger "
                                 f"{self.path.name}: {exc}") from exc
        if version is None:
            raise StoreOpenError(f"memory store {root}: the ledger has no schema version "
                                 "(not a memory store, or created by an interrupted open)")
        if int(version) != SCHEMA_VERSION:
            age = "older" if int(version) < SCHEMA_VERSION else "newer"
            raise StoreSchemaError(
                f"memory store {root}: schema version {version} is {age} than the "
                f"{SCHEMA_VERSION} this code reads; start a new store (--state to a new "
                "folder) or use the structcover version that wrote it")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all."""
        if self.db.in_transaction:
            yield self.db
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        """A meta value, or None."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a meta value (in the caller's transaction, or its own)."""
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and return all rows."""
        return list(self.db.execute(sql, tuple(args)).fetchall())

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
