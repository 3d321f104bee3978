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


def test_merge_replaces_the_remeasured_operators_and_keeps_the_scope() -> None:
    from structcover.tools.curation.effects_table import EffectsTable, Transition, merge

    def t(op: str, family: str, after: str) -> Transition:
        return Transition(operator=op, family=family, program="reference",
                          levels_before={"pattern.sync": "none"},
                          levels_after={"pattern.sync": after})

    # An older table without scope fields: its scope is read off its transitions.
    old = EffectsTable(programs=2, transitions=[t("tile_smem", "gemm", "block"),
                                                t("serialize", "gemm", "none")])
    new = EffectsTable(programs=2, operators=["serialize"], families=["gemm", "saxpy"],
                       transitions=[t("serialize", "saxpy", "none")])
    merged = merge(old, new)
    assert merged.operators == ["serialize", "tile_smem"]
    assert merged.families == ["gemm", "saxpy"]
    assert [(x.operator, x.family) for x in merged.transitions] == [("tile_smem", "gemm"),
                                                                    ("serialize", "saxpy")]
    with pytest.raises(ValueError, match="different programs"):
        merge(old, EffectsTable(programs=3, operators=["serialize"]))
    with pytest.raises(ValueError, match="unknown operators"):
        compute_effects(per_family=1, operators=["no_such_operator"])
