"""``structcover watch``: fill coverage gaps between training rounds, unattended."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

from structcover.commands._output import fail, print_json


def watch(
    folder: Path = typer.Argument(..., help="Folder the trainer writes round_<N> rollouts into."),
    state: Path = typer.Option(..., "--state", help="Campaign state folder (archive, memory, "
                                                    "checkpoints, curated/)."),
    interval: float = typer.Option(300.0, "--interval", min=1.0, help="Seconds between polls."),
    once: bool = typer.Option(False, "--once", help="One pass, then exit (for cron)."),
    complete_when: str = typer.Option("marker", "--complete-when",
                                      help="marker: a round is complete when round_<N>.done "
                                           "exists; present: when its final name appears "
                                           "(the trainer renames atomically)."),
    budget: int = typer.Option(64, "--budget", min=1, help="Candidates per round's campaign."),
    backend: str = typer.Option("auto", "--backend", help="auto, cpu, gpu or compile-only."),
    seed: int = typer.Option(0, "--seed", help="Campaign seed."),
    as_json: bool = typer.Option(False, "--json", help="With --once: print the outcome as JSON."),
    executor: str = typer.Option("local", "--executor",
                                 help="Where candidates are verified: local or ray."),
    address: str | None = typer.Option(None, "--address",
                                       help="With --executor ray: the cluster to join (auto = "
                                       "the running one); default: start a local one."),
) -> None:
    """Run the campaign on each complete round and write <state>/curated/round_<N+1>/."""
    from structcover.watcher import WatcherBusy, watch_once
    from structcover.watcher import watch as watch_loop

    if complete_when not in ("marker", "present"):
        fail(f"--complete-when must be 'marker' or 'present', got {complete_when!r}")
    if interval <= 0:
        fail(f"--interval must be > 0 seconds, got {interval}")
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(name)s %(message)s")
    if executor not in ("local", "ray"):
        fail(f"--executor must be 'local' or 'ray', got {executor!r}")
    if address is not None and executor != "ray":
        fail("--address applies to --executor ray only")
    options = {"budget": budget, "backend": backend, "seed": seed, "executor": executor,
               "address": address}
    try:
        if once:
            outcome = watch_once(folder, state, complete_when=complete_when,  # type: ignore[arg-type]
                                 options=options)
            if as_json:
                print_json(outcome)
            if outcome.failed:
                raise typer.Exit(1)
            return
        watch_loop(folder, state, interval_s=interval, complete_when=complete_when,  # type: ignore[arg-type]
                   options=options)
    except WatcherBusy as exc:
        fail(str(exc), code=3)
    except ValueError as exc:
        fail(str(exc))


def register(app: typer.Typer) -> None:
    """Add the watch command."""
    app.command("watch")(watch)
