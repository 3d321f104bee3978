"""``structcover why PROGRAM --state DIR``: one program's predicted performance, explained
from its structural features."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import console, fail, print_json, print_table


def why(
    program: str = typer.Argument(..., help="A program id (or a unique prefix) in the state's "
                                  "memory, or TASK:path/to/file.cu."),
    state: Path = typer.Option(..., "--state", help="Campaign state folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
) -> None:
    """Why PROGRAM is predicted fast or slow ("fast because coalesced and tiled; slow because
    ..."), each reason the model's time with that one feature changed. The model is the
    analytical GPU model (simulated), not a measurement."""
    from structcover.tools.explain.state import StateError, StateView
    from structcover.tools.explain.why import explain_program

    try:
        with StateView.open(state) as view:
            result = explain_program(view, program)
    except (StateError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        print_json(result)
        return
    console.print(result.summary, markup=False, soft_wrap=True)
    rows = [["fast", f.feature, f.value, f.says, f"x{f.effect:.2f}"] for f in result.fast_because]
    rows += [["slow", f.feature, f.value, f.says, f"x{f.effect:.2f}"] for f in result.slow_because]
    if rows:
        print_table("factors (time with the other setting / now)",
                    ["", "feature", "value", "means", "effect"], rows)
    console.print(f"model: {result.model}")
    console.print(f"sources: {', '.join(result.sources) or '(file)'}")


def register(app: typer.Typer) -> None:
    """Add the why command."""
    app.command("why")(why)
