"""Shared output helpers for commands: JSON or rich tables, errors, progress bars."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

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


#: Longest cell text a table shows; longer text (reasons, notes) ends in "…" (--json has it all).
MAX_CELL = 48


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a rich table that fits the terminal (80 columns when not a terminal).

    Cells are clipped to :data:`MAX_CELL` characters and the widest columns fold, so a long
    reason never stretches a table into a wall of wrapped text; ``--json`` keeps full text.
    """
    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(escape(_clip(_cell(v))) for v in row))
    console.print(table)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one ``error:`` line on stderr and exit with ``code``.

    Line breaks in ``message`` (multi-line library errors) are folded so the error stays one
    line that scripts can grep.
    """
    one_line = " ".join(str(message).split())
    err_console.print(f"[red]error:[/red] {escape(one_line)}", soft_wrap=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print one ``warning:`` line on stderr (the command goes on)."""
    err_console.print(f"[yellow]warning:[/yellow] {escape(' '.join(str(message).split()))}",
                      soft_wrap=True)


def describe_error(exc: BaseException) -> str:
    """One line naming the input and the reason, for an exception no command handled.

    ``OSError`` carries the file it failed on; a ``UnicodeDecodeError`` names the byte; other
    errors of the package already name their input in the message.
    """
    if isinstance(exc, OSError):
        name = exc.filename if exc.filename is not None else ""
        reason = exc.strerror or str(exc) or type(exc).__name__
        return f"{name}: {reason}" if name else reason
    if isinstance(exc, UnicodeDecodeError):
        return (f"input is not {exc.encoding} text: byte 0x{exc.object[exc.start]:02x} at "
                f"offset {exc.start} ({exc.reason})")
    if isinstance(exc, RecursionError):
        return "input is nested too deeply to process"
    if isinstance(exc, MemoryError):
        return "out of memory while processing the input"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, KeyError):
        text = f"missing {text}"
    return text


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
