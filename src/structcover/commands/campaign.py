"""``structcover campaign``: fill coverage gaps with verified new programs, then export the
round's curated data, prompts, contrast pairs and report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from structcover.commands._output import (
    console,
    err_console,
    fail,
    print_json,
    print_table,
)


def _live(enabled: bool):
    from contextlib import nullcontext

    from rich.live import Live

    return Live(console=err_console, refresh_per_second=4, transient=False) if enabled \
        else nullcontext()


def _line(state: dict[str, Any]) -> str:
    cov = state.get("coverage") or []
    scov = sum(c["scov"] for c in cov) / len(cov) if cov else 0.0
    return (f"step {state.get('iteration', 0)}  targets {len(state.get('planned') or [])}  "
            f"candidates {state.get('candidates', 0)}  verified {state.get('verified', 0)}  "
            f"SCov now {scov:.1%}")


def campaign(
    data: Path = typer.Argument(..., help="Rollouts (Parquet, JSONL, CSV, dataset folder)."),
    state: Path = typer.Option(..., "--state", help="Campaign state folder (archive, memory, "
                                                    "checkpoints, exports)."),
    budget: int = typer.Option(64, "--budget", min=1, help="Most candidate programs to try."),
    target_scov: float = typer.Option(0.85, "--target-scov", min=0.01, max=1.0,
                                      help="Stop once every task's feasible SCov reaches this."),
    backend: str = typer.Option("auto", "--backend",
                                help="Equivalence backend: auto, cpu, gpu, compile-only."),
    wall_time: float | None = typer.Option(None, "--wall-time",
                                           help="Wall-clock budget of this run, s (checked "
                                           "between steps)."),
    gpu_seconds: float | None = typer.Option(None, "--gpu-seconds", help="GPU budget, s."),
    round: int | None = typer.Option(None, "--round", min=0, help="Round of DATA (default: last)."),
    seed: int = typer.Option(0, "--seed"),
    resume: bool = typer.Option(False, "--resume",
                                help="Continue the checkpointed campaign: after a kill, or "
                                "under new budgets after a budget stopped it."),
    approve: bool = typer.Option(False, "--approve",
                                 help="Show the planned targets and budget; ask before spending."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Export folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    llm: str | None = typer.Option(None, "--llm", help="OpenAI-compatible endpoint (e.g. "
                                   "http://127.0.0.1:8000/v1 of `vllm serve`) for the LLM "
                                   "policies; key from STRUCTCOVER_LLM_API_KEY/OPENAI_API_KEY."),
    model: str | None = typer.Option(None, "--model", help="Model name served at --llm."),
    executor: str = typer.Option("local", "--executor",
                                 help="Where candidates are verified: local or ray."),
    address: str | None = typer.Option(None, "--address",
                                       help="With --executor ray: the cluster to join (auto = "
                                       "the running one); default: start a local one."),
    problems: Path | None = typer.Option(None, "--problems",
                                         help="KernelBench problems folder: task ids of "
                                         "KernelBench rollouts name problems in it."),
    task: list[str] = typer.Option(None, "--task",
                                   help="Fill gaps of this task only (repeatable; default: "
                                   "every task). Coverage and the target are over these."),
) -> None:
    """Diagnose, then synthesize and verify programs for the open bins until a budget or the
    coverage target stops it; export the round's outputs."""
    try:
        from structcover.campaign import CampaignOptions, run_campaign
    except ImportError as exc:  # LangGraph / Chroma missing from a trimmed install
        fail(f"the campaign needs LangGraph and Chroma ({exc}); pip install structcover")
        return
    if address is not None and executor != "ray":
        fail("--address applies to --executor ray only")
    try:
        options = CampaignOptions(budget=budget, target_scov=target_scov, backend=backend,
                                  wall_time_s=wall_time, gpu_seconds=gpu_seconds, round=round,
                                  seed=seed, resume=resume, approve=approve, output_dir=output,
                                  llm_url=llm, llm_model=model, executor=executor,
                                  address=address, problems=problems, tasks=task or None)
    except ValueError as exc:
        fail(f"bad option: {exc}")
        return

    def ask(plan: dict[str, Any]) -> bool:
        err_console.print(f"planned targets ({len(plan['targets'])}):")
        for t in plan["targets"]:
            err_console.print(f"  {t}")
        err_console.print(f"budget: {plan['budget']} candidates "
                          f"({plan['candidates_used']} used), wall time {plan['wall_time_s']}, "
                          f"GPU seconds {plan['gpu_seconds']}")
        return typer.confirm("spend it?", default=False, err=True)

    with _live(not as_json) as live:
        def show(values: dict[str, Any]) -> None:
            if live is not None:
                live.update(_line(values))
        from structcover.tools.verify.jail import SandboxUnavailable

        try:
            result = run_campaign(data, state, options, progress=show,
                                  approver=ask if approve else None)
        except (ValueError, SandboxUnavailable) as exc:
            fail(str(exc))
            return
    pruned = _prune_build_cache()
    if as_json:
        print_json(result)
        return
    console.print(f"round {result.round}: F* = {', '.join(result.f_star) or '(none)'}; "
                  f"drift: {', '.join(result.drift) or 'none'}")
    print_table(f"SCov over feasible bins (mean {result.scov_before:.1%} -> "
                f"{result.scov_after:.1%})", ["task", "before", "after", "feasible bins",
                                              "proven infeasible"],
                [[c.task, f"{c.before:.1%}", f"{c.after:.1%}", c.bins_feasible,
                  c.bins_infeasible] for c in result.coverage])
    by_origin = ", ".join(f"{n} {o}" for o, n in result.added_by_origin.items()) or "none"
    print_table(f"programs added ({len(result.added)}: {by_origin}; from {result.candidates} "
                "candidates)", ["task", "bin", "origin", "operators", "verified"],
                [[a.task, a.bin, a.origin, " + ".join(a.operators) or "(written by the LLM)",
                  f"{a.verification.backend}: {', '.join(a.verification.checks)}"]
                 for a in result.added])
    if result.reweighted:
        console.print(f"re-used existing programs (reweighting, not new): "
                      f"{len(result.reweighted)}")
    print_table(f"gaps left ({len(result.open_gaps)})", ["task", "bin", "status", "why"],
                [[g.task, g.bin, g.status, g.reason[:160]] for g in result.open_gaps[:30]])
    console.print(f"stopped: {result.stopped}")
    if result.llm:
        from structcover.agents.llm import fallback_lines

        console.print(f"LLM {result.llm['model']} at {result.llm['base_url']}: "
                      + ", ".join(f"{a} {u['ok']} ok / {u['fallbacks']} offline, "
                                  f"{u['input_tokens']}+{u['output_tokens']} tokens, "
                                  f"{u['latency_s']:.1f} s" for a, u in
                                  result.llm["agents"].items()))
        for line in fallback_lines(result.llm):
            console.print(f"  {line}")
    for name, path in result.files.items():
        console.print(f"  {name}: {path}")
    if pruned:
        console.print(pruned)


def _prune_build_cache() -> str:
    """The emulator's build cache back under ``verify.cache_max_gb`` after a run (each
    verified candidate leaves a library): a line to show when anything was removed."""
    from structcover.tools.verify.cache_prune import prune_after_run

    line, failure = prune_after_run()
    if failure:  # the run's outputs are written; the next run prunes again
        err_console.print(f"warning: {failure}")
    return line


def register(app: typer.Typer) -> None:
    """Add the campaign command."""
    app.command("campaign")(campaign)
