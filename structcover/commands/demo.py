"""``structcover demo``: the whole loop on the shipped sample corpus, offline, no GPU."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import console, print_json, print_table
from structcover.demo import run_demo


def demo(
    output: Path = typer.Option(Path("structcover-demo"), "-o", "--output",
                                help="Folder for the demo's outputs."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Run the offline demo on the sample corpus and print what it found."""
    result = run_demo(output, show_progress=not as_json)
    if as_json:
        print_json(result)
        return
    print_table("sample corpus", ["family", "tasks", "programs", "variants"],
                [[f.family, f.tasks, f.programs, ", ".join(f.variants)] for f in result.families])
    for line in result.notes:
        console.print(line)
    console.print(f"outputs: {result.output_dir}")


def register(app: typer.Typer) -> None:
    """Add the demo command."""
    app.command("demo")(demo)
