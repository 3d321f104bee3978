"""The one reader of tables and rollouts for every command (discover, diagnose, curate,
rank-eval, campaign).

A *feature table* (columns named ``family.feature``) or a plain table such as a label file is
read as it is. Anything else is rollouts: it goes through ``tools/data/datasets.py``'s
``load_trajectories``, which normalizes the columns (``--map program=custom_code``), decodes
the sources with the shared decode step and quarantines bad rows with their line numbers;
the structural features of the programs are then extracted.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from structcover.tools.data.datasets import (
    ALIASES,
    DatasetError,
    LoadResult,
    load_trajectories,
)
from structcover.tools.mining.table import feature_columns

#: Suffixes read as tables by pandas (a JSONL rollout file with a bad line falls back to the
#: row-by-row loader, which quarantines that line instead of failing the whole file).
TABLE_SUFFIXES = (".parquet", ".csv", ".jsonl", ".json")


def _read_frame(path: Path) -> pd.DataFrame:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix == ".csv":
        return pd.read_csv(path)
    return pd.read_json(path, lines=suffix == ".jsonl")


def _is_rollouts(frame: pd.DataFrame, column_map: dict[str, str]) -> bool:
    if feature_columns(frame):
        return False
    names = set(frame.columns)
    program_names = {column_map.get("program", ""), *ALIASES["program"]}
    return bool(names & program_names)


def read_table(path: Path | str, *, column_map: dict[str, str] | None = None,
               extract: bool = True) -> LoadResult:
    """Read a feature table, a plain table or rollouts.

    Args:
        path: Parquet, CSV, JSONL/JSON, a saved HF dataset, ``.cu``/``.py`` files or a folder.
        column_map: Normalized field -> input column (``--map``), for rollouts.
        extract: Extract structural features from rollouts' programs.

    Returns:
        The rows and the quarantined rows (line numbers and reasons) of rollout inputs.

    Raises:
        ValueError: The input as a whole cannot be read (the message names it).
    """
    path = Path(path)
    column_map = column_map or {}
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    if path.is_file() and path.suffix.lower() in TABLE_SUFFIXES:
        try:
            frame = _read_frame(path)
        except ValueError:
            if path.suffix.lower() not in (".jsonl", ".json"):
                raise ValueError(f"{path}: cannot read as a table") from None
            frame = None  # a malformed JSON line: the row-by-row loader quarantines it
        except OSError as exc:
            raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        if frame is not None and not _is_rollouts(frame, column_map):
            return LoadResult(frame)
    try:
        result = load_trajectories(path, column_map=column_map)
    except DatasetError as exc:
        raise ValueError(str(exc)) from exc
    if extract and len(result.records) and "program" in result.records.columns:
        result.records = with_features(result.records)
    return result


def with_features(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the structural features of its ``program`` column joined on."""
    # Imported lazily: extraction pulls in tree-sitter, which a feature table never needs.
    from structcover.schema import content_hash
    from structcover.tools.features.extract import extract_table

    frame = frame.copy()
    if "program_id" not in frame.columns:
        frame["program_id"] = frame["program"].fillna("").astype(str).map(content_hash)
    unique = frame.drop_duplicates("program_id")
    feats = extract_table(list(zip(unique["program_id"], unique["program"].fillna("").astype(str),
                                   strict=True)))
    return frame.merge(feats, on="program_id", how="left")
