"""Coverage per task: SCov over the bins a task can reach, and the proofs for those it cannot.

Pooled over tasks, a bin counts as covered when *any* task reaches it, so a policy that writes
one structure per task still looks diverse. Per task, SCov is ``covered bins of the task /
(all bins - bins proven infeasible for the task)``, and the diagnosis reports the mean over
tasks beside the pooled figure.

A bin is infeasible for a task only by a stated rule about the task (:class:`TaskRule`),
never because nobody reached it. Each rule names the bin constraint it excludes, the task
families it applies to and why. A task's family is its ``family`` column when the table has
one, else its ``task_id``; a task no rule knows gets no proof. A bin a rule excludes but a
program of the task reaches is not excluded (the program disproves the rule for that task)
and the contradiction is reported.

A rule must hold for every program the verifier accepts for the task (it compiles, passes
the anti-hacking checks, and is equivalent to the reference); a bin no operator reaches is an
open gap, never an infeasible one. Shipped rules (:data:`DEFAULT_TASK_RULES`):

* ``work-reads-global-memory``: ``pattern.global_access = none`` is infeasible for every task.
  Each task's outputs are computed from inputs that live in device global memory; a verified
  program must define a ``__global__`` kernel and may delegate nothing to a library. A
  program whose kernels touch no global memory therefore leaves the outputs to the host (or
  to nothing): it does the task's work off the GPU, which is a hack, not a structure.

* ``tensor-cores-need-a-contraction``: ``pattern.tensor_cores = yes`` is infeasible for tasks
  whose work has no multiply-accumulate at all (relu, transpose, histogram, copy). A
  tensor-core instruction computes ``D = A·B + C`` on matrix fragments; in these tasks it could
  only multiply by a constant identity or permutation matrix, so it would move data the task
  moves anyway and do none of its arithmetic. vector_add and saxpy are *not* listed: with
  ``A`` the identity (times ``a``) and ``C`` the second input, an MMA computes ``a·x + y``,
  the task's own work. Reductions, scans, softmax, layernorm and SpMV are not listed either:
  tensor-core reductions and scans exist (a ones-matrix product sums a fragment).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from structcover.tools.coverage.archive import Archive, GridArchive

#: Families of the sample corpus (and common task names) with no multiply-accumulate: an MMA
#: there multiplies by a constant matrix and does none of the task's arithmetic. Not
#: vector_add or saxpy: ``(a·I)·x + y`` is an MMA that does their work.
NO_CONTRACTION_FAMILIES: tuple[str, ...] = ("relu", "relu_fp16", "transpose", "histogram",
                                            "copy")


#: ``TaskRule.families`` entry that makes a rule hold for every task.
EVERY_TASK = "*"


class TaskRule(BaseModel):
    """Bins a task of the given families cannot reach, and why."""

    name: str
    when: dict[str, str] = Field(description="feature -> level the excluded bins have")
    families: list[str] = Field(description="task families (or task ids) the rule holds for; "
                                            f"{EVERY_TASK!r}: every task")
    reason: str

    def applies_to(self, family: str, task: str) -> bool:
        """Whether the rule holds for a task of this family (or this task id)."""
        return EVERY_TASK in self.families or family in self.families or task in self.families


DEFAULT_TASK_RULES: tuple[TaskRule, ...] = (
    TaskRule(name="work-reads-global-memory", when={"pattern.global_access": "none"},
             families=[EVERY_TASK],
             reason="the task's outputs are computed from inputs in device global memory and a "
                    "verified program must do that work in its own __global__ kernel (no "
                    "library delegation): a program whose kernels touch no global memory "
                    "leaves the work to the host, a hack rather than a structure"),
    TaskRule(name="tensor-cores-need-a-contraction", when={"pattern.tensor_cores": "yes"},
             families=list(NO_CONTRACTION_FAMILIES),
             reason="the task has no sum of products: a tensor-core MMA (D = A·B + C) could "
                    "only multiply by a constant identity or permutation matrix, moving data "
                    "and doing none of the task's arithmetic"),
)


class TaskInfeasibility(BaseModel):
    """One rule's proof for one task."""

    rule: str
    when: dict[str, str]
    reason: str
    bins: int = Field(description="bins the rule excludes for this task")
    contradicted_by: int = Field(
        default=0, description="bins the rule names that a program of the task reaches "
                               "(kept feasible: the program disproves the rule there)")


class TaskCoverage(BaseModel):
    """SCov of one task."""

    task_id: str
    family: str
    programs: int
    unbinned: int
    bins_covered: int
    bins_feasible: int
    scov: float
    infeasible: list[TaskInfeasibility] = Field(default_factory=list)


def _rule_mask(archive: Archive, rule: TaskRule) -> np.ndarray | None:
    """Bins matching every constraint of ``rule``; None when the archive lacks a feature."""
    dims = {d.name: (i, d) for i, d in enumerate(archive.dims)}
    if any(f not in dims or dims[f][1].kind != "categorical" for f in rule.when):
        return None
    if isinstance(archive, GridArchive):
        coords = np.unravel_index(np.arange(archive.n_bins), archive.shape)
        mask = np.ones(archive.n_bins, bool)
        for f, level in rule.when.items():
            axis, dim = dims[f]
            if level not in dim.levels:
                return np.zeros(archive.n_bins, bool)
            mask &= coords[axis] == dim.levels.index(level)
        return mask
    bounds = [archive.describe_bin(lab) for lab in archive.labels()]
    return np.array([all(b.get(f) is not None and b[f].value == v for f, v in rule.when.items())
                     for b in bounds], bool)


def task_families(table: pd.DataFrame) -> pd.Series:
    """Family of each row: the ``family`` column where present, else the ``task_id``."""
    task = table["task_id"].astype(str)
    if "family" not in table.columns:
        return task
    fam = table["family"].astype(object)
    return fam.where(fam.notna() & (fam.astype(str) != ""), task).astype(str)


def per_task_coverage(table: pd.DataFrame, archive: Archive, idx: np.ndarray, *,
                      rules: Sequence[TaskRule] = DEFAULT_TASK_RULES) -> list[TaskCoverage]:
    """SCov of every task over the archive's bins, infeasible bins removed per task.

    Args:
        table: This round's rows (``task_id``; ``family`` optional).
        archive: The frozen archive.
        idx: Bin index of each row (``archive.index(table)``; -1 = not binnable).
        rules: Task rules that prove bins infeasible.

    Returns:
        One :class:`TaskCoverage` per task, in task order.
    """
    if len(idx) != len(table):
        raise ValueError(f"idx has {len(idx)} entries for {len(table)} rows")
    masks = {r.name: _rule_mask(archive, r) for r in rules}
    fams = task_families(table).to_numpy()
    tasks = table["task_id"].astype(str).to_numpy()
    out = []
    for task in sorted(set(tasks)):
        rows = tasks == task
        family = str(fams[rows][0])
        hit = np.zeros(archive.n_bins, bool)
        ok = idx[rows] >= 0
        hit[idx[rows][ok]] = True
        excluded = np.zeros(archive.n_bins, bool)
        proofs = []
        for rule in rules:
            mask = masks[rule.name]
            if mask is None or not rule.applies_to(family, task):
                continue
            proofs.append(TaskInfeasibility(rule=rule.name, when=rule.when, reason=rule.reason,
                                            bins=int((mask & ~hit & ~excluded).sum()),
                                            contradicted_by=int((mask & hit).sum())))
            excluded |= mask & ~hit
        feasible = int(archive.n_bins - excluded.sum())
        covered = int(hit.sum())
        out.append(TaskCoverage(task_id=task, family=family, programs=int(rows.sum()),
                                unbinned=int((~ok).sum()), bins_covered=covered,
                                bins_feasible=feasible,
                                scov=covered / feasible if feasible else 0.0,
                                infeasible=proofs))
    return out


def task_infeasible_bins(table: pd.DataFrame, archive: Archive, idx: np.ndarray | None = None,
                         *, rules: Sequence[TaskRule] = DEFAULT_TASK_RULES
                         ) -> dict[str, dict[str, str]]:
    """Per task, the labels of the bins a rule proves infeasible, each with its proof.

    Bins a program of the task reaches stay feasible (the program disproves the rule there),
    exactly as :func:`per_task_coverage` counts them.

    Returns:
        ``{task_id: {bin label: "rule-name: reason"}}``; tasks without a proof are absent.
    """
    idx = archive.index(table) if idx is None else idx
    masks = {r.name: _rule_mask(archive, r) for r in rules}
    labels = archive.labels()
    fams = task_families(table).to_numpy()
    tasks = table["task_id"].astype(str).to_numpy()
    out: dict[str, dict[str, str]] = {}
    for task in sorted(set(tasks)):
        rows = tasks == task
        family = str(fams[rows][0])
        hit = np.zeros(archive.n_bins, bool)
        hit[idx[rows][idx[rows] >= 0]] = True
        for rule in rules:
            mask = masks[rule.name]
            if mask is None or not rule.applies_to(family, task):
                continue
            for i in np.flatnonzero(mask & ~hit):
                out.setdefault(task, {}).setdefault(labels[i], f"{rule.name}: {rule.reason}")
    return out


def task_bin_counts(table: pd.DataFrame, archive: Archive, idx: np.ndarray) -> pd.DataFrame:
    """Programs per task (rows) and bin (columns, labelled), for bins any task reaches.

    Bins no task reaches are left out of the columns (they are zero everywhere; per-task
    SCov counts them in its denominator).
    """
    ok = idx >= 0
    frame = pd.DataFrame({"task_id": table["task_id"].astype(str).to_numpy()[ok],
                          "bin": idx[ok]})
    counts = frame.groupby(["task_id", "bin"]).size().unstack(fill_value=0)
    labels = archive.labels()
    counts.columns = [labels[int(b)] for b in counts.columns]
    return counts.sort_index()
