"""``structcover features``: the structural feature table S(y) of a dataset or one file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import typer
from rich.markup import escape

from structcover.commands._output import err_console, fail, print_json, print_table, progress
from structcover.config import load_settings
from structcover.tools.data.datasets import DatasetError, load_trajectories, write_parquet
from structcover.tools.features.extract import apply_source_encoding, extract_table
from structcover.tools.features.patterns import PatternSet, mine_patterns

_SUMMARY = ["kernel.count", "mem.global_coalesced", "mem.global_strided", "smem.tiled",
            "sync.block_barriers", "warp.shuffles", "parse.error_nodes"]


def _compiler_columns(records: pd.DataFrame, arch: str, block_size: int | None,
                      enabled: bool, include_dirs: list[Path] | None = None,
                      settings: Any = None, runner: Any = None) -> pd.DataFrame:
    """Compiler features of every program: batches of compiles on ``runner`` (the
    ``--executor``), or here, serially, when None."""
    try:
        from structcover.tools.compiler.batch import compiler_feature_rows
    except ImportError as exc:
        fail(f"--compiler needs structcover.tools.compiler ({exc})")
    with progress(enabled) as bar:
        task = bar.add_task("compiling", total=len(records))
        rows = compiler_feature_rows(
            list(records["program"]), arch=arch, block_size=block_size,
            include_dirs=include_dirs, settings=settings, executor=runner,
            on_progress=lambda n: bar.update(task, completed=n))
    return pd.DataFrame(rows, index=records.index)


def _profile_columns(records: pd.DataFrame, data: Path, task: Path | None,
                     enabled: bool) -> pd.DataFrame:
    """``profile.*`` columns (tools/simulation/kb_profile_table.py); a row that cannot run
    has ``profile.reason``."""
    from structcover.tools.simulation.kb_profile_table import profile_columns

    if task is not None and not task.is_file():
        fail(f"--task {task}: no such file")
    with progress(enabled) as bar:
        job = bar.add_task("profiling", total=len(records))
        try:
            return profile_columns(records, data, task,
                                   on_progress=lambda n: bar.update(job, completed=n))
        except (ValueError, SyntaxError) as exc:
            fail(f"--task {task}: {exc}")
    raise AssertionError("unreachable")  # fail() exits


def _table(records: pd.DataFrame, fs: Any, workers: int | None, no_cache: bool,
           pset: PatternSet | None, runner: Any, on_progress: Any) -> pd.DataFrame:
    return extract_table(
        zip(records["program_id"], records["program"], strict=True),
        # A pool costs more than it saves on a handful of programs.
        workers=1 if len(records) < 32 else (fs.workers if workers is None else workers),
        cache_dir=None if no_cache else fs.cache_dir, patterns=pset,
        max_source_bytes=fs.max_source_bytes, on_progress=on_progress, executor=runner)


def features(
    data: Path = typer.Argument(..., help="JSONL, Parquet, saved HF dataset, .cu/.py file "
                                "or folder."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the table (.parquet)."),
    as_json: bool = typer.Option(False, "--json", help="Print per-program features as JSON."),
    workers: int | None = typer.Option(None, "--workers", min=0,
                                       help="Process pool size (0 = per core)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the cache."),
    patterns: Path | None = typer.Option(None, "--patterns",
                                         help="Count a saved pattern set (JSON)."),
    mine: Path | None = typer.Option(None, "--mine-patterns",
                                     help="Mine patterns from DATA, save them here, count them."),
    compiler: bool = typer.Option(False, "--compiler",
                                  help="Add compiler features (ptxas, occupancy)."),
    arch: str | None = typer.Option(None, "--arch", help="Target arch for --compiler."),
    block_size: int | None = typer.Option(None, "--block-size", min=1, max=1024,
                                          help="Block size for occupancy."),
    include: list[Path] = typer.Option([], "--include", "-I",
                                       help="Header folder for --compiler (repeatable); passed "
                                       "to nvcc and NVRTC."),
    profile: bool = typer.Option(False, "--profile",
                                 help="Add profile.* features: KernelBench candidates run on "
                                 "the CPU emulator's profile build (needs --task or a "
                                 "`problem` column)."),
    task_file: Path | None = typer.Option(None, "--task",
                                     help="With --profile: the KernelBench problem file of "
                                     "every row."),
    config: Path | None = typer.Option(None, "--config", help="Settings YAML."),
    executor: str = typer.Option("local", "--executor",
                                 help="Where extraction runs: local (process pool) or ray."),
    address: str | None = typer.Option(None, "--address",
                                       help="With --executor ray: the cluster to join (auto = "
                                       "the running one); default: start a local one."),
) -> None:
    """Extract raw structural features: one row per program, one column per feature.

    Exit code 3 when our own machinery failed on every program (a worker that cannot import
    the package, a missing binary): the cause is printed on one line. A program with bad
    input is quarantined and the run goes on.
    """
    settings = load_settings(config)
    fs = settings.features
    try:
        records = load_trajectories(data).records
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    if records.empty:
        fail(f"{data}: no programs found")
    records = records.drop_duplicates("program_id").reset_index(drop=True)
    pset: PatternSet | None = None
    try:
        if patterns is not None:
            pset = PatternSet.load(patterns)
        elif mine is not None:
            pset = mine_patterns(list(records["program"]))
            pset.save(mine)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    show = not as_json and err_console.is_terminal
    runner = None
    if executor != "local" or address is not None:
        from structcover.tools.executors import make_executor
        try:
            runner = make_executor(executor, workers=workers or 0, address=address)
        except (ValueError, RuntimeError, ConnectionError) as exc:
            fail(str(exc))
    with progress(show) as bar:
        task = bar.add_task("features", total=len(records))
        try:
            table = _table(records, fs, workers, no_cache, pset, runner,
                           lambda n: bar.update(task, completed=n))
        except (ImportError, OSError) as exc:  # our machinery (the pool's workers), never input
            fail(f"features: extraction failed (our failure, not the inputs'): "
                 f"{type(exc).__name__}: {exc}", code=3)
    if runner is not None:
        for q in table.attrs.get("quarantined", []):
            err_console.print(f"[yellow]quarantined[/] {q['program_id']}: {q['reason']}")
        _report_failures(table.attrs.get("failures", []), len(records), runner)
        records = records[records["program_id"].astype(str).isin(table["program_id"])]
        records = records.reset_index(drop=True)
    table = apply_source_encoding(table, records)
    table.insert(1, "task_id", records["task_id"].to_numpy())
    if compiler:
        for folder in include:
            if not folder.is_dir():
                fail(f"--include {folder}: no such directory")
        compile_on = runner
        pool = fs.workers if workers is None else workers
        if compile_on is None and len(records) >= 32 and pool != 1:
            from structcover.tools.executors import LocalExecutor

            compile_on = LocalExecutor(pool)  # the default executor: a local process pool
        extra = _compiler_columns(records, arch or settings.compiler.arch, block_size, show,
                                  list(include) or None, settings.compiler, compile_on)
        table = pd.concat([table, extra.reset_index(drop=True)], axis=1)
    if profile:
        table = pd.concat([table, _profile_columns(records, data, task_file, show)
                           .reset_index(drop=True)], axis=1)
    if runner is not None:
        runner.close()
    if output is not None:
        try:
            write_parquet(table, output)
        except OSError as exc:
            fail(f"{output}: cannot write ({exc})")
    if as_json:
        print_json([{"program_id": row.pop("program_id"), "task_id": row.pop("task_id"),
                     "values": row} for row in table.to_dict(orient="records")])
        return
    print_table(f"features of {data} ({len(table)} programs, {table.shape[1] - 2} features)",
                ["program_id", *_SUMMARY],
                [[r["program_id"], *(r[c] for c in _SUMMARY)]
                 for r in table.head(20).to_dict(orient="records")])
    if len(table) > 20:
        err_console.print(f"… {len(table) - 20} more rows")
    if output is not None:
        err_console.print(f"wrote {output}")


def _report_failures(failures: list[dict[str, str]], total: int, runner: Any) -> None:
    """Name every program our machinery failed on; fail the run when it failed on all of them.

    These are not the programs' fault (quarantine is for bad input): a run that lost every
    program this way would otherwise exit 0 with an empty table.
    """
    for f in failures:
        err_console.print(f"[red]failed (ours, not the input's)[/] {escape(f['program_id'])}: "
                          f"{escape(f['cause'])}", highlight=False)
    if failures and len(failures) == total:
        runner.close()
        fail(f"features: extraction failed on all {total} programs (our failure, not the "
             f"inputs'): {failures[0]['cause']}", code=3)
    if failures:
        err_console.print(f"[yellow]{len(failures)} of {total} programs failed in our machinery "
                          "and are missing from the table; rerun to retry them[/]")


def register(app: typer.Typer) -> None:
    """Add the features command."""
    app.command("features")(features)
