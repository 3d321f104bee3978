"""``structcover ingest``: read rollouts in any supported shape into the normalized table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import typer

from structcover.commands._output import console, fail, print_json, print_table
from structcover.tools.data.datasets import (
    DatasetError,
    load_trajectories,
    parse_column_map,
    write_quarantine,
    write_records,
)


def ingest(
    data: Path = typer.Argument(...,
                                help="JSONL, Parquet, saved HF dataset, .cu/.py file or folder."),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="Write records (.parquet/.jsonl)."),
    column_map: list[str] | None = typer.Option(None, "--map",
                                                help="normalized=source column, repeatable."),
    quarantine: Path | None = typer.Option(None, "--quarantine", help="Where bad rows go (JSONL)."),
    round_: int = typer.Option(0, "--round", min=0, help="Round for rows that give none."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Load rollouts, quarantine bad rows with reasons, and summarize (optionally write them)."""
    try:
        result = load_trajectories(data, column_map=parse_column_map(column_map),
                                   default_round=round_)
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    records = result.records
    quarantine_path = None
    if result.quarantined:
        # Only where asked, or beside the output; never into the working folder unasked.
        quarantine_path = quarantine or (output.with_suffix(".quarantine.jsonl") if output
                                         else None)
        if quarantine_path is not None:
            write_quarantine(result.quarantined, quarantine_path)
    if output:
        write_records(records, output)
    reasons = Counter(q.reason.split(":")[0] for q in result.quarantined)
    summary: dict[str, Any] = {
        **result.summary,
        "tasks": int(records["task_id"].nunique()) if len(records) else 0,
        "rounds": sorted(int(r) for r in records["round"].unique()) if len(records) else [],
        "correct_fraction": (float(records["correct"].dropna().mean())
                             if len(records) and records["correct"].notna().any() else None),
        "output": str(output) if output else None,
        "quarantine_file": str(quarantine_path) if quarantine_path else None,
        "quarantine_reasons": dict(reasons),
    }
    if as_json:
        print_json(summary)
        return
    print_table(f"ingest {data}", ["loaded", "quarantined", "tasks", "rounds", "correct"],
                [[summary["loaded"], summary["quarantined"], summary["tasks"],
                  ",".join(map(str, summary["rounds"])), summary["correct_fraction"]]])
    for reason, count in reasons.most_common():
        console.print(f"  quarantined {count}: {reason}")
    if quarantine_path:
        console.print(f"bad rows with reasons: {quarantine_path}")


def register(app: typer.Typer) -> None:
    """Add the ingest command."""
    app.command("ingest")(ingest)
