"""Coverage-gated curation export (docs/ARCHITECTURE.md, stage 5).

Weights: ``w_i ∝ 1 / (count(bin_i) + ε)``, normalized so that **the weights sum to N**, the
number of rows (mean weight 1, so an unweighted trainer sees the same effective data size).
Rows that cannot be binned form one pseudo-bin of their own. The resampled set draws N rows
with replacement with probability ``w_i / N``, seeded.

Every file is written atomically (temp file + rename): a reader never sees half a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from structcover.schema import TaskSpec
from structcover.tools.coverage.archive import Archive
from structcover.tools.data.atomic import atomic_dir, write_text
from structcover.tools.data.datasets import write_jsonl, write_parquet


def coverage_weights(bins: np.ndarray, *, eps: float = 1.0) -> np.ndarray:
    """``w_i = N · (1/(c_i+ε)) / Σ_j 1/(c_j+ε)`` where ``c_i`` is the count of row i's bin.

    Raises:
        ValueError: ``eps`` <= 0 (an empty bin's weight would be infinite at count 0).
    """
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    bins = np.asarray(bins, np.int64)
    if len(bins) == 0:
        return np.zeros(0)
    _, inverse, counts = np.unique(bins, return_inverse=True, return_counts=True)
    raw = 1.0 / (counts[inverse] + eps)
    return raw * (len(bins) / raw.sum())


def resample(table: pd.DataFrame, weights: np.ndarray, *, n: int | None = None,
             seed: int = 0) -> pd.DataFrame:
    """Draw ``n`` rows (default N) with replacement, probability proportional to weight."""
    if len(table) != len(weights):
        raise ValueError(f"{len(weights)} weights for {len(table)} rows")
    n = len(table) if n is None else n
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(table), size=n, replace=True, p=weights / weights.sum())
    return table.iloc[np.sort(pick)].reset_index(drop=True)


def write_hf_dataset(table: pd.DataFrame, folder: Path) -> Path:
    """A folder that ``datasets.load_from_disk`` reads (written beside, then renamed in)."""
    from datasets import Dataset
    from datasets.utils import logging as ds_logging

    def save(tmp: Path) -> None:
        # Tools never print: silence the library's progress bar, then restore its setting.
        was_on = ds_logging.is_progress_bar_enabled()
        ds_logging.disable_progress_bar()
        try:
            Dataset.from_pandas(table, preserve_index=False).save_to_disk(str(tmp))
        finally:
            if was_on:
                ds_logging.enable_progress_bar()

    return atomic_dir(folder, save)


def prompt_rows(gaps: list, tasks: list[str], archive: Archive, *, data_source: str =
                "structcover", max_prompts: int = 500,
                specs: dict[str, TaskSpec] | None = None) -> pd.DataFrame:
    """The verl-style prompt table: one row per (target gap bin, task), built by
    :func:`structcover.tools.curation.prompting.gap_to_rl_row` (the one gap-row builder).

    ``specs``: task specs the corpus does not hold (a campaign's KernelBench problems), so
    their rows ask for a ``ModelNew`` file against the problem, not for a generic ``.cu``."""
    from structcover.tools.curation.prompting import corpus_spec, gap_to_rl_row

    rows: list[dict[str, Any]] = []
    given = specs or {}
    found = {t: given.get(t) or corpus_spec(t) for t in tasks}
    for gap in gaps:
        if gap.kind not in ("zero", "low"):
            continue
        bounds = archive.describe_bin(gap.bin)
        for task in tasks:
            if len(rows) >= max_prompts:
                break
            rows.append(gap_to_rl_row(found[task] or task, gap.bin, bounds, index=len(rows),
                                      data_source=data_source, look_up=False,
                                      extra={"gap_kind": gap.kind,
                                             "priority": float(gap.priority)}))
    return pd.DataFrame(rows, columns=["data_source", "prompt", "ability", "reward_model",
                                       "extra_info"])


class CurationOutput(BaseModel):
    """Where the curated data went, and the weight normalization used."""

    out_dir: str
    rows: int
    resampled_rows: int
    weight_sum: float
    normalization: str = "weights sum to N (the number of rows); w ∝ 1/(count(bin)+eps)"
    eps: float
    files: dict[str, str]
    prompts: int


def export_curation(table: pd.DataFrame, archive: Archive, out_dir: Path, *, gaps: list,
                    diagnosis_json: str | None = None, eps: float = 1.0, seed: int = 0,
                    n_resample: int | None = None,
                    specs: dict[str, TaskSpec] | None = None) -> CurationOutput:
    """Write weighted data, a resampled set, a ``datasets`` folder, prompts and the diagnosis."""
    out = Path(out_dir)
    bins = archive.index(table)
    weighted = table.copy()
    weighted["bin"] = bins
    weighted["weight"] = coverage_weights(bins, eps=eps)
    sample = resample(weighted, weighted["weight"].to_numpy(), n=n_resample, seed=seed)
    prompts = prompt_rows(gaps, sorted(table["task_id"].astype(str).unique()), archive,
                          specs=specs)
    files = {"weighted_parquet": write_parquet(weighted, out / "weighted.parquet"),
             "weighted_jsonl": write_jsonl(weighted, out / "weighted.jsonl"),
             "resampled_parquet": write_parquet(sample, out / "resampled.parquet"),
             "hf_dataset": write_hf_dataset(weighted, out / "hf_dataset"),
             "prompts_parquet": write_parquet(prompts, out / "prompts.parquet")}
    if diagnosis_json is not None:
        files["diagnosis_json"] = write_text(diagnosis_json, out / "diagnosis.json")
    return CurationOutput(out_dir=str(out), rows=len(weighted), resampled_rows=len(sample),
                          weight_sum=float(weighted["weight"].sum()), eps=eps,
                          files={k: str(v) for k, v in files.items()}, prompts=len(prompts))
