"""``structcover explain BIN --state DIR``: the evidence for why a bin is empty or thin."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import console, fail, print_json, print_table


def explain(
    bin_spec: str = typer.Argument(..., metavar="BIN", help="The bin as axis=level items, e.g. "
                                   "'reuse=smem_tiling,global_access=strided' (any subset of "
                                   "the archive's axes; the pattern. prefix is optional)."),
    state: Path = typer.Option(..., "--state", help="Campaign state folder."),
    task: str | None = typer.Option(None, "--task", help="Only this task."),
    as_json: bool = typer.Option(False, "--json", help="Print the evidence as JSON."),
) -> None:
    """Why BIN is empty or thin: never targeted, targeted N times with the outcomes by stage
    (with examples), or proven infeasible and why; plus the nearest programs and what
    separates them from the bin. Offline: reads the state folder only."""
    from structcover.tools.explain.binspec import BinSpecError
    from structcover.tools.explain.evidence import explain_bin
    from structcover.tools.explain.state import StateError, StateView

    try:
        with StateView.open(state) as view:
            result = explain_bin(view, bin_spec, task)
    except (BinSpecError, StateError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        print_json(result)
        return
    console.print(f"{result.query}: {result.bins} archive bin(s) "
                  f"({', '.join(f'{a}={v}' for a, v in result.levels.items())})", markup=False)
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
    if not result.tasks:
        console.print("memory knows no task: nothing was ever targeted here")
    for t in result.tasks:
        console.print(f"\n{t.task} ({t.verdict}): {t.summary}", markup=False)
        for b, why in sorted(t.proofs.items())[:3]:
            console.print(f"  proof for {b}: {why}", markup=False)
        if t.examples:
            print_table(f"{t.task}: failed attempts ({t.attempts} attempts, by stage "
                        f"{t.by_stage})", ["stage", "candidate", "landed in", "reason"],
                        [[e.stage, e.candidate_id[:12], e.landed_bin[:60], e.reason[:100]]
                         for e in t.examples])
        if t.nearest:
            print_table(f"{t.task}: nearest verified programs", ["program", "axes apart",
                                                                 "what separates it"],
                        [[n.program_id[:12], n.axes_apart,
                          ", ".join(f"{a}: {v[0]} -> {v[1]}" for a, v in n.differs.items())]
                         for n in t.nearest])
        console.print(f"  sources: {', '.join(t.sources[:8]) or '(none)'}", markup=False)


def register(app: typer.Typer) -> None:
    """Add the explain command."""
    app.command("explain")(explain)
