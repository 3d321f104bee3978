"""``structcover demo``: the whole loop on the shipped sample corpus, offline, no GPU."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from structcover.commands._output import (
    console,
    fail,
    print_json,
    print_table,
    progress,
)
from structcover.demo import DEMO_BUDGET, demo_campaign_options, run_demo


@contextmanager
def _bars(enabled: bool) -> Iterator[Callable[[str, int], Callable[[], None]]]:
    with progress(enabled) as bar:
        def make(description: str, total: int) -> Callable[[], None]:
            task = bar.add_task(description, total=total)
            return lambda: bar.advance(task)
        yield make


def demo(
    output: Path = typer.Option(Path("structcover-demo"), "-o", "--output",
                                help="Folder for the demo's outputs."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="Simulated training rounds."),
    skip_verify: bool = typer.Option(False, "--skip-verify",
                                     help="Do not verify the corpus variants first."),
    budget: int = typer.Option(DEMO_BUDGET, "--budget", min=1,
                               help="Candidate budget of the campaign on the last round."),
    family: list[str] = typer.Option(None, "--family",
                                     help="Use only these corpus families (repeatable)."),
    full: bool = typer.Option(False, "--full",
                              help="Fill the gaps of every task (about 330 candidates; the "
                              "default quick demo fills five tasks' gaps)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    executor: str = typer.Option("local", "--executor",
                                 help="Where the corpus checks and the campaign's mutations "
                                 "and checks run: local (this process) or ray."),
    address: str | None = typer.Option(None, "--address",
                                       help="With --executor ray: the cluster to join (auto = "
                                       "the running one); default: start a local one."),
) -> None:
    """Run the offline demo on the sample corpus and print what it found."""
    if executor not in ("local", "ray"):
        fail(f"--executor must be 'local' or 'ray', got {executor!r}")
    if address is not None and executor != "ray":
        fail("--address applies to --executor ray only")
    with _bars(not as_json) as make:
        try:
            result = run_demo(output, progress=make, rounds=rounds, verify=not skip_verify,
                              families=family or None,
                              campaign=demo_campaign_options(
                                  budget=budget, executor=executor, address=address,
                                  **({"tasks": None} if full else {})))
        except (ValueError, RuntimeError, ConnectionError) as exc:
            fail(str(exc))
            return
    if as_json:
        print_json(result)
        return
    print_table(f"sample corpus, verified on the {result.backend or 'no'} backend",
                ["family", "tasks", "variants", "equivalent", "failures"],
                [[f.family, f.tasks, len(f.variants), f"{f.verified}/{f.checked}",
                  "; ".join(f.failures)[:120]] for f in result.families])
    print_table("simulated rounds (rewards modelled: timing model over measured counters)",
                ["round", "rollouts", "F* (critical tier size)", "SCov", "bins", "H(S(D))",
                 "collapse", "top gaps"],
                [[r.round, r.rollouts, f"{', '.join(r.f_star)} ({r.critical})", r.scov,
                  f"{r.bins_covered}/{r.bins_total}", r.entropy, r.collapse,
                  "; ".join(r.top_gaps)] for r in result.rounds])
    if result.rounds:
        axes = ", ".join(result.rounds[0].archive_axes)
        console.print(f"archive axes (frozen at round 0): {axes}")
    for line in result.notes:
        console.print(line)
    c = result.campaign
    if c is not None:
        print_table(f"campaign on round {c.round}: per-task SCov over feasible bins "
                    f"(mean {c.scov_before:.1%} -> {c.scov_after:.1%})",
                    ["task", "before", "after", "feasible bins", "proven infeasible"],
                    [[t.task, f"{t.before:.1%}", f"{t.after:.1%}", t.bins_feasible,
                      t.bins_infeasible] for t in c.coverage])
        print_table(f"new programs ({len(c.added)} from {c.candidates} candidates), each "
                    "verified equivalent and checked to land in its bin",
                    ["task", "bin", "operators", "verified by"],
                    [[a.task, a.bin, " + ".join(a.operators),
                      f"{a.verification.backend}: {', '.join(a.verification.checks)}"]
                     for a in c.added])
        if c.reweighted:
            console.print(f"re-used existing programs (reweighting, not counted as new): "
                          f"{len(c.reweighted)}")
        left = [g for g in c.open_gaps]
        infeasible = sum(g.status == "infeasible" for g in left)
        console.print(f"gaps left: {len(left)} ({infeasible} proven infeasible, reasons in "
                      f"memory); stopped: {c.stopped}")
    if result.seconds:
        console.print("wall time per stage: " + ", ".join(
            f"{stage} {secs:.0f} s" for stage, secs in result.seconds.items()))
    for name, path in result.files.items():
        console.print(f"  {name}: {path}")


def register(app: typer.Typer) -> None:
    """Add the demo command."""
    app.command("demo")(demo)
