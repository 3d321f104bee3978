"""``structcover mutate``: apply one structure mutation operator to a program, or list them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from structcover.commands._output import fail, print_json, print_table
from structcover.tools.data.text import read_source

if TYPE_CHECKING:
    from structcover.schema import TaskSpec


def _resolve_task(task: str | None) -> TaskSpec | None:
    if task is None:
        return None
    from structcover.tools.data.corpus import resolve_task

    try:
        return resolve_task(task)
    except ValueError as exc:
        fail(str(exc))


def _list(as_json: bool, state: Path | None) -> None:
    from structcover.tools.mutations.base import registry
    from structcover.tools.mutations.stats import load_stats

    try:
        table = load_stats(state_dir=state)
    except ValueError as exc:
        fail(str(exc))
    rows: list[dict[str, Any]] = []
    for name, info in registry().items():
        st = table.operators.get(name)
        rows.append({
            "operator": name, "family": info.family, "language": info.language,
            "summary": info.summary,
            "moves": info.moves,
            "stats": st.model_dump() if st else None,
        })
    if as_json:
        print_json(rows)
        return
    arrows = {"up": "+", "down": "-", "set": "~"}
    print_table(
        f"mutation operators (stats: backend={table.backend}, {table.programs} programs)",
        ["operator", "lang", "moves", "applied", "equiv/variants", "moved", "families"],
        [[r["operator"], r["language"], " ".join(f"{k}{arrows[v]}" for k, v in r["moves"].items()),
          f"{s['applied']}/{s['tried']}" if (s := r["stats"]) else "-",
          f"{s['equivalent']}/{s['variants']}" if s else "-",
          s["moved_as_promised"] if s else "-",
          len(s["families_equivalent"]) if s else "-"] for r in rows])


def _check_kernelbench(variants: list[Any], task: str, backend: str) -> list[Any]:
    """Each variant verified against the KernelBench problem ``task`` (``moved`` not checked)."""
    from pydantic import BaseModel

    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench

    try:
        problem = resolve_problem(task)
    except ValueError as exc:
        fail(str(exc))
    kb_backend = backend if backend in ("auto", "cpu", "gpu") else "cpu"

    class KernelBenchCheck(BaseModel):
        equivalent: bool | None
        moved: str = "not checked"
        verdict: dict[str, Any]

    out = []
    for v in variants:
        verdict = verify_kernelbench(v.source, problem, backend=kb_backend)  # type: ignore[arg-type]
        out.append(KernelBenchCheck(equivalent=verdict.equivalent,
                                    verdict=verdict.model_dump(mode="json")))
    return out


def mutate(
    file: Path | None = typer.Argument(None, help="The .cu program, KernelBench .py "
                                       "candidate or Triton .py program to mutate."),
    op: str | None = typer.Option(None, "--op", help="Operator name (see --list)."),
    task: str | None = typer.Option(None, "--task",
                                    help="TaskSpec YAML or corpus task id (a KernelBench "
                                    "problem file for a .py candidate): verify variants on it."),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="Write the first variant here (more: OUT.1.cu ...)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    list_ops: bool = typer.Option(False, "--list", help="List operators, effects and statistics."),
    state: Path | None = typer.Option(None, "--state", help="State dir with operator_stats.json."),
    backend: str = typer.Option("cpu", "--backend", help="Backend for --task verification."),
) -> None:
    """Apply a structure mutation operator; with --task, verify each variant (equivalence
    against the input program and the promised feature moves)."""
    if list_ops:
        _list(as_json, state)
        return
    if file is None or op is None:
        fail("give FILE and --op NAME (or --list)")
    if not file.exists():
        fail(f"{file}: no such file")
    from structcover.tools.mutations.base import get_operator

    try:
        info = get_operator(op)
    except KeyError as exc:
        fail(exc.args[0])
    source = read_source(file)
    from structcover.tools.mutations._triton import is_triton_program
    from structcover.tools.mutations.embedded import is_kernelbench_candidate, run_operator

    # A KernelBench candidate is mutated inside its load_inline CUDA; variants are whole files.
    # A Triton program is a KernelBench-format candidate too (verified against a problem file).
    kernelbench = is_kernelbench_candidate(source) or is_triton_program(source)
    result = run_operator(info.name, source)
    spec = None if kernelbench else _resolve_task(task)
    checks: list[Any] = []
    if kernelbench and task is not None and result.variants:
        checks = _check_kernelbench(result.variants, task, backend)
    if spec is not None and result.variants:
        from structcover.tools.mutations.stats import check_variant
        from structcover.tools.verify.select import get_backend

        be = get_backend(backend)
        ok, why = be.available()
        if not ok:
            fail(f"backend {backend} unavailable: {why}")
        checks = [check_variant(v, source, spec, family=spec.family or spec.task_id,
                                program=file.stem, backend=be) for v in result.variants]
    if output is not None and result.variants:
        for i, variant in enumerate(result.variants):
            path = output if i == 0 else output.with_suffix(f".{i}{output.suffix}")
            path.write_text(variant.source)
    if as_json:
        print_json({"result": result, "checks": checks})
    else:
        if not result.variants:
            fail(f"{op} does not apply: {result.not_applicable}", code=1)
        print_table(f"{op} on {file.name}", ["#", "params", "promised", "equivalent", "moved"],
                    [[i, variant.params, variant.promised,
                      checks[i].equivalent if checks else "not run",
                      checks[i].moved if checks else "not run"]
                     for i, variant in enumerate(result.variants)])
        if output is None:
            typer.echo(result.variants[0].source)
    if not result.variants:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``mutate`` to the CLI."""
    app.command("mutate")(mutate)
