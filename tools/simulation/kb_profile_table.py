"""``profile.*`` columns of a feature table: ``structcover features DATA --profile``.

Each row needs something runnable: the KernelBench problem from ``--task PROBLEM.py`` (every
row) or from the row's ``problem`` column (the problem's Python source, JSONL/Parquet), and the
candidate's whole Python file (``ModelNew`` + ``load_inline``): the row's ``program`` when it
is one, else the file the row was read from (a folder of ``.py`` candidates keeps only their
CUDA in ``program``). Rows that cannot run get ``profile.reason`` and NaN counters, never a
silent zero. Profiles are cached by content hash (:func:`kb_profile.profile_candidate`).
"""

from __future__ import annotations

import hashlib
import math
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from structcover.tools.kernelbench.problem import Problem, load_problem
from structcover.tools.simulation.kb_profile import profile_candidate
from structcover.tools.simulation.kb_profile_features import COLUMNS, profile_features


def _failed(reason: str) -> dict[str, Any]:
    return {**{c: math.nan for c in COLUMNS}, "profile.reason": reason, "profile.sizes": ""}


def _candidate_text(row: dict[str, Any], data: Path) -> str | None:
    """The row's whole candidate file, or None when neither the row nor a file holds one."""
    program = str(row.get("program") or "")
    if "ModelNew" in program:
        return program
    rel = row.get("file")
    if isinstance(rel, str) and rel:
        path = data / rel if data.is_dir() else data
        if path.is_file():
            return path.read_text(encoding="utf-8", errors="surrogateescape")
    return None


class _Problems:
    """Problems by path or by the text of a ``problem`` column (written once to a file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.cache: dict[str, Problem | str] = {}
        self.lock = threading.Lock()

    def from_text(self, text: str) -> Problem | str:
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        with self.lock:
            return self._load(key, text)

    def _load(self, key: str, text: str) -> Problem | str:
        if key not in self.cache:
            path = self.folder / f"problem_{key}.py"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            try:
                self.cache[key] = load_problem(path)
            except (ValueError, SyntaxError, OSError) as exc:
                self.cache[key] = f"bad-problem: {exc}"[:200]
        return self.cache[key]


def profile_row(row: dict[str, Any], data: Path, task: Problem | None, problems: _Problems,
                budget: float | None = None) -> dict[str, Any]:
    """The ``profile.*`` columns of one record (see the module doc)."""
    problem: Problem | str | None = task
    if problem is None:
        text = row.get("problem")
        problem = problems.from_text(text) if isinstance(text, str) and text.strip() else \
            "no-problem: give --task PROBLEM.py or a `problem` column with its source"
    if isinstance(problem, str):
        return _failed(problem)
    candidate = _candidate_text(row, data)
    if candidate is None:
        return _failed("no-candidate: the row holds no ModelNew file (the profile runs the "
                       "whole KernelBench candidate)")
    prof = profile_candidate(candidate, problem, budget=budget)
    return profile_features(prof, problem.work())


def profile_columns(records: pd.DataFrame, data: Path, task: Path | None = None, *,
                    budget: float | None = None, threads: int = 1,
                    on_progress: Any = None) -> pd.DataFrame:
    """``profile.*`` columns for ``records`` (index aligned), one profile per row.

    Args:
        records: The loaded records (``program``, optionally ``file`` and ``problem``).
        data: What they were loaded from (a folder's rows name their files in ``file``).
        task: A KernelBench problem file for every row (else each row's ``problem`` column).
        budget: The CPU path's work budget (default: verification's).
        threads: Candidates profiled at once (each waits on sandboxed builds and runs).
        on_progress: Called with the number of rows done.

    Raises:
        ValueError: ``task`` is not a readable problem file.
    """
    fixed = load_problem(task) if task is not None else None
    done = 0
    with tempfile.TemporaryDirectory(prefix="structcover-kbproblems-") as tmp:
        problems = _Problems(Path(tmp))
        rows = records.to_dict(orient="records")

        def one(row: dict[str, Any]) -> dict[str, Any]:
            nonlocal done
            try:
                out = profile_row(row, Path(data), fixed, problems, budget)
            except RuntimeError as exc:  # SandboxUnavailable: the environment, said per row
                out = _failed(f"environment: {exc}"[:200])
            done += 1
            if on_progress is not None:
                on_progress(done)
            return out

        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            out = list(pool.map(one, rows))
    return pd.DataFrame(out, index=records.index)
