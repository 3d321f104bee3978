"""``structcover simulate``: rounds of SIMULATED rollouts over the sample corpus."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import console, fail, print_json


def simulate(
    rounds: int = typer.Option(3, "--rounds", min=1, help="Number of rounds."),
    output: Path = typer.Option(..., "-o", "--output", help="Folder for the rollouts."),
    seed: int = typer.Option(0, "--seed", help="Seed."),
    collapse: float = typer.Option(0.5, "--collapse", min=0.0, max=1.0,
                                   help="Collapse per round, 0..1."),
    collapse_feature: str | None = typer.Option(
        None, "--collapse-feature", help="Collapse onto this feature's common value "
        "(default: onto each task's fastest program)."),
    rollouts: int = typer.Option(64, "--rollouts", min=1, help="Rollouts per task per round."),
    measured: Path | None = typer.Option(
        None, "--measured", help="Measured timings (JSON {program_id: ms}, CSV or Parquet)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Write rollouts.parquet (all rounds) and round_<N>.parquet; rewards are modelled."""
    from structcover.tools.data.datasets import write_parquet
    from structcover.tools.simulation.simulate import SimulationSettings, load_measurements
    from structcover.tools.simulation.simulate import simulate as run

    try:
        settings = SimulationSettings(rounds=rounds, rollouts_per_task=rollouts,
                                      collapse=collapse, collapse_feature=collapse_feature,
                                      seed=seed)
        table = run(settings, measured=load_measurements(measured))
    except ValueError as exc:
        fail(str(exc))
        return
    files = [str(write_parquet(table, output / "rollouts.parquet"))]
    for n, rows in table.groupby("round"):
        files.append(str(write_parquet(rows, output / f"round_{n}.parquet")))
    summary = {"rows": len(table), "rounds": rounds, "collapse": collapse,
               "reward_source": table["reward_source"].value_counts().to_dict(),
               "files": files,
               "rewards": table.attrs.get("rewards", ""),
               "note": "SIMULATED rollouts: rewards are modelled (the timing model, "
                       "tools/simulation/timing_model.py, over each program's measured CPU "
                       "emulator counters) unless measured timings were given"}
    if as_json:
        print_json(summary)
        return
    console.print(f"{len(table)} simulated rollouts over {rounds} rounds -> {output}")
    console.print(summary["note"])


def register(app: typer.Typer) -> None:
    """Add the simulate command."""
    app.command("simulate")(simulate)
