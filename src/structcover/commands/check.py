"""``structcover check FILE``: run the anti-hacking checks on a program."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from structcover.commands._output import fail, print_json, print_table
from structcover.tools.data.text import read_source


def check(
    file: Path = typer.Argument(..., help="A program (.cu, or a Python file with inline CUDA)."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
) -> None:
    """Print every anti-hacking check's verdict; exit 1 when a hard check fails."""
    from structcover.tools.verify.hacking import hard_failures, run_checks

    if not file.is_file():
        fail(f"{file}: no such file")
    results = run_checks(read_source(file))
    hard = hard_failures(results)
    if as_json:
        print_json({"file": str(file), "passed": not hard, "checks": results})
    else:
        print_table(f"anti-hacking checks: {file}", ["check", "severity", "verdict", "reason"],
                    [[r.name, r.severity, "ok" if r.ok else ("FAIL" if r.severity == "hard"
                                                             else "warn"), escape(r.reason)]
                     for r in results])
    if hard:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the check command."""
    app.command("check")(check)
