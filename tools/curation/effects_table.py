"""Measured operator effects on pattern levels: apply every operator to corpus programs and
record each variant's pattern levels before and after — the planner's prior evidence where
memory has none yet.

Only structure is measured here (extraction of the variant); whether a variant is
equivalent is the operator statistics' job (``tools/mutations/stats.py``). Recompute the
shipped table with::

    python -m structcover.tools.curation.effects_table [--per-family N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pydantic import BaseModel, Field

from structcover.tools.data.atomic import write_text

#: The shipped table.
DEFAULT_PATH = Path(__file__).with_name("operator_effects.json")


class Transition(BaseModel):
    """Pattern levels of one program before and after one operator variant."""

    operator: str
    family: str
    program: str
    levels_before: dict[str, str]
    levels_after: dict[str, str]


class EffectsTable(BaseModel):
    """Every measured transition, with how they were measured."""

    programs: int = 0
    per_family: int | None = None
    transitions: list[Transition] = Field(default_factory=list)


def compute_effects(per_family: int | None = None, budget_s: float | None = None
                    ) -> EffectsTable:
    """Apply every registered operator to corpus programs; record each variant's levels.

    Args:
        per_family: At most this many programs per family (reference first); all when None.
        budget_s: Stop starting new programs after this many seconds, once one program is
            measured (the table says how many programs it covers).
    """
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.features.extract import extract_features
    from structcover.tools.features.structure import LEVELS
    from structcover.tools.mutations.base import registry

    ops = registry()
    table = EffectsTable(per_family=per_family)
    start = time.monotonic()
    for family in load_corpus():
        for prog in family.programs[:per_family]:
            if budget_s is not None and table.programs and \
                    time.monotonic() - start > budget_s:
                return table
            before = extract_features(prog.source).values
            lv = {a: str(before[a]) for a in LEVELS}
            table.programs += 1
            for name, info in ops.items():
                for variant in info.func(prog.source).variants:
                    after = extract_features(variant.source).values
                    table.transitions.append(Transition(
                        operator=name, family=family.name, program=prog.name,
                        levels_before=lv, levels_after={a: str(after[a]) for a in LEVELS}))
    return table


def load_effects(path: Path | None = None) -> EffectsTable:
    """The shipped (or given) table; empty when the file does not exist.

    Raises:
        ValueError: The file exists but is not a table (the message names it).
    """
    p = Path(path) if path else DEFAULT_PATH
    if not p.exists():
        return EffectsTable()
    try:
        return EffectsTable.model_validate(json.loads(p.read_text()))
    except Exception as exc:
        raise ValueError(f"{p}: invalid operator effects table: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    """Recompute and write the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--per-family", type=int, default=None)
    ap.add_argument("--budget-s", type=float, default=None)
    args = ap.parse_args(argv)
    table = compute_effects(args.per_family, args.budget_s)
    write_text(table.model_dump_json(indent=1), args.out)
    print(f"{len(table.transitions)} transitions over {table.programs} programs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
