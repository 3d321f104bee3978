"""Dataset IO: read rollouts in many shapes into one normalized table, quarantine bad rows.

Readers: JSONL, Parquet, Hugging Face ``datasets`` saved to disk, folders of ``.cu`` files and
KernelBench-style Python files with inline CUDA strings. A column map reads other schemas
(``{"program": "custom_code", "speedup": "score_default"}``). Bad rows never stop the load:
each goes to the quarantine list with its row number and reason.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from structcover.schema import content_hash
from structcover.tools.data.atomic import atomic_write
from structcover.tools.data.kernelbench import extract_cuda_sources
from structcover.tools.data.text import decode_source

_TRITON_KERNEL = re.compile(r"@(?:triton\.)?jit\b")

#: Columns of the normalized record, in order.
RECORD_COLUMNS = ["program_id", "task_id", "prompt", "program", "correct", "speedup",
                  "runtime_ms", "round", "reward_source", "source_file", "meta"]

#: Normalized name -> accepted aliases found in common rollout files.
ALIASES: dict[str, tuple[str, ...]] = {
    "program": ("program", "code", "completion", "response", "custom_code", "kernel", "source"),
    "prompt": ("prompt", "question", "instruction"),
    "task_id": ("task_id", "task", "problem_id", "level_problem"),
    "correct": ("correct", "is_correct", "correctness", "passed"),
    "speedup": ("speedup", "score", "reward_speedup"),
    "runtime_ms": ("runtime_ms", "runtime", "time_ms"),
    "round": ("round", "epoch", "policy_step", "step"),
    "id": ("id", "uid", "sample_id"),
}

DEFAULT_MAX_FIELD_BYTES = 4_000_000


class DatasetError(ValueError):
    """A whole input cannot be read (missing file, unknown format, unreadable container)."""


@dataclass
class QuarantinedRow:
    """A row that was not loaded, and why."""

    source: str
    row: int
    reason: str
    id: str | None = None


@dataclass
class LoadResult:
    """Records that loaded, and rows that were quarantined."""

    records: pd.DataFrame
    quarantined: list[QuarantinedRow] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, int]:
        """Counts for the command's summary."""
        return {"loaded": len(self.records), "quarantined": len(self.quarantined)}


def parse_column_map(items: list[str] | None) -> dict[str, str]:
    """Parse ``["program=custom_code", "speedup=score"]`` into a mapping.

    Raises:
        ValueError: An item is not ``normalized=source``.
    """
    mapping: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"column map item {item!r} must look like normalized=source_column")
        if key.strip() not in ALIASES and key.strip() not in RECORD_COLUMNS:
            raise ValueError(f"column map item {item!r}: unknown field {key.strip()!r}; "
                             f"known: {sorted(set(ALIASES) | set(RECORD_COLUMNS))}")
        mapping[key.strip()] = value.strip()
    return mapping


def _pick(row: dict[str, Any], name: str, column_map: dict[str, str]) -> Any:
    if name in column_map:
        return row.get(column_map[name])
    for alias in ALIASES.get(name, (name,)):
        if alias in row and row[alias] is not None:
            return row[alias]
    return None


def _as_bool(value: Any) -> bool | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise ValueError(f"expected a boolean, got {value!r}")


def _as_float(value: Any, name: str) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{name}: expected a number, got {type(value).__name__}")
    try:
        number = float(value)
    except ValueError as exc:
        raise ValueError(f"{name}: expected a number, got {value!r}") from exc
    if math.isnan(number):
        return None
    if number < 0 or math.isinf(number):
        raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
    return number


def normalize_row(row: dict[str, Any], column_map: dict[str, str], *, source: str,
                  default_round: int = 0, max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
                  ) -> dict[str, Any]:
    """Turn one raw row into a normalized record.

    Raises:
        ValueError: The row cannot be a record; the message is the quarantine reason.
    """
    for key, value in row.items():
        if isinstance(value, str | bytes) and len(value) > max_field_bytes:
            raise ValueError(f"field {key!r} is {len(value)} bytes (limit {max_field_bytes})")
    program = _pick(row, "program", column_map)
    if isinstance(program, bytes):
        # Not UTF-8 is no reason to drop a program nvcc compiles: fall back to cp1252 /
        # Latin-1 and say so in `source_encoding` (features report it as parse.encoding).
        program, encoding = decode_source(program)
        if encoding != "utf-8":
            row = {**row, "source_encoding": encoding}
    if program is None or (isinstance(program, str) and not program.strip()):
        raise ValueError("missing program")
    if not isinstance(program, str):
        raise ValueError(f"program: expected text, got {type(program).__name__}")
    task_id = _pick(row, "task_id", column_map)
    round_value = _pick(row, "round", column_map)
    try:
        round_number = default_round if round_value is None else int(round_value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"round: expected an integer, got {round_value!r}") from exc
    # Columns the record does not name stay with it: scalars as their own columns (so a
    # `policy` or `gpu` column can be a control or a group later), the rest as JSON in `meta`.
    used = {column_map.get(n, n) for n in ALIASES} | set(column_map.values()) | {
        alias for aliases in ALIASES.values() for alias in aliases}
    extra = {k: v for k, v in row.items() if k not in used and not k.startswith("__")
             and k not in RECORD_COLUMNS}
    scalars = {k: v for k, v in extra.items() if isinstance(v, str | int | float | bool)}
    meta = {k: v for k, v in extra.items() if k not in scalars}
    return {
        **scalars,
        "program_id": content_hash(program),
        "task_id": "" if task_id is None else str(task_id),
        "prompt": str(_pick(row, "prompt", column_map) or ""),
        "program": program,
        "correct": _as_bool(_pick(row, "correct", column_map)),
        "speedup": _as_float(_pick(row, "speedup", column_map), "speedup"),
        "runtime_ms": _as_float(_pick(row, "runtime_ms", column_map), "runtime_ms"),
        "round": round_number,
        "reward_source": str(row.get("reward_source") or "given"),
        "source_file": source,
        "meta": json.dumps(meta, default=str, sort_keys=True) if meta else "",
        "_row_id": None if (row_id := _pick(row, "id", column_map)) is None else str(row_id),
    }


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Yield (line number, row) or (line number, error reason) for each non-empty line."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            text, encoding = decode_source(raw)
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, f"invalid JSON: {exc.msg}"
                continue
            if isinstance(row, dict) and encoding != "utf-8":
                row["source_encoding"] = encoding
            yield number, (row if isinstance(row, dict)
                           else f"expected an object, got {type(row).__name__}")


def _iter_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    number = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            number += 1
            yield number, row


def _iter_hf(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    import datasets

    loaded = datasets.load_from_disk(str(path))
    if isinstance(loaded, datasets.DatasetDict):
        loaded = loaded[next(iter(loaded))]
    for number, row in enumerate(loaded, start=1):
        yield number, dict(row)


def _iter_sources(paths: list[Path], root: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    for number, path in enumerate(paths, start=1):
        text, encoding = decode_source(path.read_bytes())
        rel = str(path.relative_to(root)) if path != root else path.name
        extra = {"source_encoding": encoding} if encoding != "utf-8" else {}
        if path.suffix == ".py":
            found = extract_cuda_sources(text)
            if not found and _TRITON_KERNEL.search(text):
                # A Triton program is read whole: its kernels are Python (features/triton_*).
                yield number, {"program": text, "task_id": path.stem, "file": rel, **extra}
                continue
            if not found:
                yield number, f"{path.name}: no inline CUDA source found"
                continue
            yield number, {"program": "\n\n".join(found), "task_id": path.stem, "file": rel,
                           **extra}
        else:
            yield number, {"program": text, "task_id": path.stem, "file": rel, **extra}


def iter_raw_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Yield (row number, raw row or error reason) from any supported input.

    Raises:
        DatasetError: The path does not exist or its format is unknown.
    """
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder")
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
            return _iter_hf(path)
        files = sorted(p for p in path.rglob("*") if p.suffix in (".cu", ".cuh", ".py"))
        if not files:
            raise DatasetError(f"{path}: folder holds no .cu, .py or saved dataset")
        return _iter_sources(files, path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return _iter_jsonl(path)
    if suffix in (".parquet", ".pq"):
        try:
            pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from exc
        return _iter_parquet(path)
    if suffix in (".cu", ".cuh", ".py"):
        return _iter_sources([path], path)
    raise DatasetError(f"{path}: unknown format {suffix!r} (use .jsonl, .parquet, .cu, .py, "
                       "a folder of them, or a saved Hugging Face dataset)")


def load_trajectories(path: Path | str, *, column_map: dict[str, str] | None = None,
                      default_round: int = 0,
                      max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES) -> LoadResult:
    """Load rollouts from ``path`` into normalized records.

    Args:
        path: A JSONL or Parquet file, a saved Hugging Face dataset, a ``.cu``/``.py`` file or
            a folder of them.
        column_map: Normalized field name -> column name in the input.
        default_round: Round for rows that do not give one.
        max_field_bytes: Fields longer than this are quarantined.

    Returns:
        The records (columns ``RECORD_COLUMNS``) and the quarantined rows with reasons.

    Raises:
        DatasetError: The input as a whole cannot be read.
    """
    column_map = column_map or {}
    source = str(path)
    records: list[dict[str, Any]] = []
    quarantined: list[QuarantinedRow] = []
    seen_ids: dict[str, int] = {}
    for number, row in iter_raw_rows(Path(path)):
        if isinstance(row, str):
            quarantined.append(QuarantinedRow(source, number, row))
            continue
        try:
            record = normalize_row(row, column_map, source=str(row.get("file", source)),
                                   default_round=default_round, max_field_bytes=max_field_bytes)
        except ValueError as exc:
            quarantined.append(QuarantinedRow(source, number, str(exc)))
            continue
        row_id = record.pop("_row_id")
        if row_id is not None:
            if row_id in seen_ids:
                quarantined.append(QuarantinedRow(
                    source, number, f"duplicate id {row_id!r} (first at row {seen_ids[row_id]})",
                    id=row_id))
                continue
            seen_ids[row_id] = number
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        frame = pd.DataFrame(columns=RECORD_COLUMNS)
    extras = [c for c in frame.columns if c not in RECORD_COLUMNS]
    return LoadResult(frame[RECORD_COLUMNS + extras], quarantined)


def write_parquet(frame: pd.DataFrame, path: Path | str) -> Path:
    """Write ``frame`` to Parquet atomically (temp file + rename)."""
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))


def write_jsonl(rows: pd.DataFrame | list[dict[str, Any]], path: Path | str) -> Path:
    """Write rows to JSONL atomically (temp file + rename)."""
    if isinstance(rows, pd.DataFrame):
        rows = json.loads(rows.to_json(orient="records"))

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, default=str) + "\n")

    return atomic_write(path, write)


def write_quarantine(rows: list[QuarantinedRow], path: Path | str) -> Path:
    """Write quarantined rows (source, row, reason, id) to JSONL atomically."""
    return write_jsonl([vars(r) for r in rows], path)


def write_records(frame: pd.DataFrame, path: Path | str) -> Path:
    """Write records to Parquet or JSONL, chosen by the file suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        return write_parquet(frame, path)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return write_jsonl(frame, path)
    raise DatasetError(f"{path}: write .parquet or .jsonl")
