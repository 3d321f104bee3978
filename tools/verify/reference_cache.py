"""Reference outputs remembered across candidates: a campaign runs each reference once per
trial, not once per candidate (in memory, and on disk when given a folder)."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path

import numpy as np

from structcover.schema import TaskSpec, content_hash
from structcover.tools.data.atomic import atomic_write
from structcover.tools.verify.backend import RunResult

__all__ = ["ReferenceCache", "copy_arrays"]


def copy_arrays(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Deep copies of named arrays: no caller can change what a later candidate is judged against."""
    return {k: np.array(v, copy=True) for k, v in arrays.items()}


class ReferenceCache:
    """Reference outputs per (reference hash, spec, sizes, seed, backend), LRU in memory.

    Args:
        directory: Also persist successful reference outputs as ``.npz`` here (shared between
            processes of a campaign); None keeps them in memory only.
        max_entries: In-memory entries kept.
    """

    def __init__(self, directory: Path | None = None, *, max_entries: int = 256) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.directory = Path(directory) if directory else None
        self.max_entries = max_entries
        self._mem: OrderedDict[str, RunResult] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(reference_src: str, spec: TaskSpec, sizes: dict[str, int] | None, seed: int,
            backend: str, profile: str = "nominal") -> str:
        """The cache key of one reference run."""
        blob = json.dumps([content_hash(reference_src), spec.model_dump(mode="json"),
                           sizes or {}, seed, backend, profile], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def get(self, key: str) -> RunResult | None:
        """The cached result, or None."""
        if key in self._mem:
            self._mem.move_to_end(key)
            self.hits += 1
            cached = self._mem[key]
            # A copy: no caller can change the outputs every later candidate is judged against.
            return RunResult(status=cached.status, outputs=copy_arrays(cached.outputs),
                             backend=cached.backend, detail=cached.detail)
        if self.directory and (self.directory / f"{key}.npz").exists():
            with np.load(self.directory / f"{key}.npz", allow_pickle=False) as data:
                result = RunResult(status="ok", outputs={k: data[k] for k in data.files},
                                   backend="cache")
            self._remember(key, result)
            self.hits += 1
            return result
        self.misses += 1
        return None

    def put(self, key: str, result: RunResult) -> None:
        """Remember a successful reference run.

        Failed runs are not kept: a timeout under load or a toolchain hiccup must not condemn
        every later candidate of the task.
        """
        if result.status != "ok":
            return
        self._remember(key, result)
        if self.directory:
            def save(tmp: Path) -> None:
                with open(tmp, "wb") as fh:  # a handle: np.savez would append .npz to a name
                    np.savez(fh, **result.outputs)  # type: ignore[arg-type]

            atomic_write(self.directory / f"{key}.npz", save)  # readers never see half a file

    def _remember(self, key: str, result: RunResult) -> None:
        self._mem[key] = result
        self._mem.move_to_end(key)
        while len(self._mem) > self.max_entries:
            self._mem.popitem(last=False)
