"""``structcover verify``: is a candidate program equivalent to its task's reference?"""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import console, fail, print_json, print_table
from structcover.config import load_settings
from structcover.schema import TaskSpec, Verdict
from structcover.tools.data.corpus import corpus_root, find_task, load_task
from structcover.tools.data.text import read_source


def _resolve_reference(ref: str, task_file: Path | None) -> Path | None:
    """A spec's ``reference`` is a path relative to its YAML file or to the corpus root."""
    candidates = [Path(ref)]
    if task_file is not None:
        candidates.insert(0, task_file.parent / ref)
    candidates.append(corpus_root() / ref)
    return next((p for p in candidates if p.is_file()), None)


def load_task_and_reference(task: str, reference: Path | None) -> tuple[TaskSpec, str]:
    """Resolve ``--task`` (a YAML file or a corpus task id) and the reference's source.

    Raises:
        ValueError: The task or the reference cannot be found; the message says which.
    """
    path = Path(task)
    family_ref: str | None = None
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise ValueError(f"--task {task}: no such file")
        spec, task_file = load_task(path), path
    else:
        try:
            spec, family = find_task(task)
        except KeyError as exc:
            raise ValueError(f"--task {task}: not a file and not a corpus task id") from exc
        task_file, family_ref = None, family.reference.source
    if reference is not None:
        if not reference.is_file():
            raise ValueError(f"--reference {reference}: no such file")
        return spec, read_source(reference)
    if family_ref is not None:
        return spec, family_ref
    if spec.reference:
        found = _resolve_reference(spec.reference, task_file)
        if found is None:
            raise ValueError(f"task {spec.task_id}: reference {spec.reference!r} not found next "
                             "to the task file or in the corpus; pass --reference")
        return spec, read_source(found)
    raise ValueError(f"task {spec.task_id} names no reference; pass --reference")


def verify(
    candidate: Path = typer.Argument(..., help="The candidate program (.cu), or a KernelBench "
                                     "candidate (.py defining ModelNew)."),
    task: str = typer.Option(..., "--task", help="Task spec YAML file, or a corpus task id; for "
                             "a .py candidate the KernelBench problem (a .py file, or an id "
                             "within --problems)."),
    problems: Path | None = typer.Option(None, "--problems",
                                         help="KernelBench: the folder problem ids are "
                                         "resolved in (e.g. a KernelBench checkout's levels)."),
    reference: Path | None = typer.Option(None, "--reference",
                                          help="Reference program (default: the task's)."),
    backend: str | None = typer.Option(None, "--backend",
                                       help="auto, gpu, cpu or compile-only (default: settings)."),
    trials: int | None = typer.Option(None, "--trials", min=1,
                                      help="Seeded input sets (default 5)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed to replay a verdict's sizes "
                                    "and inputs (default: a fresh one, printed)."),
    config: Path | None = typer.Option(None, "--config", help="Settings YAML file."),
    include: list[Path] = typer.Option([], "--include", "-I",
                                       help="A folder of the programs' own headers "
                                       "(repeatable); passed to nvcc and NVRTC, and inlined "
                                       "for the sandboxed backends."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    allow_unsandboxed: bool = typer.Option(
        False, "--allow-unsandboxed",
        help="Where the OS sandbox is unavailable (see `structcover doctor`), compile and run "
             "untrusted programs anyway, with rlimits only. At your own risk."),
    executor: str = typer.Option("local", "--executor",
                                 help="local (this process) or ray (a Ray task; a GPU task for "
                                 "--backend gpu)."),
    address: str | None = typer.Option(None, "--address",
                                       help="With --executor ray: the cluster to join (auto = "
                                       "the running one); default: start a local one."),
    profile: bool = typer.Option(False, "--profile",
                                 help="With --backend cpu: also run the candidate's profile "
                                 "build once (the task's sizes) and report Nsight-Compute-like "
                                 "counters (memory requests, sectors, bank conflicts, atomics, "
                                 "barriers, divergence; docs/EMULATOR.md, Profiles)."),
) -> None:
    """Run CANDIDATE and the reference on the same seeded inputs and compare their outputs.

    Exit code 0 when equivalent (or compiled, on the compile-only backend), 1 when not, 2 for
    bad arguments or when the reference itself fails.
    """
    from structcover.tools.verify.equivalence import check_equivalence
    from structcover.tools.verify.select import BACKENDS, get_backend

    if not candidate.is_file():
        fail(f"candidate {candidate}: no such file")
    settings = load_settings(config).verify
    if candidate.suffix == ".py" or task.endswith(".py") or problems is not None:
        unused = [name for name, given in (("--reference", reference is not None),
                                           ("--include", bool(include)),
                                           ("--executor", executor != "local" or address))
                  if given]
        if profile:
            unused.append("--profile")
        if unused:
            fail(f"{', '.join(unused)}: not used by KernelBench tasks (the problem file is the "
                 "reference; the candidate runs in the local torch child)")
        if allow_unsandboxed or settings.allow_unsandboxed:
            from structcover.tools.verify.jail import set_allow_unsandboxed

            set_allow_unsandboxed(True)
        _verify_kernelbench(candidate, task, problems, backend or "auto", trials,
                            seed if seed is not None else settings.seed, as_json)
        return
    if allow_unsandboxed or settings.allow_unsandboxed:
        from structcover.tools.verify.jail import set_allow_unsandboxed

        set_allow_unsandboxed(True)
    for folder in include:
        if not folder.is_dir():
            fail(f"--include {folder}: no such directory")
    if include:
        settings = settings.model_copy(update={"include_dirs": [p.resolve() for p in include]})
    kind = backend or settings.backend
    if kind not in BACKENDS:
        fail(f"--backend {kind}: choose one of {', '.join(BACKENDS)}")
    if profile and kind != "cpu":
        fail(f"--profile: needs --backend cpu (the emulator counts), not {kind}")
    try:
        spec, ref_src = load_task_and_reference(task, reference)
        runner = get_backend(kind, settings=settings)
        from structcover.tools.compiler.includes import inline_includes

        cand_src = inline_includes(read_source(candidate), include)
        ref_src = inline_includes(ref_src, include)
        if executor != "local" or address is not None:
            verdict = _on_executor(executor, address, cand_src, ref_src, spec,
                                   settings.model_copy(update={"backend": kind}), seed, trials)
        else:
            verdict = check_equivalence(cand_src, ref_src, spec, backend=runner, trials=trials,
                                        seed=seed, settings=settings)
    except (ValueError, RuntimeError, ConnectionError) as exc:
        fail(str(exc))
    if profile:
        verdict = _with_profile(verdict, cand_src, spec, settings)
    _show(verdict, as_json)
    if verdict.equivalent is False or (verdict.failure and verdict.failure != "reference-failed"):
        raise typer.Exit(1)
    if verdict.failure == "reference-failed":
        raise typer.Exit(2)


def _verify_kernelbench(candidate: Path, task: str, problems: Path | None, backend: str,
                        trials: int | None, seed: int | None, as_json: bool) -> None:
    """``verify CAND.py --task PROBLEM``: the KernelBench protocol (tools/kernelbench)."""
    import secrets

    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench
    from structcover.tools.verify.jail import SandboxUnavailable

    if backend not in ("auto", "gpu", "cpu"):
        fail(f"--backend {backend}: a KernelBench task runs on auto, gpu or cpu")
    if problems is not None and not problems.is_dir():
        fail(f"--problems {problems}: no such directory")
    try:
        problem = resolve_problem(task, problems)
        verdict = verify_kernelbench(read_source(candidate), problem,
                                     backend=backend,  # type: ignore[arg-type]
                                     seed=seed if seed is not None else secrets.randbelow(2**31),
                                     trials=max(trials or 3, 2))
    except (ValueError, RuntimeError, SandboxUnavailable) as exc:
        fail(str(exc))
    _show(verdict, as_json)
    if verdict.failure == "reference-failed":
        raise typer.Exit(2)
    if verdict.equivalent is not True:
        raise typer.Exit(1)


def _on_executor(kind: str, address: str | None, cand_src: str, ref_src: str, spec: TaskSpec,
                 settings: object, seed: int | None, trials: int | None) -> Verdict:
    """The check as one task of ``--executor`` (ValueError for a bad executor name)."""
    from structcover.tools.executors import make_executor
    from structcover.tools.verify.batch import Candidate, verify_batch

    with make_executor(kind, address=address) as ex:
        return verify_batch([Candidate(cand_src, ref_src, spec)], executor=ex,
                            settings=settings, seed=seed, trials=trials)[0]  # type: ignore[arg-type]


def _with_profile(verdict: Verdict, source: str, spec: TaskSpec, settings: object) -> Verdict:
    """The verdict plus the candidate's profile counters (a separate run of its profile build,
    so the verdict itself is what an unprofiled check gives); a note when that run fails."""
    from structcover.tools.verify.profile import ProfileError, profile_program

    try:
        report = profile_program(source, spec, settings=settings)  # type: ignore[arg-type]
    except (ProfileError, ValueError) as exc:
        return verdict.model_copy(update={"notes": [*verdict.notes, f"profile: {exc}"]})
    return verdict.model_copy(update={"profile": report.to_dict()})


def _show_profile(profile: dict) -> None:
    from structcover.tools.verify.profile import MAXED, SUMMED

    kernels = list(profile.get("kernels", {}))
    rows = []
    for key in ("launches", *SUMMED, *MAXED):
        per = profile.get("per_output_element", {}).get(key)
        rows.append([key, profile["total"].get(key, 0), f"{per:.4g}" if per is not None else "",
                     *[profile["kernels"][k].get(key, 0) for k in kernels]])
    sizes = ", ".join(f"{k}={v}" for k, v in profile.get("sizes", {}).items())
    print_table(f"profile ({sizes}; {profile.get('output_elements')} output elements)",
                ["counter", "total", "per output element", *kernels], rows)


def _show(verdict: Verdict, as_json: bool) -> None:
    if as_json:
        print_json(verdict)
        return
    if verdict.profile:
        _show_profile(verdict.profile)
    print_table(f"verify {verdict.program_id} ({verdict.task_id})", ["field", "value"], [
        ["backend", verdict.backend], ["compiled", verdict.compiled],
        ["equivalent", verdict.equivalent], ["failure", verdict.failure],
        ["seed", verdict.seed], ["hacking flags", ", ".join(verdict.hacking_flags) or None],
        ["max abs error", verdict.max_abs_error], ["max rel error", verdict.max_rel_error],
        ["first mismatch", verdict.first_mismatch],
        ["median ms", verdict.timing.median_ms if verdict.timing else None],
        ["cv", verdict.timing.cv if verdict.timing else None],
        ["energy J", verdict.energy_j], ["speedup", verdict.speedup]])
    for note in verdict.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    if verdict.detail:
        console.print(verdict.detail, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add the verify command."""
    app.command("verify")(verify)
