"""``structcover prompt``: the constrained synthesis prompt for one target bin."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import fail, print_json

BIN_HELP = 'Bin label, e.g. "smem.tiled=1,mem.coalesced_fraction=[0.9,1.0]".'


def prompt(
    bin_label: str = typer.Argument(..., metavar="BIN", help=BIN_HELP),
    task: str = typer.Option(..., "--task", help="TaskSpec YAML or corpus task id."),
    state: Path | None = typer.Option(None, "--state",
                                      help="State dir: bounds come from its frozen archive."),
    as_json: bool = typer.Option(False, "--json", help="Print the prompt and constraints as JSON."),
    problems: Path | None = typer.Option(None, "--problems",
                                         help="KernelBench problems folder: --task names a "
                                         "problem in it (or give --task a problem .py file)."),
) -> None:
    """Print the constrained prompt for a target bin of a task."""
    from structcover.tools.coverage.labels import parse_bin_label
    from structcover.tools.curation.prompting import constraint_sentences, render_generate
    from structcover.tools.data.corpus import resolve_task

    if problems is not None or task.endswith(".py"):  # a KernelBench problem: ModelNew wanted
        from structcover.tools.kernelbench.for_bin import problem_specs

        specs, notes = problem_specs([task], problems)
        if task not in specs:
            fail(notes[0] if notes else f"--task {task}: not a KernelBench problem")
        spec = specs[task]
    else:
        spec = resolve_task(task)  # a bad --task is one error line (the CLI's handler)
    if state is not None:
        from structcover.tools.coverage.archive import load_archive

        archive = load_archive(state)
        if archive is None:
            fail(f"--state {state}: no archive saved there")
        try:
            bounds = archive.describe_bin(bin_label)
        except (ValueError, KeyError) as exc:
            fail(f"bin {bin_label!r}: {exc}")
    else:
        try:
            bounds = parse_bin_label(bin_label)
        except ValueError as exc:
            fail(str(exc))
    text = render_generate(spec, bounds)
    if as_json:
        print_json({"bin": bin_label, "task_id": spec.task_id,
                    "constraints": constraint_sentences(bounds), "prompt": text})
    else:
        typer.echo(text)


def register(app: typer.Typer) -> None:
    """Add ``prompt`` to the CLI."""
    app.command("prompt")(prompt)
