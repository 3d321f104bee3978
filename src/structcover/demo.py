"""The offline demo: everything the tool does, on the shipped corpus, with no GPU or LLM.

Stages: load the corpus; verify every variant against its reference on the best backend
present; simulate three rounds of a collapsing policy (rewards from the timing model over each
program's measured CPU-emulator counters, labeled modelled); per round discover the features
that drive speed and diagnose coverage against an archive frozen at round 0; then run a
campaign on the last round (diagnose -> synthesize mutants of the nearest verified programs ->
verify each on the CPU emulator and check it lands in its bin -> record in memory) until the
budget or the coverage target, and show per-task SCov before and after; write the curated
data and the HTML report.

The quick demo (the default) fills the gaps of :data:`DEMO_TASKS` only, so that a newcomer
sees the whole story in minutes on two cores; the full demo fills every task's gaps.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from structcover.campaign import CampaignOptions, CampaignResult
from structcover.config import Settings, load_settings
from structcover.tools.data.corpus import TaskFamily, corpus_records, load_corpus
from structcover.tools.data.datasets import write_parquet


class FamilySummary(BaseModel):
    """One task family of the corpus and how its programs verified."""

    family: str
    tasks: int
    programs: int
    variants: list[str]
    verified: int = 0
    checked: int = 0
    failures: list[str] = Field(default_factory=list)


class RoundSummary(BaseModel):
    """What discovery and diagnosis found in one simulated round."""

    round: int
    rollouts: int
    f_star: list[str]
    critical: int
    archive_axes: list[str]
    scov: float
    bins_covered: int
    bins_total: int
    entropy: float
    collapse: str
    top_gaps: list[str]


class DemoResult(BaseModel):
    """What the demo did and where it wrote it."""

    output_dir: str
    backend: str = ""
    families: list[FamilySummary] = Field(default_factory=list)
    programs: int = 0
    rounds: list[RoundSummary] = Field(default_factory=list)
    campaign: CampaignResult | None = Field(
        None, description="the campaign on the last round: per-task SCov before and after, "
                          "programs added and how each was verified, gaps left and why")
    files: dict[str, str] = Field(default_factory=dict)
    rewards: str = Field("", description="where the simulated rounds' rewards come from "
                                         "(modelled: the timing model over measured emulator "
                                         "counters, and the GPU spec)")
    unprofiled: dict[str, str] = Field(default_factory=dict,
                                       description="task/program -> why it has no profile "
                                                   "(never drawn by the simulator)")
    notes: list[str] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict,
                                      description="wall seconds per stage: verify, simulate, "
                                                  "discover, campaign")


Progress = Callable[[str, int], Callable[[], None]]


def _no_progress(description: str, total: int) -> Callable[[], None]:
    return lambda: None


#: Corpus checks run at once without an executor (the demo's 2-core target machine).
CHECK_THREADS = 2


def verify_corpus(families: list[TaskFamily], settings: Settings, advance: Callable[[], None],
                  executor: Any = None) -> tuple[str, list[FamilySummary]]:
    """Check every variant of every task against the task's reference.

    Args:
        families: The corpus families.
        settings: The settings (``verify`` section used).
        advance: Called once per check.
        executor: A ``tools.executors`` executor to run the checks on as one batch (Ray);
            None checks them here, :data:`CHECK_THREADS` at a time (each check waits on its
            sandboxed compile and run, so threads keep the cores busy).

    Returns:
        The backend that ran and one summary per family.
    """
    from structcover.tools.verify.equivalence import check_equivalence
    from structcover.tools.verify.select import get_backend

    backend = get_backend(settings.verify.backend, settings=settings.verify)
    if executor is not None:
        batched = iter(_verify_on(executor, families, settings, backend.name, advance))
    else:
        from concurrent.futures import ThreadPoolExecutor

        def check(job: tuple[TaskFamily, Any, Any]) -> Any:
            family, task, variant = job
            verdict = check_equivalence(variant.source, family.reference.source, task,
                                        backend=backend, settings=settings.verify)
            advance()
            return verdict

        jobs = [(f, t, v) for f in families for t in f.tasks for v in f.variants]
        with ThreadPoolExecutor(max_workers=CHECK_THREADS) as pool:
            batched = iter(list(pool.map(check, jobs)))  # in job order
    summaries = []
    for family in families:
        summary = FamilySummary(family=family.name, tasks=len(family.tasks),
                                programs=len(family.programs),
                                variants=[v.name for v in family.variants])
        for task in family.tasks:
            for variant in family.variants:
                verdict = next(batched)
                summary.checked += 1
                if verdict.equivalent:
                    summary.verified += 1
                else:
                    why = f"{verdict.failure or 'not compared'} {verdict.detail}"
                    summary.failures.append(f"{task.task_id}/{variant.name}: {why}"[:200])
        summaries.append(summary)
    return backend.name, summaries


def _verify_on(executor: Any, families: list[TaskFamily], settings: Settings, backend: str,
               advance: Callable[[], None]) -> list[Any]:
    """Every (task, variant) check of the corpus as one batch on ``executor``, in order."""
    from structcover.tools.verify.batch import Candidate, verify_batch

    jobs = [Candidate(v.source, f.reference.source, t, v.name)
            for f in families for t in f.tasks for v in f.variants]
    seen = [0]

    def tick(done: int) -> None:
        for _ in range(done - seen[0]):
            advance()
        seen[0] = done

    return verify_batch(jobs, executor=executor,
                        settings=settings.verify.model_copy(update={"backend": backend}),
                        seed=settings.verify.seed, on_progress=tick)


def _round_summary(run: object, rollouts: int) -> RoundSummary:
    d = run.diagnosis  # type: ignore[attr-defined]
    return RoundSummary(
        round=d.round, rollouts=rollouts, f_star=[f.name for f in d.features if f.selected],
        critical=sum(f.tier == "critical" for f in d.features),
        archive_axes=list(d.archive_features),
        scov=d.scov, bins_covered=d.bins_covered, bins_total=d.bins_total,
        entropy=d.entropy.joint,
        collapse=(f"{d.collapse.kind}: "
                  f"{', '.join(k.feature for k in d.collapse.key_features) or 'joint'}"
                  if d.collapse.detected else "none"),
        top_gaps=[f"{g.kind} {g.bin}" for g in d.gaps[:3]])


#: Candidate budget of the demo's campaign (each candidate: mutation compile + emulator run).
#: An upper bound: on the 2-core machine the full demo's campaign runs out of operator chains
#: first (every open gap tried or without a plan) after about 330 candidates.
DEMO_BUDGET = 450
#: Targets verified at once and chosen per step by the demo's campaign: each verification
#: waits on sandboxed child processes, so three branches keep two cores busy, and sixteen
#: targets a step leave fewer step barriers where one slow serialized variant idles a core
#: (8 min -> 4.5 min against two branches and eight targets, same fills).
DEMO_CONCURRENCY, DEMO_TARGETS_PER_STEP = 3, 16
#: The tasks the quick demo's campaign fills (``structcover demo``; ``--full`` fills all 15).
#: Chosen by emulation cost alone, not by outcome: the five tasks whose campaign programs
#: took least time on the CPU emulator per program (0.5-0.8 s for 5 trials x 3 schedules,
#: measured on the 2-core machine, against 2-6.5 s for vector_add, relu_fp16, gemv, the
#: random SpMV and the scan, whose serialized "broadcast" programs emulate every thread of
#: a block at every barrier). The corpus check, the simulated rounds, discovery and the
#: frozen archive still cover every task, so the story is the same; only the gap filling is
#: limited to these tasks, and per-task SCov before and after is over them.
DEMO_TASKS = ("gemm", "layernorm", "reduction", "softmax", "spmv_csr_diagonal")


def demo_campaign_options(**fields: Any) -> CampaignOptions:
    """The demo campaign's options (CPU backend, :data:`DEMO_BUDGET`, the demo's branches and
    targets per step, the quick demo's :data:`DEMO_TASKS`), with ``fields`` overriding them
    (``tasks=None`` fills every task: the full demo)."""
    return CampaignOptions(**{"budget": DEMO_BUDGET, "backend": "cpu", "target_scov": 0.85,
                              "concurrency": DEMO_CONCURRENCY,
                              "targets_per_step": DEMO_TARGETS_PER_STEP,
                              "tasks": list(DEMO_TASKS), **fields})
#: Bootstrap resamples of the demo's discovery (stability of F* across resamples).
DEMO_BOOTSTRAP = 10


def run_demo(output_dir: Path, *, progress: Progress = _no_progress, rounds: int = 3,
             collapse: float = 0.6, collapse_feature: str | None = None, seed: int = 0,
             verify: bool = True, families: list[str] | None = None,
             campaign: CampaignOptions | None = None) -> DemoResult:
    """Run the demo end to end and write its outputs under ``output_dir``.

    Args:
        output_dir: Folder for the outputs; its ``state`` subfolder is recreated.
        progress: Factory ``(description, total) -> advance`` for progress bars.
        rounds: Simulated training rounds.
        collapse: How fast the simulated policy collapses per round (0..1).
        collapse_feature: Collapse onto this feature's corpus-wide mode (default: onto each
            task's fastest program).
        seed: Seed for the simulator, discovery and the archive.
        verify: Verify every corpus variant first.
        families: Corpus families to use (all when None).
        campaign: Options of the campaign on the last round (default: budget
            :data:`DEMO_BUDGET`, CPU backend, this seed); None runs it with those defaults.

    Returns:
        A summary of each stage.
    """
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.simulation.simulate import SimulationSettings, simulate
    from structcover.tools.verify.preflight import require_jail

    # The demo verifies programs and runs a campaign: say at once if the jail is missing
    # rather than show every variant failing and nothing filled.
    require_jail("the demo")
    settings = load_settings()
    output_dir = Path(output_dir)
    state = output_dir / "state"
    shutil.rmtree(state, ignore_errors=True)  # the demo always starts from round 0
    output_dir.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus()
    if families is not None:
        unknown = sorted(set(families) - {f.name for f in corpus})
        if unknown:
            raise ValueError(f"unknown corpus families {unknown}; known: "
                             f"{', '.join(f.name for f in corpus)}")
        corpus = [f for f in corpus if f.name in families]
    names = {f.name for f in corpus}
    records = pd.DataFrame([r for r in corpus_records() if r.get("family") in names])
    result = DemoResult(output_dir=str(output_dir), programs=len(records))
    result.files["corpus"] = str(write_parquet(records, output_dir / "corpus.parquet"))

    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        result.seconds[stage] = round(now - clock, 1)
        clock = now

    if verify:
        total = sum(len(f.tasks) * len(f.variants) for f in corpus)
        runner = _runner(campaign)
        try:
            result.backend, result.families = verify_corpus(
                corpus, settings, progress("verify corpus variants", total), runner)
        finally:
            if runner is not None:
                runner.close()
    else:
        result.families = [FamilySummary(family=f.name, tasks=len(f.tasks),
                                         programs=len(f.programs),
                                         variants=[v.name for v in f.variants]) for f in corpus]

    lap("verify")
    advance = progress(f"simulate {rounds} rounds", 1)
    table = simulate(SimulationSettings(rounds=rounds, collapse=collapse, seed=seed,
                                        collapse_feature=collapse_feature),
                     families=corpus)
    advance()
    result.files["rollouts"] = str(write_parquet(table, output_dir / "rollouts.parquet"))
    result.rewards = str(table.attrs.get("rewards", ""))
    result.unprofiled = dict(table.attrs.get("unprofiled", {}))
    counts = table.attrs.get("profiles", {})
    result.notes.append(f"simulated {len(table)} rollouts over {rounds} rounds (rewards "
                        f"{result.rewards}; labeled 'modelled'; profiles: "
                        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ")")

    lap("simulate")
    advance = progress("discover + diagnose per round", rounds)
    # Fewer bootstrap resamples than a real round's default: on the demo's data 10 keep the
    # same F* and archive in every round and halve the stage (measured on the 2-core machine).
    discovery = settings.discovery.model_copy(
        update={"bootstrap": min(settings.discovery.bootstrap, DEMO_BOOTSTRAP)})
    result.notes.append(f"discovery with {discovery.bootstrap} bootstrap resamples (the demo's "
                        f"setting; a real round uses {settings.discovery.bootstrap})")
    run = None
    for n in range(rounds):
        rows = table[table["round"] == n]
        run = run_diagnosis(rows, state, round=n, settings=settings.archive,
                            discovery_settings=discovery, seed=seed)
        result.rounds.append(_round_summary(run, len(rows)))
        advance()
    assert run is not None  # rounds >= 1
    lap("discover")
    result.campaign = _campaign(result.files["rollouts"], state, output_dir, rounds - 1,
                                campaign, seed, progress)
    lap("campaign")
    filled = sorted({c.task for c in result.campaign.coverage})
    total = int(table["task_id"].nunique())
    if len(filled) < total:
        result.notes.append(f"quick demo: the campaign fills the gaps of {len(filled)} of "
                            f"{total} tasks ({', '.join(filled)}: the cheapest to emulate); "
                            "`structcover demo --full` fills every task")
    # The campaign exports the curated data (new programs included) and the report.
    out = Path(result.campaign.files.get("curated_weighted_parquet", "")).parent
    result.files.update({k: v for k, v in result.campaign.files.items()})
    result.files["curated"] = str(out)
    result.files["state"] = str(state)
    return result


def _runner(options: CampaignOptions | None) -> Any:
    """The Ray executor of ``--executor ray`` for the corpus checks (None: in this process;
    the campaign makes its own from the same options)."""
    if options is None or options.executor != "ray":
        return None
    from structcover.tools.executors import make_executor

    return make_executor("ray", address=options.address)


def _campaign(rollouts: str, state: Path, output_dir: Path, last: int,
              options: CampaignOptions | None, seed: int, progress: Progress) -> CampaignResult:
    """The campaign on the last simulated round, exporting under ``output_dir``."""
    from structcover.campaign import run_campaign

    opts = (options or demo_campaign_options(seed=seed)).model_copy(
        update={"round": last, "output_dir": output_dir / "campaign", "resume": False})
    if opts.tasks is not None:  # the quick demo's tasks among the families this demo uses
        present = set(pd.read_parquet(rollouts, columns=["task_id"])["task_id"].astype(str))
        opts = opts.model_copy(update={"tasks": [t for t in opts.tasks if t in present]
                                       or None})
    advance = progress(f"campaign (budget {opts.budget} candidates)", opts.budget)
    seen = [0]

    def tick(values: dict) -> None:
        for _ in range(int(values.get("candidates", 0)) - seen[0]):
            advance()
        seen[0] = max(seen[0], int(values.get("candidates", 0)))

    shutil.rmtree(state / "campaign", ignore_errors=True)
    shutil.rmtree(state / "memory", ignore_errors=True)
    return run_campaign(Path(rollouts), state, opts, progress=tick)
