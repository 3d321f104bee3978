"""``structcover discover``: which structures drive speed, beside the trivial explanations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import typer

from structcover.commands._input import MAP_HELP, read_input
from structcover.commands._output import fail, print_json, print_table
from structcover.config import load_settings
from structcover.tools.mining import (
    Discovery,
    compare_discoveries,
    discover,
    load_discovery,
    save_discovery,
)
from structcover.tools.mining.ranking import RankingReport, evaluate_ranking, standard_specs


def previous_discovery(state: Path, current: int) -> Discovery | None:
    """The latest saved discovery of a round before ``current``, if any."""
    rounds = state / "rounds"
    if not rounds.is_dir():
        return None
    done = sorted(int(p.name) for p in rounds.iterdir()
                  if p.name.isdigit() and int(p.name) < current
                  and (p / "discovery.json").is_file())
    return load_discovery(rounds / str(done[-1]) / "discovery.json") if done else None


def rank_with_baselines(frame: pd.DataFrame, result: Discovery, kwargs: dict[str, Any],
                        *, seed: int) -> RankingReport:
    """The issue-8 table: baselines, F*, F* + each baseline, F* re-selected per fold."""
    cache: dict[tuple[str, ...], list[str]] = {}

    def select(train: pd.DataFrame) -> list[str]:
        # F* is re-discovered on the training tasks only, so the test tasks never pick it;
        # every row of the table reuses the fold's selection.
        key = tuple(sorted(train["task_id"].astype(str).unique()))
        if key not in cache:
            try:
                cache[key] = discover(train, **{**kwargs, "bootstrap": 0}).f_star
            except ValueError:
                cache[key] = []
        return cache[key]

    specs, notes = standard_specs(frame, result.f_star, select)
    label = result.settings.target
    return evaluate_ranking(frame, specs, label=label, seed=seed,
                            correct_only=result.settings.correct_only,
                            notes=notes + ["F* rows re-run discovery on each fold's training "
                                           "tasks; 'features' lists F* on all data"])


def summary(result: Discovery) -> dict[str, Any]:
    """The JSON shape of a discovery's features."""
    return {"features": [f.model_dump(include={"name", "kind", "applies_to", "mi", "mi_pooled",
                                               "mi_controlled", "tier", "stability", "selected",
                                               "confounded", "reason"})
                         for f in result.features],
            "f_star": result.f_star}


def discover_command(
    data: Path = typer.Argument(..., help="Feature table (Parquet/JSONL/CSV) or rollouts."),
    state: Path | None = typer.Option(None, "--state", help="State folder: saves "
                                      "rounds/<round>/discovery.json and reports drift."),
    control: list[str] = typer.Option([], "--control", help="Control for this column "
                                      "(repeatable), e.g. --control policy."),
    no_length_control: bool = typer.Option(False, "--no-length-control",
                                           help="Do not control for code length."),
    round_: int | None = typer.Option(None, "--round", min=0, help="Round (default: max of the "
                                      "data's round column, else 0)."),
    target: str = typer.Option("speedup", "--target", help="speedup, runtime_ms or a column."),
    pooled: bool = typer.Option(False, "--pooled", help="R_perf pooled over tasks."),
    all_programs: bool = typer.Option(False, "--all-programs",
                                      help="Keep incorrect programs too."),
    bootstrap: int | None = typer.Option(None, "--bootstrap", min=0,
                                         help="Stability resamples (0: none)."),
    no_ranking: bool = typer.Option(False, "--no-ranking", help="Skip the baseline table."),
    seed: int | None = typer.Option(None, "--seed"),
    config: Path | None = typer.Option(None, "--config", help="Settings YAML."),
    mapping: list[str] = typer.Option([], "--map", help=MAP_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Discover the features associated with speed (MI, tiers, F*) and compare to baselines."""
    ds = load_settings(config).discovery
    try:
        frame = read_input(data, mapping)
        kwargs: dict[str, Any] = dict(
                      target=target, normalize_within_task=not pooled and ds.normalize_within_task,
                      correct_only=not all_programs and ds.correct_only, tau_high=ds.tau_high,
                      tau_low=ds.tau_low, critical_factor=ds.critical_factor,
                      controls=tuple(control),
                      length_control=not no_length_control,
                      seed=ds.seed if seed is None else seed)
        result = discover(frame, **kwargs, round=round_,
                          bootstrap=ds.bootstrap if bootstrap is None else bootstrap)
        if result.round is None:
            result.round = 0
        ranking = None if no_ranking else rank_with_baselines(frame, result, kwargs,
                                                              seed=kwargs["seed"])
    except ValueError as exc:
        fail(str(exc))
    drift, saved = None, None
    if state is not None:
        prev = previous_discovery(state, result.round)
        drift = compare_discoveries(prev, result) if prev else None
        saved = save_discovery(result, state / "rounds" / str(result.round) / "discovery.json")
    out = {"round": result.round, **summary(result), "drift": drift, "ranking": ranking,
           "languages": result.counts.languages, "non_cuda_rows": result.counts.non_cuda_rows,
           "counts": result.counts, "settings": result.settings,
           "saved": str(saved) if saved else None}
    if as_json:
        print_json(out)
        return
    print_table(f"Discovery, round {result.round} (MI in nats; F* = {', '.join(result.f_star)})",
                ["feature", "MI", "MI pooled", "MI | controls", "tier", "stability", "F*",
                 "note"],
                [(f.name, f.mi, f.mi_pooled, f.mi_controlled, f.tier, f.stability,
                  "yes" if f.selected else "", f.reason) for f in result.features])
    user_controls = [c for c in result.settings.controls_used if c != "length"]
    null = result.settings.null.get("mi_controlled" if user_controls else "mi", {})
    if null:
        k = result.settings.critical_factor
        print_table("Within-task permutation null (MI against shuffled rewards, nats): a "
                    f"feature is moderate above its null level + spread, critical above its "
                    f"null level + {k:g} x spread (per feature: null_mi, tau_low, tau_high "
                    "in --json)", ["kind", "draws", "q50", "q95", "q99", "max", "spread"],
                    [(kind, int(v["draws"]), v["q50"], v["q95"], v["q99"], v["max"],
                      v.get("spread_q99")) for kind, v in null.items()])
    if ranking is not None:
        print_table(f"Within-task pairwise accuracy ({ranking.folds}-fold by task, "
                    f"{ranking.pairs} pairs, {ranking.groups} groups)",
                    ["predictor", "mean", "± std", "pooled", "shuffled", "pairs"],
                    [(r.name, r.mean, r.std, r.pooled, r.shuffled, r.pairs)
                     for r in ranking.rows])
    if drift is not None:
        print_table(f"Drift from round {drift.previous_round}", ["entered", "left", "jaccard"],
                    [(", ".join(drift.entered), ", ".join(drift.left), drift.jaccard)])
    if result.counts.non_cuda_rows:
        typer.echo(f"non-CUDA programs: {result.counts.non_cuda_rows} "
                   f"({result.counts.languages}); CUDA features not applicable to them")
    if saved:
        typer.echo(f"saved {saved}")


def register(app: typer.Typer) -> None:
    """Add ``discover`` to the CLI."""
    app.command("discover")(discover_command)
