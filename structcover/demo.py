"""The offline demo: everything the tool does, on the shipped corpus, with no GPU or LLM.

Stages: load the corpus; verify every variant against its reference on the best backend
present; simulate three rounds of a collapsing policy (rewards from the analytical GPU model,
labeled simulated); per round discover the features that drive speed and diagnose coverage
against an archive frozen at round 0; write the curated data and the HTML report.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, Field

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
    files: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


Progress = Callable[[str, int], Callable[[], None]]


def _no_progress(description: str, total: int) -> Callable[[], None]:
    return lambda: None


def verify_corpus(families: list[TaskFamily], settings: Settings, advance: Callable[[], None],
                  ) -> tuple[str, list[FamilySummary]]:
    """Check every variant of every task against the task's reference.

    Returns:
        The backend that ran and one summary per family.
    """
    from structcover.tools.verify.equivalence import check_equivalence  # noqa: PLC0415
    from structcover.tools.verify.select import get_backend  # noqa: PLC0415

    backend = get_backend(settings.verify.backend, settings=settings.verify)
    summaries = []
    for family in families:
        summary = FamilySummary(family=family.name, tasks=len(family.tasks),
                                programs=len(family.programs),
                                variants=[v.name for v in family.variants])
        for task in family.tasks:
            for variant in family.variants:
                verdict = check_equivalence(variant.source, family.reference.source, task,
                                            backend=backend, settings=settings.verify)
                summary.checked += 1
                if verdict.equivalent:
                    summary.verified += 1
                else:
                    summary.failures.append(f"{task.task_id}/{variant.name}: "
                                            f"{verdict.failure or 'not compared'} {verdict.detail}"[:200])
                advance()
        summaries.append(summary)
    return backend.name, summaries


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


def run_demo(output_dir: Path, *, progress: Progress = _no_progress, rounds: int = 3,
             collapse: float = 0.6, collapse_feature: str | None = None, seed: int = 0,
             verify: bool = True) -> DemoResult:
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

    Returns:
        A summary of each stage.
    """
    from structcover.tools.coverage.diagnosis_state import run_diagnosis  # noqa: PLC0415
    from structcover.tools.report.html_report import write_report  # noqa: PLC0415
    from structcover.tools.curation.sampling import export_curation  # noqa: PLC0415
    from structcover.tools.simulation.simulate import SimulationSettings, simulate  # noqa: PLC0415

    settings = load_settings()
    output_dir = Path(output_dir)
    state = output_dir / "state"
    shutil.rmtree(state, ignore_errors=True)  # the demo always starts from round 0
    output_dir.mkdir(parents=True, exist_ok=True)
    families = load_corpus()
    records = pd.DataFrame(corpus_records())
    result = DemoResult(output_dir=str(output_dir), programs=len(records))
    result.files["corpus"] = str(write_parquet(records, output_dir / "corpus.parquet"))

    if verify:
        total = sum(len(f.tasks) * len(f.variants) for f in families)
        result.backend, result.families = verify_corpus(
            families, settings, progress("verify corpus variants", total))
    else:
        result.families = [FamilySummary(family=f.name, tasks=len(f.tasks),
                                         programs=len(f.programs),
                                         variants=[v.name for v in f.variants]) for f in families]

    advance = progress(f"simulate {rounds} rounds", 1)
    table = simulate(SimulationSettings(rounds=rounds, collapse=collapse, seed=seed,
                                        collapse_feature=collapse_feature),
                     families=families)
    advance()
    result.files["rollouts"] = str(write_parquet(table, output_dir / "rollouts.parquet"))
    result.notes.append(f"simulated {len(table)} rollouts over {rounds} rounds (rewards from "
                        "the analytical GPU model: labeled 'simulated')")

    advance = progress("discover + diagnose per round", rounds)
    run = None
    for n in range(rounds):
        rows = table[table["round"] == n]
        run = run_diagnosis(rows, state, round=n, settings=settings.archive,
                            discovery_settings=settings.discovery, seed=seed)
        result.rounds.append(_round_summary(run, len(rows)))
        advance()
    assert run is not None  # rounds >= 1
    curated = export_curation(run.table, run.archive, output_dir / "curated" / f"round_{rounds}",
                              gaps=run.diagnosis.gaps, diagnosis_json=run.diagnosis.to_json(),
                              seed=seed)
    result.files.update({f"curated_{k}": v for k, v in curated.files.items()})
    report = write_report(output_dir / "report.html", run.diagnosis, archive=run.archive,
                          table=run.table, history=run.history, simulated=run.simulated)
    result.files["report"] = str(report)
    result.files["state"] = str(state)
    return result
