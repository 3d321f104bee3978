"""Predictors of the ranking protocol (:mod:`.ranking`): feature columns, the trivial baselines
(code length, kernel count, bag of tokens, identity of the policy) and their design matrices.

Features are standardized within group (a missing value sits at its group mean); ordered
patterns (``structure.ORDINAL``: reuse, intensity, vector width, tensor cores) become their
rank; other categorical features become one-hot columns of their most common levels; the
token baseline is a hashed bag of code tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer

from structcover.tools.features.structure import ORDINAL
from structcover.tools.mining import table as T

#: Code tokens for the bag-of-tokens baseline: identifiers, numbers, single punctuation.
TOKEN_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]"
HASH_FEATURES = 2**14
MAX_LEVELS = 32


@dataclass
class PredictorSpec:
    """A predictor: feature columns, named baselines, or columns chosen per fold.

    ``baselines`` holds ``length``, ``kernels``, ``tokens`` or ``identity:<column>``.
    ``select`` receives the training rows and returns feature columns, so a feature
    selection (F*) never sees the test tasks.
    """

    name: str
    columns: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)
    select: Callable[[pd.DataFrame], list[str]] | None = None


def _standardize(mat: np.ndarray, groups: np.ndarray) -> np.ndarray:
    df = pd.DataFrame(mat)
    g = df.groupby(groups)
    mean, std = g.transform("mean"), g.transform("std", ddof=0)
    out = ((df - mean) / std.where(std > 0, 1.0)).to_numpy(dtype=float)
    return np.nan_to_num(out)  # a missing or not-applicable value sits at its group mean


def _dense(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    parts = []
    for name in columns:
        series = frame[name]
        if name in ORDINAL:
            # An ordered pattern is one rank column (a level outside the order is missing):
            # the fit can place a level the training tasks never reached.
            rank = {level: float(i) for i, level in enumerate(ORDINAL[name])}
            parts.append(series.astype("string").map(rank).astype(float).to_numpy()[:, None])
        elif T.is_categorical(series):
            top = series.astype("string").value_counts().index[:MAX_LEVELS]
            parts.append(np.stack([(series.astype("string") == lv).fillna(False).to_numpy()
                                   for lv in top], 1).astype(float) if len(top) else
                         np.zeros((len(frame), 0)))
        else:
            parts.append(pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)[:, None])
    return np.hstack(parts) if parts else np.zeros((len(frame), 0))


def _baseline(frame: pd.DataFrame, name: str) -> np.ndarray | sp.csr_matrix:
    if name == "length":
        _, length = T.code_length(frame)
        if length is None:
            raise ValueError("the length baseline needs a length column or program text")
        return np.log1p(length)[:, None]
    if name == "kernels":
        if "kernel.count" in frame.columns:
            return pd.to_numeric(frame["kernel.count"], errors="coerce").to_numpy(float)[:, None]
        text = frame["program"].fillna("").astype(str)
        return text.map(lambda s: len(re.findall(r"__global__", s))).to_numpy(float)[:, None]
    if name == "tokens":
        vec = HashingVectorizer(n_features=HASH_FEATURES, token_pattern=TOKEN_PATTERN,
                                lowercase=False, alternate_sign=False, norm="l2")
        return vec.transform(frame["program"].fillna("").astype(str))
    if name.startswith("identity:"):
        return _dense(frame, [name.split(":", 1)[1]])
    raise ValueError(f"unknown baseline {name!r}")


def available_baselines(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Baselines this table supports, and notes on those it cannot."""
    have, notes = [], []
    if T.code_length(frame)[1] is not None:
        have.append("length")
    else:
        notes.append("code length baseline skipped: no program text or length column")
    if "kernel.count" in frame.columns or "program" in frame.columns:
        have.append("kernels")
    else:
        notes.append("kernel-count baseline skipped: no program text or kernel.count column")
    if "program" in frame.columns:
        have.append("tokens")
    else:
        notes.append("bag-of-tokens baseline skipped: no program text")
    ident = [c for c in T.IDENTITY_COLUMNS if c in frame.columns and frame[c].nunique() > 1]
    if ident:
        have.append(f"identity:{ident[0]}")
    else:
        notes.append("identity baseline skipped: no policy/model/source column with 2+ values")
    return have, notes


def standard_specs(frame: pd.DataFrame, f_star: list[str] | None = None,
                   select: Callable[[pd.DataFrame], list[str]] | None = None, *,
                   name: str = "F*") -> tuple[list[PredictorSpec], list[str]]:
    """The issue-8 rows: each baseline, F* (or ``name``), and F* plus each baseline."""
    base, notes = available_baselines(frame)
    specs = [PredictorSpec(name=b, baselines=[b]) for b in base]
    fs = list(f_star or [])
    specs.append(PredictorSpec(name=name, columns=fs, select=select))
    specs += [PredictorSpec(name=f"{name} + {b}", columns=fs, baselines=[b], select=select)
              for b in base]
    return specs, notes


def design(frame: pd.DataFrame, spec: PredictorSpec, columns: list[str], groups: np.ndarray
           ) -> np.ndarray | sp.csr_matrix:
    """The design matrix of ``spec`` on ``frame``: its ``columns`` and its baselines, each
    standardized within ``groups`` (sparse when a baseline is)."""
    dense = _dense(frame, columns)
    parts: list = [_standardize(dense, groups)] if dense.shape[1] else []
    for b in spec.baselines:
        m = _baseline(frame, b)
        parts.append(m if sp.issparse(m) else _standardize(m, groups))
    if not parts:
        return np.zeros((len(frame), 0))
    if any(sp.issparse(p) for p in parts):
        return sp.hstack([sp.csr_matrix(p) for p in parts]).tocsr()
    return np.hstack(parts)
