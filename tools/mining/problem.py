"""Discovery's first steps: from a feature table to what every estimate of one run shares.

:func:`prepare_table` keeps the usable rows (correct, with a valid target), separates the
candidate features from the meta features and resolves the controls; :func:`build_problem`
normalizes R_perf per slice (all programs, CUDA programs only), encodes the candidates, drops
exact duplicates and fixes the cells the selection target was normalized in. The procedure that
measures, calibrates and selects on the result is :func:`structcover.tools.mining.discover.discover`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from structcover.tools.mining import table as T
from structcover.tools.mining.association import Column

#: Meta features: how the pipeline saw the program, not its structure; never candidates.
META_PREFIXES: tuple[str, ...] = ("parse.",)
META_NAMES: frozenset[str] = frozenset({"compile.ok", "compile.missing_reason",
                                        "compile.error"})
#: Least number of usable rows discovery runs on.
MIN_USABLE_ROWS = 20

#: A resolved control: its name, how it enters the residualization, its values per row.
Control = tuple[str, Literal["cat", "num"], np.ndarray]
#: Normalized R_perf per slice (``all``, ``cuda``) and kind (``mi``, ``mi_pooled``,
#: ``mi_controlled``).
Targets = dict[str, dict[str, np.ndarray]]


def is_meta(name: str) -> bool:
    """Whether ``name`` is a meta feature (never a discovery candidate)."""
    return name in META_NAMES or name.startswith(META_PREFIXES)


@dataclass
class Prepared:
    """The table's usable rows, its candidate features and its resolved controls.

    Attributes:
        frame: Rows kept (correct when asked, with a valid target), re-indexed from 0.
        raw: The target of each kept row, before normalization (log speedup, ...).
        dropped: Rows dropped, by reason.
        names: Candidate features (no meta feature, no control, not the length source).
        meta: Meta features present in the table (reported, never candidates).
        round: The round the table comes from, when known.
        controls: The controls resolved to arrays.
        missing: Controls asked for but not available (the length control without a length).
        length_source: The column code length was taken from, when length is a control.
    """

    frame: pd.DataFrame
    raw: np.ndarray
    dropped: dict[str, int]
    names: list[str]
    meta: list[str]
    round: int | None
    controls: list[Control]
    missing: list[str]
    length_source: str | None

    @property
    def used(self) -> list[str]:
        """Names of the controls in use."""
        return [c[0] for c in self.controls]


@dataclass
class Problem:
    """What every MI estimate, null and selection of one discovery run shares.

    Attributes:
        columns: Candidate columns after exact duplicates are dropped (the ones measured).
        everything: Every candidate column, duplicates included (the ones reported).
        applies: Per feature, the slice it is measured on (``all`` or ``cuda``).
        duplicate_of: Per dropped duplicate, the column it repeats.
        targets: Normalized R_perf per slice and kind.
        tasks: Task code per row.
        usable: Rows with a normalized target (correct, valid, not alone in their task).
        cells: The cells the selection target was normalized in (task, or task x controls).
        numeric: Numeric controls the selection target was residualized on, column-stacked.
        key: The target kind F* is selected on (``mi_controlled`` with controls, else ``mi``).
        tier_key: The target kind tiers are judged on (controlled only for user controls).
        shuffle_in: Groups the permutation null shuffles within (None when pooled).
        seed: Seeds subsampling, resampling and the estimator.
        n_jobs: Threads for the MI estimates (0 or 1: sequential, measured fastest).
        min_gain: Out-of-fold information a candidate must add to enter F*.
    """

    columns: list[Column]
    everything: list[Column]
    applies: dict[str, str]
    duplicate_of: dict[str, str]
    targets: Targets
    tasks: np.ndarray
    usable: np.ndarray
    cells: np.ndarray
    numeric: np.ndarray | None
    key: str
    tier_key: str
    shuffle_in: np.ndarray | None
    seed: int
    n_jobs: int
    min_gain: float


def usable_rows(table: pd.DataFrame, target: str, correct_only: bool
                ) -> tuple[pd.DataFrame, np.ndarray, dict[str, int]]:
    """Rows that can be measured: correct (when asked) and with a valid target.

    Returns:
        The kept rows (re-indexed), their raw target, and how many rows each reason dropped.

    Raises:
        ValueError: The table has no ``task_id`` column, or no ``target`` column.
    """
    if "task_id" not in table.columns:
        raise ValueError("feature table has no 'task_id' column (R_perf is normalized per task)")
    dropped: dict[str, int] = {}
    frame = table
    if correct_only and "correct" in frame.columns:
        ok = frame["correct"].fillna(False).astype(bool).to_numpy()
        dropped["incorrect"] = int((~ok).sum())
        frame = frame[ok]
    raw = T.reward(frame, target)
    bad = np.isnan(raw)
    dropped[f"no valid {target}"] = int(bad.sum())
    return frame[~bad].reset_index(drop=True), raw[~bad], dropped


def resolve_controls(frame: pd.DataFrame, controls: tuple[str, ...], length_control: bool
                     ) -> tuple[list[Control], list[str], str | None]:
    """Resolve the controls to arrays: (name, kind, values); missing ones; the length source.

    Raises:
        ValueError: A control column the table does not have.
    """
    specs: list[Control] = []
    missing: list[str] = []
    names = list(dict.fromkeys(controls))
    source = None
    if length_control and T.LENGTH_CONTROL not in names:
        names.append(T.LENGTH_CONTROL)
    for name in names:
        if name == T.LENGTH_CONTROL:
            source, length = T.code_length(frame)
            if length is None:
                missing.append(name)
                continue
            # Length effects are multiplicative, like speedups: control on log length.
            specs.append((name, "num", np.log1p(length)))
        elif name not in frame.columns:
            raise ValueError(f"control column {name!r} is not in the table")
        elif T.is_categorical(frame[name]) or frame[name].nunique() <= 20:
            specs.append((name, "cat", T.group_codes(frame, [name])))
        else:
            specs.append((name, "num",
                          pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)))
    return specs, missing, source


def prepare_table(table: pd.DataFrame, *, target: str, correct_only: bool,
                  controls: tuple[str, ...], length_control: bool, round: int | None
                  ) -> Prepared:
    """Step 1: the candidate features, the usable rows and the controls of ``table``.

    Raises:
        ValueError: No feature columns, no task column, a missing target or control.
    """
    names = [c for c in T.feature_columns(table) if c not in controls]
    meta = [c for c in names if is_meta(c)]
    names = [c for c in names if not is_meta(c)]
    if not names:
        raise ValueError("feature table has no feature columns (names containing a dot)")
    frame, raw, dropped = usable_rows(table, target, correct_only)
    if round is None and "round" in table.columns and table["round"].notna().any():
        round = int(pd.to_numeric(table["round"]).max())
    specs, missing, length_source = resolve_controls(frame, controls, length_control)
    if length_source in names:
        names.remove(length_source)  # a control is not also a candidate feature
    return Prepared(frame=frame, raw=raw, dropped=dropped, names=names, meta=meta, round=round,
                    controls=specs, missing=missing, length_source=length_source)


def normalized_targets(prep: Prepared, tasks: np.ndarray, cuda: np.ndarray,
                       within_task: bool) -> Targets:
    """R_perf per slice: CUDA features are compared only among CUDA programs of a task.

    Each slice has ``mi`` (z-scored within task, or pooled when ``within_task`` is false),
    ``mi_pooled`` and, with controls, ``mi_controlled`` (``mi`` residualized on them).
    """
    ones = np.zeros(len(prep.frame), dtype=np.int64)
    cat = [c[2] for c in prep.controls if c[1] == "cat"]
    num = [c[2] for c in prep.controls if c[1] == "num"]
    targets: Targets = {}
    for sl, mask in (("all", np.ones(len(prep.frame), dtype=bool)), ("cuda", cuda)):
        r = np.where(mask, prep.raw, np.nan)
        within, pooled = T.zscore_within(r, tasks), T.zscore_within(r, ones)
        primary = within if within_task else pooled
        targets[sl] = {"mi": primary, "mi_pooled": pooled}
        if prep.controls:
            targets[sl]["mi_controlled"] = T.residualize(
                primary, tasks if within_task else ones, cat, num)
    return targets


def encode_candidates(frame: pd.DataFrame, names: list[str], cuda: np.ndarray
                      ) -> tuple[list[Column], dict[str, str]]:
    """Encode each candidate as a column, and the slice it is measured on.

    A CUDA feature is measured among CUDA programs only (unless every program is CUDA, which
    makes one slice): on other programs it is not applicable (NaN), never a zero.
    """
    columns, applies = [], {}
    for name in names:
        values, discrete = T.encode(frame[name])
        applies[name] = "cuda" if T.is_cuda_feature(name) and not cuda.all() else "all"
        if applies[name] == "cuda":
            values = np.where(cuda, values, np.nan)
        columns.append(Column(name, values, discrete))
    return columns, applies


def dedupe(columns: list[Column], applies: dict[str, str], usable: np.ndarray
           ) -> tuple[list[Column], dict[str, str]]:
    """Drop columns that order the usable rows exactly like an earlier one.

    Kernel and launch counts on one-kernel programs are an example: same information, so they
    are measured once and never compete with each other in F* or split its stability.

    Returns:
        The kept columns, and per dropped column the kept one it repeats.
    """
    seen: dict[tuple, str] = {}
    kept, duplicate_of = [], {}
    for col in columns:
        x = col.values[usable]
        _, ranks = np.unique(np.nan_to_num(x, nan=np.inf), return_inverse=True)
        key = (applies[col.name], col.discrete, ranks.astype(np.int64).tobytes())
        if key in seen:
            duplicate_of[col.name] = seen[key]
        else:
            seen[key] = col.name
            kept.append(col)
    return kept, duplicate_of


def build_problem(prep: Prepared, *, target: str, within_task: bool, seed: int, n_jobs: int,
                  min_gain: float) -> Problem:
    """Step 2: normalize the targets, encode and dedupe the candidates.

    Adds the rows alone in their task to ``prep.dropped``.

    Raises:
        ValueError: Fewer than :data:`MIN_USABLE_ROWS` usable rows.
    """
    frame = prep.frame
    tasks = T.group_codes(frame, ["task_id"])
    cuda = T.cuda_mask(frame)
    targets = normalized_targets(prep, tasks, cuda, within_task)
    # Cells (and numeric controls) the selection target was normalized in, for redundancy.
    base = tasks if within_task else np.zeros(len(frame), dtype=np.int64)
    cat = [c[2] for c in prep.controls if c[1] == "cat"]
    num = [c[2] for c in prep.controls if c[1] == "num"]
    usable = ~np.isnan(targets["all"]["mi"])
    prep.dropped["alone in its task"] = int((~usable & ~np.isnan(prep.raw)).sum())
    if usable.sum() < MIN_USABLE_ROWS:
        raise ValueError(f"only {int(usable.sum())} usable rows (correct, valid {target}, "
                         f"in a task with another program); discovery needs at least "
                         f"{MIN_USABLE_ROWS}")
    everything, applies = encode_candidates(frame, prep.names, cuda)
    columns, duplicate_of = dedupe(everything, applies, usable)
    used = prep.used
    # Tiers follow the controls the user asked for; the automatic length control shapes F*
    # (what structure adds beyond length) but not the tiers.
    user_controls = [c for c in used if c != T.LENGTH_CONTROL]
    return Problem(
        columns=columns, everything=everything, applies=applies, duplicate_of=duplicate_of,
        targets=targets, tasks=tasks, usable=usable,
        cells=T.cells_of(base, cat) if used else base,
        numeric=np.column_stack(num) if used and num else None,
        key="mi_controlled" if used else "mi",
        tier_key="mi_controlled" if used and user_controls else "mi",
        shuffle_in=tasks if within_task else None, seed=seed, n_jobs=n_jobs, min_gain=min_gain)
