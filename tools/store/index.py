"""The Chroma index of programs: nearest look-up in feature space, derived from the ledger.

The index is never the source of truth. On open it is compared with the ledger and repaired —
missing programs re-added, stray ones removed, or the whole index rebuilt when Chroma cannot
open or query it (e.g. a process killed while Chroma was flushing).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings

from structcover.tools.store.embedding import FeatureEmbedding, FeatureSpace
from structcover.tools.store.models import ProgramRecord

INDEX_DIR = "chroma"
COLLECTION = "programs"


def _metadata(rec: ProgramRecord) -> dict[str, Any]:
    # Chroma metadata values cannot be None: leave unset fields out.
    meta: dict[str, Any] = {"task": rec.task, "verified": rec.verified, "round": rec.round,
                            "origin": rec.origin}
    if rec.bin_label is not None:
        meta["bin_label"] = rec.bin_label
    return meta


class ProgramIndex:
    """A Chroma collection of programs embedded by :class:`FeatureEmbedding` (cosine space)."""

    def __init__(self, root: Path, space: FeatureSpace) -> None:
        """Bind to ``root/chroma``; nothing is opened until :meth:`open_checked`."""
        self.path = root / INDEX_DIR
        self.space = space
        self.embedding = FeatureEmbedding(space)
        self.client: Any = None

    def open_checked(self) -> str | None:
        """Open and probe the index; rebuild it empty if Chroma cannot use it.

        Returns:
            None when it opened cleanly, else a note saying why it was reset.
        """
        try:
            self._open()
            self.probe()
            return None
        except Exception as exc:  # noqa: BLE001 — any failure: the ledger can rebuild it
            self.reset()
            return f"index unreadable ({type(exc).__name__}: {exc}); rebuilt from the ledger"

    def _open(self) -> None:
        self.client = chromadb.PersistentClient(
            path=str(self.path), settings=Settings(anonymized_telemetry=False))
        self.collection = self.client.get_or_create_collection(
            COLLECTION, embedding_function=self.embedding,
            configuration={"hnsw": {"space": "cosine"}})

    def reset(self) -> None:
        """Drop the index from disk and start an empty one."""
        self.close()
        self._forget_system()
        shutil.rmtree(self.path, ignore_errors=True)
        self._open()

    def _forget_system(self) -> None:
        # A client that failed half-way through opening leaves its broken System cached
        # under the path; the next client for the path would reuse it. Drop that entry only
        # (clear_system_cache would close every other store of this process too).
        from chromadb.api.shared_system_client import SharedSystemClient

        with contextlib.suppress(Exception):
            system = SharedSystemClient._identifier_to_system.pop(str(self.path), None)
            SharedSystemClient._identifier_to_refcount.pop(str(self.path), None)
            if system is not None:
                system.stop()

    def ids(self) -> set[str]:
        """Ids of every indexed program."""
        return set(self.collection.get(include=[])["ids"])

    def upsert(self, records: Sequence[ProgramRecord]) -> None:
        """Index records (idempotent: ids are content hashes)."""
        step = max(1, int(self.client.get_max_batch_size()))
        for i in range(0, len(records), step):
            chunk = records[i:i + step]
            # Vectors from the collection's own embedding function, but no documents: the
            # ledger keeps the records, and Chroma's full-text index of ~4 KB feature
            # documents would cost most of the write time.
            self.collection.upsert(
                ids=[r.program_id for r in chunk],
                embeddings=self.embedding.embed_features([r.features for r in chunk]),
                metadatas=[_metadata(r) for r in chunk])

    def delete(self, ids: Sequence[str]) -> None:
        """Remove ids from the index."""
        if ids:
            self.collection.delete(ids=list(ids))

    def query(self, vector: Sequence[float], k: int, where: Mapping[str, Any] | None
              ) -> list[tuple[str, float]]:
        """(id, cosine distance) of the ``k`` nearest programs matching ``where``."""
        n = self.collection.count()
        if n == 0:
            return []
        res = self.collection.query(query_embeddings=[list(map(float, vector))],
                                    n_results=min(k, n), where=dict(where) if where else None,
                                    include=["distances"])
        ids = res["ids"][0]
        dists = (res["distances"] or [[]])[0]
        return [(i, float(d)) for i, d in zip(ids, dists, strict=True)]

    def probe(self) -> None:
        """Run one count and one query; raises if the on-disk index is unusable."""
        if self.collection.count():
            self.collection.query(query_embeddings=[[0.0] * (self.space.dim - 1) + [1.0]],
                                  n_results=1, include=["distances"])

    def close(self) -> None:
        """Release Chroma's cached system for this path (so the folder can be reopened)."""
        if self.client is None:
            return
        # close() is refcounted: other clients of the same path in this process stay open.
        with contextlib.suppress(Exception):  # best effort: nothing to recover on close
            self.client.close()
        self.client = None
