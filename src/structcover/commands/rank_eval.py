"""``structcover rank-eval``: any feature table against any labels, under the ranking protocol."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import typer

from structcover.commands._input import read_input
from structcover.commands._output import fail, print_json, print_table
from structcover.tools.mining.ranking import evaluate_ranking, standard_specs
from structcover.tools.mining.table import feature_columns, is_categorical

_NOT_FEATURES = {"program_id", "task_id", "round", "correct", "speedup", "runtime_ms", "program",
                 "prompt", "policy", "model", "source", "device", "gpu", "meta"}


def join(features: pd.DataFrame, labels: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Labels joined to features on ``program_id`` (and ``task_id`` when both have it).

    Raises:
        ValueError: Either table lacks ``program_id``, or nothing matches.
    """
    for name, t in (("FEATURES", features), ("LABELS", labels)):
        if "program_id" not in t.columns:
            raise ValueError(f"{name} has no 'program_id' column to join on")
    cols = feature_columns(features) or [
        c for c in features.columns if c not in _NOT_FEATURES
        and (pd.api.types.is_numeric_dtype(features[c]) or is_categorical(features[c]))]
    keys = ["program_id"] + (["task_id"] if "task_id" in features and "task_id" in labels else [])
    extra = [c for c in features.columns if c not in cols and c not in keys
             and c not in labels.columns]
    merged = labels.merge(features[keys + cols + extra].drop_duplicates(keys), on=keys,
                          how="inner")
    if merged.empty:
        raise ValueError("no program_id of LABELS is in FEATURES")
    return merged, cols


def rank_eval(
    features: Path = typer.Argument(..., help="Feature table: program_id + feature columns."),
    labels: Path = typer.Argument(..., help="Labels: program_id, task_id and the label."),
    group: str = typer.Option("task_id", "--group", help="Group whose programs are compared."),
    label: str = typer.Option("speedup", "--label", help="Reward column (higher is better; "
                              "runtime_ms lower)."),
    tie: float = typer.Option(0.02, "--tie", min=0.0, help="Relative difference counted as a tie."),
    folds: int = typer.Option(5, "--folds", min=2, help="Folds over tasks."),
    spread: str | None = typer.Option(None, "--spread", help="Column of run-to-run spread."),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Within-group pairwise accuracy of a feature set, beside the trivial baselines."""
    try:
        frame, cols = join(read_input(features), read_input(labels))
        if "task_id" not in frame.columns:
            frame["task_id"] = frame[group]
        specs, notes = standard_specs(frame, cols, name="features")
        report = evaluate_ranking(frame, specs, label=label, seed=seed, tie=tie, folds=folds,
                                  group_columns=[group] if group != "task_id" else None,
                                  spread_col=spread, notes=notes)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        print_json(report)
        return
    print_table(f"Within-{group} pairwise accuracy ({report.folds}-fold by task, {report.pairs} "
                f"pairs, dropped {report.dropped_pairs})",
                ["predictor", "mean", "± std", "pooled", "shuffled", "pairs"],
                [(r.name, r.mean, r.std, r.pooled, r.shuffled, r.pairs) for r in report.rows])


def register(app: typer.Typer) -> None:
    """Add ``rank-eval`` to the CLI."""
    app.command("rank-eval")(rank_eval)
