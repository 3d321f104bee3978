"""A reward hook for RL trainers: the trainer's score, gated by anti-hacking, plus a coverage bonus.

verl loads a custom reward function by file path and function name and calls it once per
rollout with ``(data_source, solution_str, ground_truth, extra_info)``, plus the
``reward_kwargs`` of its config. Point it here::

    custom_reward_function:
      path: /path/to/site-packages/structcover/reward.py   # see: python -m structcover.reward
      name: compute_score
      reward_kwargs:
        base_score: my_rewards.py:kernel_score   # your correctness/speed score
        state_dir: /data/structcover             # the campaign state (frozen archive)
        coverage_weight: 0.1                     # 0 (the default) turns the bonus off

The score combines three parts, in this order:

1. **The trainer's own score** — ``extra_info["score"]`` when the trainer already measured it,
   else the user's function named by ``base_score`` (``"file.py:func"``, ``"module:func"`` or a
   callable) called with the same four arguments. Never invented: with neither, it raises.
2. **The anti-hacking gate** — the static checks of :mod:`structcover.tools.verify.hacking`;
   a hard failure scores 0 whatever the trainer said, with the reasons in the result.
3. **A coverage bonus** (off by default) — a correct program (trainer score > 0) whose
   structure lands in a zero or low bin of the frozen archive earns
   ``coverage_weight / (1 + count)``, where ``count`` is the bin's count in the archive
   (per task when the state has per-task counts). Common bins earn nothing, so the bonus
   pulls the policy toward structures the data lacks without paying for wrong programs.

It runs feature extraction only (no compile, no execution), so it is cheap enough to call on
every rollout; ``bench/bench_reward.py`` measures it. The result is a dict, which verl's reward
managers accept: ``score`` is the reward, the other keys are logged as extra information.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CoverageLookup", "compute_score", "extract_program"]

BaseScore = Callable[[str, str, Any, dict[str, Any] | None], Any]

# The last fenced block wins: policies often quote the reference first, then answer.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+\-]*)[^\n]*\n(.*?)```", re.DOTALL)
_CODE_LANGS = {"", "cuda", "cu", "cpp", "c++", "c", "python", "py"}


def extract_program(solution_str: str) -> str:
    """The program inside a model's reply: the last fenced code block, else the whole text.

    Args:
        solution_str: The decoded model output.

    Returns:
        The program text.
    """
    blocks = [body for lang, body in _FENCE.findall(solution_str) if lang.lower() in _CODE_LANGS]
    return blocks[-1] if blocks else solution_str


def _load_callable(spec: str) -> BaseScore:
    """``"path/to/file.py:func"`` or ``"package.module:func"`` → the function."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"base_score {spec!r}: expected 'file.py:function' or 'module:function'")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ValueError(f"base_score {spec!r}: no such file {path}")
        module_spec = importlib.util.spec_from_file_location(f"_structcover_base_{path.stem}", path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"base_score {spec!r}: cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"base_score {spec!r}: {name} is not a function of {target}")
    return fn


def _score_value(value: Any, source: str) -> float:
    """A float from a score, or from a verl-style ``{"score": …}`` dict."""
    if isinstance(value, dict):
        if "score" not in value:
            raise ValueError(f"{source} returned a dict without 'score'")
        value = value["score"]
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source} returned {type(value).__name__}, not a number") from exc
    if not np.isfinite(out):
        raise ValueError(f"{source} returned a non-finite score {out}")
    return out


class CoverageLookup:
    """The frozen archive of a state folder and its bin counts, loaded once per process.

    Attributes:
        state_dir: The campaign state folder.
        archive: The frozen archive (None when the state has none yet).
        task_counts: ``task → bin label → count`` when the state records per-task counts.
        mtime: The archive file's modification time when loaded.
    """

    # A plain class, not a dataclass: verl imports this file by path under another module
    # name, and dataclasses look their module up in sys.modules.
    def __init__(self, *, state_dir: Path, archive: Any, task_counts: dict[str, dict[str, int]],
                 mtime: float) -> None:
        self.state_dir = state_dir
        self.archive = archive
        self.task_counts = task_counts
        self.mtime = mtime

    @classmethod
    def load(cls, state_dir: str | Path) -> CoverageLookup:
        """Read the archive (and per-task counts if present) of ``state_dir``."""
        from structcover.tools.coverage.archive import ARCHIVE_FILE, load_archive

        state = Path(state_dir)
        path = state / ARCHIVE_FILE
        mtime = path.stat().st_mtime if path.exists() else 0.0
        archive = load_archive(state)
        counts: dict[str, dict[str, int]] = {}
        per_task = state / "task_bin_counts.json"
        if per_task.exists():
            try:
                raw = json.loads(per_task.read_text())
                counts = {str(t): {str(b): int(c) for b, c in bins.items()}
                          for t, bins in raw.items()}
            except (OSError, ValueError, AttributeError) as exc:
                raise ValueError(f"{per_task}: unreadable per-task counts: {exc}") from exc
        return cls(state_dir=state, archive=archive, task_counts=counts, mtime=mtime)

    def bin_count(self, values: dict[str, Any], task: str | None) -> tuple[str | None, int | None]:
        """The bin label of a feature dict and its count (per task when known).

        Returns:
            ``(label, count)``; ``(None, None)`` when the program cannot be binned.
        """
        if self.archive is None:
            return None, None
        row = pd.DataFrame([{f: values.get(f) for f in self.archive.features}])
        index = int(self.archive.index(row)[0])
        if index < 0:
            return None, None
        label = self.archive.label(index)
        if task is not None and task in self.task_counts:
            return label, self.task_counts[task].get(label, 0)
        self.archive._ensure()  # counts are sized lazily
        return label, int(self.archive.count[index])


_LOOKUPS: dict[str, CoverageLookup] = {}
_LOOKUP_LOCK = threading.Lock()


def _lookup(state_dir: str | Path) -> CoverageLookup:
    """A cached :class:`CoverageLookup`, reloaded when the archive file changes."""
    key = str(Path(state_dir).resolve())
    path = Path(key) / "archive.json"
    mtime = path.stat().st_mtime if path.exists() else 0.0
    with _LOOKUP_LOCK:
        cached = _LOOKUPS.get(key)
        if cached is None or cached.mtime != mtime:
            cached = CoverageLookup.load(key)
            _LOOKUPS[key] = cached
        return cached


def _trainer_score(data_source: str, solution_str: str, ground_truth: Any,
                   extra_info: dict[str, Any] | None, base_score: str | BaseScore | None) -> float:
    if extra_info and "score" in extra_info:
        return _score_value(extra_info["score"], "extra_info['score']")
    if base_score is None:
        raise ValueError("compute_score needs the trainer's score: pass extra_info['score'] or "
                         "reward_kwargs base_score='file.py:function'")
    fn = _load_callable(base_score) if isinstance(base_score, str) else base_score
    return _score_value(fn(data_source, solution_str, ground_truth, extra_info),
                        f"base_score {getattr(fn, '__name__', fn)!r}")


def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                  extra_info: dict[str, Any] | None = None, *,
                  base_score: str | BaseScore | None = None,
                  state_dir: str | Path | None = None,
                  coverage_weight: float = 0.0,
                  low_count: int = 3,
                  **_: Any) -> dict[str, Any]:
    """Score one rollout: the trainer's score, zeroed by a hard anti-hacking flag, plus a bonus.

    Args:
        data_source: verl's data source column (passed to ``base_score`` unchanged).
        solution_str: The model's decoded reply; the program is its last fenced code block.
        ground_truth: verl's ground truth (passed to ``base_score`` unchanged).
        extra_info: verl's extra info; ``score`` (a measured score) and ``task_id`` are read.
        base_score: The trainer's scoring function, or ``"file.py:func"`` / ``"module:func"``.
        state_dir: Campaign state holding the frozen archive (needed only for the bonus).
        coverage_weight: Bonus weight; 0 turns the coverage bonus off.
        low_count: Bins with fewer programs than this count as low (zero bins always do).

    Returns:
        ``{"score": float, "base_score": float, "hacking_flags": [...], "hacking_reason": str,
        "bin": str | None, "bin_count": int | None, "coverage_bonus": float}``.

    Raises:
        ValueError: No trainer score can be had, or the options are out of range.
    """
    if coverage_weight < 0:
        raise ValueError(f"coverage_weight must be >= 0, got {coverage_weight}")
    if low_count < 1:
        raise ValueError(f"low_count must be >= 1, got {low_count}")
    from structcover.tools.verify.hacking import hard_failures, run_checks

    base = _trainer_score(data_source, solution_str, ground_truth, extra_info, base_score)
    program = extract_program(solution_str)
    flags = hard_failures(run_checks(program))
    result: dict[str, Any] = {"score": base, "base_score": base,
                              "hacking_flags": [f.name for f in flags],
                              "hacking_reason": "; ".join(f"{f.name}: {f.reason}" for f in flags),
                              "bin": None, "bin_count": None, "coverage_bonus": 0.0}
    if flags:
        result["score"] = 0.0
        return result
    if coverage_weight > 0 and base > 0:
        if state_dir is None:
            raise ValueError("coverage_weight > 0 needs state_dir (the campaign state folder)")
        from structcover.tools.features.extract import extract_values

        task = (extra_info or {}).get("task_id")
        label, count = _lookup(state_dir).bin_count(extract_values(program),
                                                    None if task is None else str(task))
        result["bin"], result["bin_count"] = label, count
        if count is not None and count < low_count:
            result["coverage_bonus"] = coverage_weight / (1 + count)
            result["score"] = base + result["coverage_bonus"]
    return result


if __name__ == "__main__":  # where verl's custom_reward_function.path should point
    print(__file__)
