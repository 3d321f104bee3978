"""A small verification batch shared by the local and Ray tests: saxpy's variants, a wrong one."""

from __future__ import annotations

from structcover.tools.data.corpus import corpus_root, load_family
from structcover.tools.verify.batch import Candidate


def saxpy_batch() -> list[Candidate]:
    """Every saxpy variant against the reference, plus one that scales by the wrong factor."""
    family = load_family(corpus_root() / "saxpy")
    task = family.tasks[0]
    ref = family.reference.source
    jobs = [Candidate(v.source, ref, task, v.name) for v in family.variants]
    wrong = ref.replace("a * x[i]", "(a + 1.0f) * x[i]")
    assert wrong != ref, "the reference's expression changed: update the wrong variant"
    jobs.append(Candidate(wrong, ref, task, "wrong"))
    return jobs


def comparable(verdict) -> dict:
    """A verdict without what depends on where and when it ran (timings, compile stats)."""
    return verdict.model_dump(exclude={"timing", "compile_stats", "compile_log", "energy_j"})
