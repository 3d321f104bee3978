"""Everything a campaign needs before its graph runs: the data with features, the round's
diagnosis over the frozen archive, the memory store seeded with the data's programs, the
bound tools and agents, and the exporter of the round's outputs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from structcover.agents.diagnoser import Diagnoser
from structcover.agents.ports import Toolbox
from structcover.agents.synthesizer import Synthesizer
from structcover.campaign.mutate import RegistryMutate
from structcover.campaign.toolbox import (
    ArchiveCoverage,
    SerialStore,
    StoreMemory,
    finite,
)
from structcover.graphs.campaign import CampaignContext, Limits
from structcover.schema import content_hash

if TYPE_CHECKING:
    from structcover.campaign import CampaignOptions


#: Verified parents the Synthesizer plans for at a time (it goes on to the next group, up to
#: four groups, when these gave nothing), and (parent, chain) options it applies per proposal.
#: A collapsed round's nearest programs are often variants an operator does not apply to
#: (vectorized, coarsened); options that do not apply are skipped by a dry run without
#: counting, so the 16 go to chains that compile.
SYNTH_PARENTS, SYNTH_OPTIONS = 6, 16


@dataclass
class Prepared:
    """A campaign ready to run."""

    state_dir: Path
    round: int
    context: CampaignContext
    table: pd.DataFrame
    run: Any  # tools.coverage.diagnosis_state.DiagnosisRun
    store: Any
    notes: list[str] = field(default_factory=list)
    llm: Any = None  # agents.llm.LLMClient when the campaign runs with --llm
    #: Gap bins an earlier round's program reaches: re-using it is reweighting, not a fill.
    reweighting: list[str] = field(default_factory=list)
    executor: Any = None  # tools.executors executor of --executor ray (None: this process)

    def close(self) -> None:
        """Release the memory store (and a Ray cluster the campaign started)."""
        self.store.close()
        if self.executor is not None:
            self.executor.close()


def read_rollouts(data: Path) -> pd.DataFrame:
    """The rollouts with features, checked for what a campaign needs.

    Raises:
        ValueError: Unreadable data, or no ``task_id`` / ``program`` column.
    """
    from structcover.tools.mining.reader import read_table

    table = read_table(Path(data)).records
    missing = [c for c in ("task_id", "program") if c not in table.columns]
    if missing:
        raise ValueError(f"{data}: a campaign needs the columns {missing} (program text per "
                         "task) to mutate and verify programs")
    if "program_id" not in table.columns:
        table = table.assign(program_id=table["program"].astype(str).map(content_hash))
    return table


def prepare(data: Path, state_dir: Path, options: CampaignOptions) -> Prepared:
    """Diagnose the round, open memory and bind the tools."""
    from structcover.config import load_settings
    from structcover.tools.coverage.diagnosis_state import run_diagnosis
    from structcover.tools.store import MemoryStore

    settings = load_settings()
    table = read_rollouts(data)
    _prewarm_kernelbench(options)
    run = run_diagnosis(table, state_dir, round=options.round, settings=settings.archive,
                        discovery_settings=settings.discovery, seed=options.seed)
    d = run.diagnosis
    n = int(d.round or 0)
    rows = run.table.reset_index(drop=True)
    proofs: dict[str, dict[str, str]] = {"*": {p.bin: p.reason for p in d.infeasible}}
    focus = focus_rows(rows, options.tasks)
    rule_proofs = task_rule_proofs(focus, run.archive)
    proofs.update(rule_proofs)
    coverage = ArchiveCoverage(
        table=focus, archive=run.archive, proofs=proofs,
        f_star=[f.name for f in d.features if f.selected], drift=_drift(state_dir, n),
        priority={g.bin: (g.priority, g.kind, list(g.reasons)) for g in d.gaps})
    store = SerialStore(lambda: MemoryStore.open(state_dir / "memory"))
    _seed_memory(store, _parents(focus_rows(table, options.tasks), focus,
                                 run.archive, n), coverage, n)
    _store_rule_proofs(store, rule_proofs, n)
    memory = StoreMemory(store, coverage)
    from structcover.campaign.bindings import bind_planner, bind_verifier

    verifier = bind_verifier(coverage, run.archive, options.backend, settings)
    kb_notes = _kernelbench_specs(verifier, rows, getattr(options, "problems", None))
    executor = _executor(options)
    # --executor ray: each Send branch's operator applications (with their compile checks)
    # and its candidate's check run as Ray tasks.
    verifier.executor = executor
    tools = Toolbox(coverage=coverage, memory=memory, planner=bind_planner(store, run.archive),
                    mutate=RegistryMutate(executor=executor),
                    verify=verifier,
                    known_ids=_known_ids(table), family_of=_families(rows))
    limits = Limits(budget=options.budget, target_scov=options.target_scov,
                    max_retries=options.max_retries, targets_per_step=options.targets_per_step,
                    wall_time_s=options.wall_time_s, gpu_seconds=options.gpu_seconds,
                    approve=options.approve, seed=options.seed)
    prep = Prepared(state_dir=state_dir, round=n, context=CampaignContext(
        tools=tools, limits=limits, diagnoser=Diagnoser(max_failures=3),
        synthesizer=Synthesizer(neighbours=SYNTH_PARENTS, max_options=SYNTH_OPTIONS), round=n),
        table=rows, run=run, store=store, notes=list(run.notes) + kb_notes, executor=executor)
    from structcover.tools.curation.gap_report import earlier_round_bins, reweighting_lines

    prep.reweighting = reweighting_lines(earlier_round_bins(table, run.archive, n))
    from structcover.campaign.export import exporter

    prep.context.export = exporter(prep, options)
    from structcover.agents.llm_setup import attach_llm

    attach_llm(prep, options, settings)
    return prep


def _prewarm_kernelbench(options: CampaignOptions) -> None:
    """A campaign over KernelBench problems on the CPU path: start two candidate zygotes now,
    so that their torch import overlaps the diagnosis (a fresh process's first candidates
    otherwise wait for it: 25 s against 10 s for 16 candidates on 2 cores)."""
    if getattr(options, "problems", None) is None:
        return
    from structcover.tools.kernelbench.sandbox import prewarm_cpu_children
    from structcover.tools.kernelbench.verify import pick_backend

    try:
        if pick_backend(options.backend) == "cpu":
            prewarm_cpu_children(2)
    except (RuntimeError, ValueError):
        return  # no usable backend: verification says so with its own message


def _kernelbench_specs(verifier: Any, rows: pd.DataFrame, problems: Path | None) -> list[str]:
    """Give the verifier a ``kernelbench`` spec for every task that is not a corpus task and
    names a problem (an id within ``--problems DIR``, or a problem file path); notes name the
    tasks that resolve to none when a problems folder was given."""
    from structcover.tools.kernelbench.for_bin import problem_specs

    known = getattr(verifier, "specs", None)
    if known is None:  # a verification port without task specs (a test double)
        return []
    others = [t for t in rows["task_id"].astype(str).unique() if t not in known]
    if not others:
        return []
    specs, notes = problem_specs(others, problems)
    verifier.specs.update(specs)
    return notes if problems is not None else []


def _executor(options: Any) -> Any:
    """The Ray executor of ``--executor ray`` (None: verify in this process)."""
    if getattr(options, "executor", "local") != "ray":
        return None
    from structcover.tools.executors import make_executor

    return make_executor("ray", address=options.address)


def task_rule_proofs(rows: pd.DataFrame, archive: Any) -> dict[str, dict[str, str]]:
    """Per task, the bins a task rule of ``tools.coverage.per_task`` proves infeasible, as
    ``"rule-name: reason"`` (bins a program of the task reaches stay feasible: the program
    disproves the rule there)."""
    from structcover.tools.coverage.per_task import task_infeasible_bins

    return task_infeasible_bins(rows, archive)


def _store_rule_proofs(store: Any, proofs: dict[str, dict[str, str]], n: int) -> None:
    """Record every rule-proven infeasible (task, bin) in memory with its rule and reason, so
    the proof is kept with the gap and a later round skips it."""
    from structcover.tools.store import InfeasibilityProof

    for task in sorted(proofs):
        for label, text in sorted(proofs[task].items()):
            rule, _, reason = text.partition(": ")
            store.mark_infeasible(task, label, InfeasibilityProof(
                reason=reason or text, rule=rule, round=n))


def _parents(table: pd.DataFrame, rows: pd.DataFrame, archive: Any, n: int) -> pd.DataFrame:
    """The mutation parents: the round's programs, then those of earlier rounds when the data
    carries their archive features. A collapsed round keeps few structures per task; the
    policy's earlier programs are still verified starting points (a mutant of one is a new
    program; re-using one unchanged is reweighting, never counted as filling a bin)."""
    if "round" not in table.columns or any(f not in table.columns for f in archive.features):
        return rows
    earlier = table[pd.to_numeric(table["round"], errors="coerce") < n]
    return pd.concat([rows, earlier], ignore_index=True) if len(earlier) else rows


def focus_rows(rows: pd.DataFrame, tasks: list[str] | None) -> pd.DataFrame:
    """The rows of ``tasks`` (all rows when None): a campaign on some tasks of a round.

    Raises:
        ValueError: A task is not in the data (the message lists the known ones).
    """
    if not tasks:
        return rows
    known = sorted(rows["task_id"].astype(str).unique())
    unknown = sorted(set(tasks) - set(known))
    if unknown:
        raise ValueError(f"tasks {unknown} are not in the data; its tasks: {', '.join(known)}")
    return rows[rows["task_id"].astype(str).isin(set(tasks))].reset_index(drop=True)


def _drift(state_dir: Path, n: int) -> list[str]:
    """F* entries and exits since the previous round's saved discovery (empty at round 0)."""
    from structcover.tools.coverage.diagnosis_state import round_dir

    cur = round_dir(state_dir, n) / "discovery.json"
    prev = round_dir(state_dir, n - 1) / "discovery.json"
    if n == 0 or not (cur.is_file() and prev.is_file()):
        return []
    from structcover.tools.mining.drift import compare_discoveries, load_discovery

    drift = compare_discoveries(load_discovery(prev), load_discovery(cur))
    return [f"+{f}" for f in drift.entered] + [f"-{f}" for f in drift.left]


def _seed_memory(store: Any, rows: pd.DataFrame, coverage: ArchiveCoverage, n: int) -> None:
    """Add the distinct correct programs of ``rows`` (the mutation parents) to memory, each
    with the round it came from."""
    from structcover.tools.store import ProgramRecord
    from structcover.tools.store.embedding import numeric_features

    ok = rows[rows["correct"].fillna(False).astype(bool)] if "correct" in rows.columns else rows
    ok = ok.drop_duplicates(["task_id", "program_id"]).sort_values(["task_id", "program_id"])
    feats = [c for c in ok.columns if isinstance(c, str) and "." in c]
    bins = coverage.bins_of(ok)  # one archive look-up for every program
    records = []
    for (_, r), bin_label in zip(ok.iterrows(), bins, strict=True):
        values = {f: (None if _missing(r[f]) else r[f]) for f in feats}
        numeric, levels = numeric_features(values)
        records.append(ProgramRecord(
            task=str(r["task_id"]), source=str(r["program"]),
            features=finite(numeric), levels=levels, verified=True,
            round=n if "round" not in ok.columns or _missing(r["round"]) else int(r["round"]),
            origin="input",
            bin_label=bin_label or None))
    if records:
        store.add_programs(records)


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _known_ids(rows: pd.DataFrame) -> frozenset[str]:
    """Ids of every program already in the data or the shipped corpus (never 'new')."""
    from structcover.tools.data.corpus import load_corpus

    ids = {content_hash(str(p)) for p in rows["program"]}
    ids |= {content_hash(p.source) for f in load_corpus() for p in f.programs}
    return frozenset(ids)


def _families(rows: pd.DataFrame) -> dict[str, str]:
    if "family" not in rows.columns:
        return {}
    return dict(zip(rows["task_id"].astype(str), rows["family"].astype(str), strict=True))
