"""Shared input step for commands: one reader (``tools/mining/reader.py``), one way to warn."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from structcover.commands._output import warn

#: Help of every command's ``--map`` option.
MAP_HELP = "Rollout column for a field, e.g. --map program=custom_code (repeatable)."


def read_input(path: Path, mapping: list[str] | None = None) -> pd.DataFrame:
    """The rows of ``path`` for a command; warns about quarantined rows and an empty input.

    Raises:
        ValueError: The input cannot be read, or a ``--map`` item is malformed.
    """
    from structcover.tools.data.datasets import parse_column_map
    from structcover.tools.mining.reader import read_table

    result = read_table(path, column_map=parse_column_map(mapping))
    if result.quarantined:
        first = result.quarantined[0]
        warn(f"{path}: {len(result.quarantined)} rows quarantined (first: row {first.row}: "
             f"{first.reason}); `structcover ingest` writes them all with reasons")
    if len(result.records) == 0:
        warn(f"{path}: 0 rows loaded")
    return result.records
