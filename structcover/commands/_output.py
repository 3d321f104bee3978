"""Shared output helpers for commands: JSON or rich tables, errors, progress bars."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

console = Console(stderr=False)
err_console = Console(stderr=True)
T = TypeVar("T")


def _plain(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return obj.item()
    if isinstance(obj, float) and obj != obj:  # NaN is not JSON
        return None
    return obj


def print_json(obj: Any) -> None:
    """Print ``obj`` (models, dicts, numpy scalars) as JSON on stdout."""
    sys.stdout.write(json.dumps(_plain(obj), indent=2, default=str) + "\n")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a rich table."""
    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*(escape(_cell(v)) for v in row))
    console.print(table)


def fail(message: str, code: int = 2) -> None:
    """Print an error on stderr and exit with ``code``."""
    err_console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def progress(enabled: bool = True) -> Iterator[Progress]:
    """A rich progress bar on stderr (disabled for --json or when not a terminal)."""
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err_console, disable=not enabled,
                   transient=False)
    with bar:
        yield bar


def track(items: Sequence[T], description: str, enabled: bool = True) -> Iterator[T]:
    """Iterate over ``items`` with a progress bar."""
    with progress(enabled) as bar:
        task = bar.add_task(description, total=len(items))
        for item in items:
            yield item
            bar.advance(task)
