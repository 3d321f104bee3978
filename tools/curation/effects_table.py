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
    operators: list[str] = Field(default_factory=list,
                                 description="every operator tried on each measured program")
    families: list[str] = Field(default_factory=list,
                                description="families with at least one measured program: an "
                                            "operator without a transition there never applied")
    transitions: list[Transition] = Field(default_factory=list)


def compute_effects(per_family: int | None = None, budget_s: float | None = None,
                    operators: list[str] | None = None) -> EffectsTable:
    """Apply every registered operator to corpus programs; record each variant's levels.

    Args:
        per_family: At most this many programs per family (reference first); all when None.
        budget_s: Stop starting new programs after this many seconds, once one program is
            measured (the table says how many programs it covers).
        operators: Only these operators (all registered when None); see :func:`merge`.

    Raises:
        ValueError: An unknown operator name.
    """
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.features.extract import extract_features
    from structcover.tools.features.structure import LEVELS
    from structcover.tools.mutations.base import registry

    ops = registry()
    unknown = sorted(set(operators or ()) - set(ops))
    if unknown:
        raise ValueError(f"compute_effects: unknown operators {unknown}")
    if operators is not None:
        ops = {k: v for k, v in ops.items() if k in operators}
    table = EffectsTable(per_family=per_family, operators=sorted(ops))
    start = time.monotonic()
    for family in load_corpus():
        for prog in family.programs[:per_family]:
            if budget_s is not None and table.programs and \
                    time.monotonic() - start > budget_s:
                return table
            before = extract_features(prog.source).values
            lv = {a: str(before[a]) for a in LEVELS}
            table.programs += 1
            if family.name not in table.families:
                table.families.append(family.name)
            for name, info in ops.items():
                for variant in info.func(prog.source).variants:
                    after = extract_features(variant.source).values
                    table.transitions.append(Transition(
                        operator=name, family=family.name, program=prog.name,
                        levels_before=lv, levels_after={a: str(after[a]) for a in LEVELS}))
    return table


def merge(base: EffectsTable, update: EffectsTable) -> EffectsTable:
    """``base`` with ``update``'s operators re-measured: their old transitions are replaced
    and the operator list grows.

    A table written before the scope fields existed tried every operator it names on every
    family it names (each registered operator on each program), so its scope is read off its
    transitions.

    Raises:
        ValueError: The two tables measured different program sets (their transitions would
            not describe the same corpus).
    """
    if (base.programs, base.per_family) != (update.programs, update.per_family):
        raise ValueError(f"merge: tables measured different programs ({base.programs} per "
                         f"family {base.per_family} vs {update.programs} per family "
                         f"{update.per_family})")
    redone = set(update.operators)
    ops = set(base.operators or {t.operator for t in base.transitions}) | redone
    fams = base.families or sorted({t.family for t in base.transitions})
    return EffectsTable(programs=base.programs, per_family=base.per_family,
                        operators=sorted(ops),
                        families=[*fams, *(f for f in update.families if f not in fams)],
                        transitions=[*(t for t in base.transitions if t.operator not in redone),
                                     *update.transitions])


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
    ap.add_argument("--operators", nargs="*", default=None,
                    help="only these operators, merged into the existing table at --out")
    args = ap.parse_args(argv)
    table = compute_effects(args.per_family, args.budget_s, args.operators)
    if args.operators:
        table = merge(load_effects(args.out), table)
    write_text(table.model_dump_json(indent=1), args.out)
    print(f"{len(table.transitions)} transitions over {table.programs} programs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
