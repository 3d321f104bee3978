"""``structcover curate``: coverage-weighted data, a resampled set and targeted prompts."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._input import MAP_HELP, read_input
from structcover.commands._output import console, fail, print_json


def curate(
    data: Path = typer.Argument(..., help="Feature table or rollouts (Parquet, JSONL, CSV)."),
    state: Path = typer.Option(..., "--state", help="State folder (frozen archive, rounds)."),
    output: Path = typer.Option(..., "-o", "--output", help="Folder for the curated data."),
    round: int | None = typer.Option(None, "--round", min=0,
                                     help="Round to curate (default: last)."),
    eps: float = typer.Option(1.0, "--eps", min=1e-6, help="ε in w ∝ 1/(count(bin)+ε)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the resampled set."),
    mapping: list[str] = typer.Option([], "--map", help=MAP_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    problems: Path | None = typer.Option(None, "--problems",
                                         help="KernelBench problems folder: prompts for the "
                                         "tasks that name a problem in it ask for ModelNew."),
) -> None:
    """Diagnose the round (reusing the frozen archive) and write the curated data."""
    from structcover.config import load_settings
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.curation.prompting import corpus_spec
    from structcover.tools.curation.sampling import export_curation
    from structcover.tools.kernelbench.for_bin import problem_specs

    settings = load_settings()
    try:
        run = run_diagnosis(read_input(data, mapping), state, round=round,
                            settings=settings.archive,
                            discovery_settings=settings.discovery, seed=seed)
        specs = None
        if problems is not None:  # corpus tasks, and tasks that name no problem, keep theirs
            tasks = [t for t in run.table["task_id"].astype(str).unique()
                     if corpus_spec(t) is None]
            specs = problem_specs(tasks, problems)[0]
        out = export_curation(run.table, run.archive, output, gaps=run.diagnosis.gaps,
                              diagnosis_json=run.diagnosis.to_json(), eps=eps, seed=seed,
                              specs=specs)
    except ValueError as exc:
        fail(str(exc))
        return
    if as_json:
        print_json(out)
        return
    console.print(f"{out.rows} rows weighted ({out.normalization}); {out.resampled_rows} "
                  f"resampled; {out.prompts} targeted prompts")
    for name, path in out.files.items():
        console.print(f"  {name}: {path}")


def register(app: typer.Typer) -> None:
    """Add the curate command."""
    app.command("curate")(curate)
