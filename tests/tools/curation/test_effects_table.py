"""The measured operator-effects table: recomputation and loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.tools.curation.effects_table import compute_effects, load_effects


@pytest.mark.slow
def test_compute_effects_records_each_variants_levels() -> None:
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.features.extract import extract_features
    from structcover.tools.mutations.base import registry

    # a budget smaller than one program: exactly the first program is measured
    table = compute_effects(per_family=1, budget_s=1e-3)
    first = load_corpus()[0]
    assert table.programs == 1 and table.transitions
    assert {(t.family, t.program) for t in table.transitions} == {(first.name, "reference")}
    before = extract_features(first.reference.source).values
    t = table.transitions[0]
    assert t.levels_before == {a: str(before[a]) for a in t.levels_before}
    variant = registry()[t.operator].func(first.reference.source).variants[0]
    after = extract_features(variant.source).values
    assert t.levels_after == {a: str(after[a]) for a in t.levels_after}


def test_load_effects_names_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "effects.json"
    bad.write_text('{"transitions": [{"operator": 3}]}')
    with pytest.raises(ValueError, match=f"{bad}: invalid operator effects table"):
        load_effects(bad)
    assert load_effects(tmp_path / "absent.json").transitions == []
