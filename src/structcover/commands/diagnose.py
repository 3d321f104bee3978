"""``structcover diagnose``: coverage, mismatch, entropy and collapse of one round's data."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._input import MAP_HELP, read_input
from structcover.commands._output import console, fail, print_json, print_table
from structcover.config import load_settings


def diagnose(
    data: Path = typer.Argument(..., help="Feature table or rollouts (Parquet, JSONL, CSV)."),
    state: Path = typer.Option(..., "--state", help="State folder (frozen archive, rounds)."),
    round: int | None = typer.Option(None, "--round", min=0,
                                     help="Round to diagnose (default: last)."),
    report: Path | None = typer.Option(None, "--report", help="Write the HTML report here."),
    as_json: bool = typer.Option(False, "--json", help="Print the diagnosis as JSON."),
    seed: int = typer.Option(0, "--seed", help="Seed for the predictor and the archive."),
    mapping: list[str] = typer.Option([], "--map", help=MAP_HELP),
) -> None:
    """Diagnose one round against the frozen archive (created at the first round)."""
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.report.html_report import write_report

    settings = load_settings()
    try:
        run = run_diagnosis(read_input(data, mapping), state, round=round,
                            settings=settings.archive,
                            discovery_settings=settings.discovery, seed=seed)
    except ValueError as exc:
        fail(str(exc))
        return
    d = run.diagnosis
    if report is not None:
        write_report(report, d, archive=run.archive, table=run.table, history=run.history,
                     simulated=run.simulated, reward_source=run.reward_source)
    if as_json:
        print_json(d)
        return
    print_table(f"round {d.round}: coverage", ["SCov", "covered", "bins", "zero", "low",
                                                "H(S(D))", "SRMis", "collapse"],
                [[d.scov, d.bins_covered, d.bins_total, len(d.zero_bins), len(d.low_bins),
                  d.entropy.joint, d.srmis.overall,
                  d.collapse.kind if d.collapse.detected else "no"]])
    print_table("top gaps", ["priority", "kind", "bin", "reason"],
                [[g.priority, g.kind, g.bin, "; ".join(g.reasons)] for g in d.gaps[:10]])
    for note in d.notes:
        console.print(f"note: {note}")
    if report is not None:
        console.print(f"report: {report}")


def register(app: typer.Typer) -> None:
    """Add the diagnose command."""
    app.command("diagnose")(diagnose)
