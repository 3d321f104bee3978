"""The demo's corpus verification: every variant is checked against its task's reference on
the backend the settings select, and a wrong variant is reported by name, not counted."""

from __future__ import annotations

import dataclasses

import pytest

from structcover.config import load_settings
from structcover.demo import verify_corpus
from structcover.tools.data.corpus import load_corpus


@pytest.mark.slow
def test_verify_corpus_counts_good_variants_and_names_a_wrong_one() -> None:
    family = next(f for f in load_corpus() if f.name == "vector_add")
    good = family.variants[:2]
    wrong = dataclasses.replace(
        family.reference, name="planted_subtract",
        source=family.reference.source.replace("a[i] + b[i]", "a[i] - b[i]"))
    assert wrong.source != family.reference.source
    family = dataclasses.replace(family, variants=[*good, wrong])
    ticks: list[int] = []
    settings = load_settings()
    backend, summaries = verify_corpus([family], settings, lambda: ticks.append(1))
    assert backend in ("cpu", "gpu")
    (summary,) = summaries
    assert summary.checked == len(ticks) == 3 * len(family.tasks)
    assert summary.verified == 2 * len(family.tasks)
    assert len(summary.failures) == len(family.tasks)
    assert all("planted_subtract" in f for f in summary.failures)
