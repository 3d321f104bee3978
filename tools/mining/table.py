"""Prepare a feature table for discovery: columns, slices, the reward R_perf and controls.

A feature table has one row per program (or trajectory): ``program_id``, ``task_id``,
optionally ``round``, ``correct``, ``speedup``, ``runtime_ms``, identity columns
(``policy``/``model``/``source``), ``program`` text, and feature columns whose names contain a
dot. Bool/str/category columns are categorical; numeric ones are continuous.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Feature families that describe any program, whatever its language. Every other dotted
#: column is a CUDA measurement and does not apply to Triton / CuTe / PyTorch programs.
LANGUAGE_AGNOSTIC_PREFIXES: tuple[str, ...] = ("program.", "code.", "task.")
#: Column naming a program's language, written by feature extraction.
LANGUAGE_COLUMN = "program.language"
#: Columns that may already hold the code length, in order of preference.
LENGTH_COLUMNS: tuple[str, ...] = ("code.length", "program.bytes", "program.length",
                                   "code.bytes")
#: The name under which discovery reports the default length control.
LENGTH_CONTROL = "length"
#: Identity columns naming who wrote a program (the trivial explanation to beat).
IDENTITY_COLUMNS: tuple[str, ...] = ("policy", "model", "source")


def feature_columns(frame: pd.DataFrame) -> list[str]:
    """Return the feature columns of ``frame``: every column whose name contains a dot."""
    return [c for c in frame.columns if isinstance(c, str) and "." in c]


def is_categorical(series: pd.Series) -> bool:
    """True for bool, string, object and category columns (a discrete MI mask entry)."""
    return bool(pd.api.types.is_bool_dtype(series) or pd.api.types.is_object_dtype(series)
                or isinstance(series.dtype, pd.CategoricalDtype)
                or pd.api.types.is_string_dtype(series))


def is_cuda_feature(name: str) -> bool:
    """True when feature ``name`` measures CUDA code (so it does not apply to other languages)."""
    return not name.startswith(LANGUAGE_AGNOSTIC_PREFIXES)


def cuda_mask(frame: pd.DataFrame) -> np.ndarray:
    """Rows whose program is CUDA; every row when the table has no language column."""
    if LANGUAGE_COLUMN not in frame.columns:
        return np.ones(len(frame), dtype=bool)
    lang = frame[LANGUAGE_COLUMN].astype("string").str.lower().fillna("unknown")
    return (lang == "cuda").to_numpy()


def language_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Rows per program language ({"cuda": n} when the table has no language column)."""
    if LANGUAGE_COLUMN not in frame.columns:
        return {"cuda": len(frame)}
    lang = frame[LANGUAGE_COLUMN].astype("string").str.lower().fillna("unknown")
    return {str(k): int(v) for k, v in lang.value_counts().sort_index().items()}


def encode(series: pd.Series) -> tuple[np.ndarray, bool]:
    """Encode a feature as floats for the MI estimator; NaN marks a missing value.

    Categoricals become integer codes (the estimator only needs equality of levels).

    Returns:
        The values and whether the feature is discrete.
    """
    if is_categorical(series):
        codes, _ = pd.factorize(series, use_na_sentinel=True)
        values = codes.astype(float)
        values[codes < 0] = np.nan
        return values, True
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float), False


def code_length(frame: pd.DataFrame) -> tuple[str | None, np.ndarray | None]:
    """The code length per row: a length column when present, else UTF-8 bytes of ``program``.

    Returns:
        (where it came from, lengths) or (None, None) when the table has neither.
    """
    for name in LENGTH_COLUMNS:
        if name in frame.columns:
            return name, pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
    if "program" in frame.columns:
        text = frame["program"].fillna("").astype(str)
        return "program (UTF-8 bytes)", text.map(lambda s: len(s.encode("utf-8"))).to_numpy(
            dtype=float)
    return None, None


def reward(frame: pd.DataFrame, target: str) -> np.ndarray:
    """The raw performance signal: log speedup, minus log runtime, or the column as given.

    Log because speedups multiply (2x faster is as far above 1x as 0.5x is below it).
    Non-positive speedups or runtimes have no logarithm and come back as NaN.

    Raises:
        ValueError: ``target`` is not a column of the table.
    """
    if target not in frame.columns:
        raise ValueError(f"target column {target!r} is not in the table "
                         f"(columns: {sorted(map(str, frame.columns))[:20]})")
    values = pd.to_numeric(frame[target], errors="coerce").to_numpy(dtype=float)
    if target in ("speedup", "runtime_ms"):
        with np.errstate(divide="ignore", invalid="ignore"):
            logged = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), np.nan)
        return -logged if target == "runtime_ms" else logged
    return values


def group_codes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """One integer per distinct combination of ``columns`` (NaN is its own level)."""
    if not columns:
        return np.zeros(len(frame), dtype=np.int64)
    codes, _ = pd.factorize(pd.MultiIndex.from_frame(frame[columns].astype("string")
                                                     .fillna("<NA>")))
    return codes.astype(np.int64)


def zscore_within(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Z-score ``values`` within each group; groups of fewer than two valid rows give NaN.

    A group with one program says nothing about what makes programs of that task faster, so
    its row is dropped rather than set to 0. A group whose values are all equal gives 0.
    """
    s = pd.Series(values)
    grouped = s.groupby(groups)
    mean = grouped.transform("mean")
    std = grouped.transform("std", ddof=0)
    count = grouped.transform("count")
    z = ((s - mean) / std.where(std > 0, 1.0)).to_numpy(dtype=float, copy=True)
    z[(count < 2).to_numpy()] = np.nan
    return z


def residualize(values: np.ndarray, groups: np.ndarray, categorical: list[np.ndarray],
                numeric: list[np.ndarray]) -> np.ndarray:
    """Remove what the controls explain of ``values`` within each group (fixed effects).

    Categorical controls define cells within the group (task x policy …) and their cell mean
    is subtracted; numeric controls are then regressed out with one pooled slope on the
    within-cell deviations (Frisch-Waugh). Rows alone in their cell, or with a missing
    control, give NaN: nothing is left to compare them with.
    """
    keys = [groups] + categorical
    cell = pd.MultiIndex.from_arrays(keys).factorize()[0] if len(keys) > 1 else groups
    frame = pd.DataFrame({"y": values, "cell": cell})
    for i, col in enumerate(numeric):
        frame[f"x{i}"] = col
    frame.loc[frame.drop(columns="cell").isna().any(axis=1), "y"] = np.nan
    cols = ["y"] + [f"x{i}" for i in range(len(numeric))]
    valid = frame["y"].notna()
    means = frame[valid].groupby("cell")[cols].transform("mean")
    dev = frame.loc[valid, cols] - means
    counts = frame[valid].groupby("cell")["y"].transform("count")
    out = np.full(len(values), np.nan)
    y = dev["y"].to_numpy(dtype=float, copy=True)
    if numeric:
        x = dev[cols[1:]].to_numpy()
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        y = y - x @ beta
    y[(counts < 2).to_numpy()] = np.nan
    out[valid.to_numpy()] = y
    return out


def cells_of(groups: np.ndarray, categorical: list[np.ndarray]) -> np.ndarray:
    """One code per (group, categorical controls...) cell."""
    if not categorical:
        return groups
    return pd.MultiIndex.from_arrays([groups] + categorical).factorize()[0].astype(np.int64)


def fe_residual(mat: np.ndarray, cells: np.ndarray, numeric: np.ndarray | None) -> np.ndarray:
    """Columns of ``mat`` with cell means and a pooled linear fit on ``numeric`` removed.

    Used on feature blocks so the redundancy test compares features within the same cells
    (task, or task x control levels) that R_perf was normalized or residualized in
    (Frisch-Waugh: residualize both sides, not only the target).
    """
    out = mat - _cell_means(mat, cells)
    if numeric is not None and numeric.shape[1]:
        q = numeric - _cell_means(numeric, cells)
        beta, *_ = np.linalg.lstsq(q, out, rcond=None)
        out = out - q @ beta
    return out


def _cell_means(mat: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Per row, the mean of its cell, column by column (numpy bincount: pandas' groupby
    transform costs ~10 ms a call, and forward selection makes thousands)."""
    codes, inv = np.unique(cells, return_inverse=True)
    n = np.bincount(inv, minlength=len(codes)).astype(float)
    sums = np.stack([np.bincount(inv, weights=mat[:, j], minlength=len(codes))
                     for j in range(mat.shape[1])], axis=1) if mat.shape[1] else \
        np.zeros((len(codes), 0))
    return (sums / n[:, None])[inv]
