"""Operator statistics: per operator, how often it applied, compiled, stayed equivalent and
moved the features it promises — measured over corpus programs, persisted as JSON.

Failures are recorded as failures: a variant whose equivalence could not be decided counts
as ``unverified``, never as equivalent. Recompute the shipped table with::

    python -m structcover.tools.mutations.stats [--out PATH] [--per-family N] [--trials T]
        [--applied-per-family K]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from structcover.schema import FeatureValue, TaskSpec
from structcover.tools.data.atomic import write_text
from structcover.tools.mutations.base import MutationResult, Variant, registry

#: The shipped table (computed by this module's ``main``).
DEFAULT_PATH = Path(__file__).with_name("operator_stats.json")


def _num(value: FeatureValue) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


def moved_as_promised(before: dict[str, FeatureValue], after: dict[str, FeatureValue],
                      promised: dict[str, str]) -> tuple[bool, list[str]]:
    """Check each promised move: ``up`` = strictly larger (False -> True for flags), ``down`` =
    strictly smaller, ``set`` = changed. Returns (all kept, descriptions of the misses)."""
    misses = []
    for name, direction in promised.items():
        a, b = before.get(name), after.get(name)
        na, nb = _num(a), _num(b)
        ok = (a != b) if direction == "set" else (
            na is not None and nb is not None and (nb > na if direction == "up" else nb < na))
        if not ok:
            misses.append(f"{name}: promised {direction}, went {a!r} -> {b!r}")
    return not misses, misses


class VariantCheck(BaseModel):
    """What verifying one variant found."""

    operator: str
    family: str
    program: str
    compiled: bool = True
    equivalent: bool | None = None
    failure: str | None = None
    detail: str = ""
    moved: bool | None = None
    misses: list[str] = Field(default_factory=list)


def check_variant(variant: Variant, parent_src: str, spec: TaskSpec, *, family: str,
                  program: str, backend: Any = None, trials: int = 2) -> VariantCheck:
    """Verify one variant against its parent: equivalence on ``backend`` and promised moves."""
    from structcover.tools.features.extract import extract_features
    from structcover.tools.verify.equivalence import check_equivalence

    check = VariantCheck(operator=variant.operator, family=family, program=program)
    before = extract_features(parent_src).values
    after = extract_features(variant.source).values
    check.moved, check.misses = moved_as_promised(before, after, variant.promised)
    if backend is not None:
        verdict = check_equivalence(variant.source, parent_src, spec, backend=backend,
                                    trials=trials, seed=42)
        check.equivalent = verdict.equivalent
        check.failure = verdict.failure
        check.detail = verdict.detail
        if verdict.compiled is False:
            check.compiled = False
    return check


class OperatorStats(BaseModel):
    """Counts for one operator over the programs it was tried on."""

    operator: str
    tried: int = 0
    applied: int = 0
    variants: int = 0
    rejected_compile: int = 0
    compiled: int = 0
    equivalent: int = 0
    not_equivalent: int = 0
    unverified: int = 0
    moved_as_promised: int = 0
    families_equivalent: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list, description="first few failure notes")


class StatsTable(BaseModel):
    """The operator statistics table."""

    backend: str = "none"
    trials: int = 0
    programs: int = 0
    operators: dict[str, OperatorStats] = Field(default_factory=dict)


def record(table: StatsTable, result: MutationResult, checks: list[VariantCheck]) -> None:
    """Fold one operator application and its variant checks into ``table``."""
    st = table.operators.setdefault(result.operator, OperatorStats(operator=result.operator))
    st.tried += 1
    st.applied += int(result.applied)
    st.variants += len(result.variants)
    st.rejected_compile += len(result.rejected)
    for check in checks:
        st.compiled += int(check.compiled)
        if check.equivalent is True:
            st.equivalent += 1
            if check.family not in st.families_equivalent:
                st.families_equivalent.append(check.family)
        elif check.equivalent is False:
            st.not_equivalent += 1
            st.failures.append(f"{check.family}/{check.program}: {check.failure}")
        else:
            st.unverified += 1
            st.failures.append(f"{check.family}/{check.program}: unverified ({check.failure})")
        st.moved_as_promised += int(bool(check.moved))
        if check.misses:
            st.failures.append(f"{check.family}/{check.program}: " + "; ".join(check.misses))
    st.failures = st.failures[:12]


def compute_stats(*, per_family: int | None = None, operators: list[str] | None = None,
                  backend: Any = None, trials: int = 2, corpus_root: Path | None = None,
                  applied_per_family: int | None = None) -> StatsTable:
    """Apply every operator to corpus programs and verify each variant.

    Args:
        per_family: At most this many programs per family (reference first); all when None.
        operators: Operator names (all registered when None).
        backend: Execution backend for equivalence (None: equivalence is not run and every
            variant counts as unverified).
        trials: Seeded input sets per equivalence check.
        corpus_root: Corpus folder (the shipped corpus by default).
        applied_per_family: Stop trying an operator on a family once it applied to this many
            of its programs (bounds the emulator time; the counts say how many were tried).
    """
    from structcover.tools.data.corpus import load_corpus

    ops = registry()
    names = operators or list(ops)
    table = StatsTable(backend=getattr(backend, "name", "none"), trials=trials)
    for family in load_corpus(corpus_root):
        spec = family.tasks[0]
        applied: dict[str, int] = {}
        for prog in family.programs[:per_family]:
            table.programs += 1
            for name in names:
                if applied_per_family is not None and applied.get(name, 0) >= applied_per_family:
                    continue
                result = ops[name].func(prog.source)
                applied[name] = applied.get(name, 0) + int(result.applied)
                checks = [check_variant(v, prog.source, spec, family=family.name,
                                        program=prog.name, backend=backend, trials=trials)
                          for v in result.variants]
                record(table, result, checks)
    return table


def save_stats(table: StatsTable, path: Path) -> Path:
    """Write the table as JSON atomically."""
    return write_text(table.model_dump_json(indent=2), path)


def load_stats(path: Path | None = None, state_dir: Path | None = None) -> StatsTable:
    """Read the table: ``state_dir/operator_stats.json`` when it exists, else ``path``, else
    the shipped default; an empty table when none exists.

    Raises:
        ValueError: The file exists but is not a valid table (the message names it).
    """
    candidates = [Path(state_dir) / "operator_stats.json"] if state_dir else []
    candidates.append(Path(path) if path else DEFAULT_PATH)
    for cand in candidates:
        if cand.exists():
            try:
                return StatsTable.model_validate(json.loads(cand.read_text()))
            except Exception as exc:
                raise ValueError(f"{cand}: invalid operator statistics: {exc}") from exc
    return StatsTable()


def main(argv: list[str] | None = None) -> int:
    """Recompute the statistics table over the corpus on the CPU backend."""
    from structcover.tools.verify.select import get_backend

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--per-family", type=int, default=None)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--applied-per-family", type=int, default=None)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--operators", nargs="*", default=None,
                        help="only these operators, merged into the existing table at --out")
    args = parser.parse_args(argv)
    from structcover.config import VerifySettings

    backend = get_backend(args.backend, settings=VerifySettings(timeout_s=args.timeout_s))
    ok, why = backend.available()
    if not ok:
        raise SystemExit(f"backend {args.backend} unavailable: {why}")
    table = compute_stats(per_family=args.per_family, backend=backend, trials=args.trials,
                          applied_per_family=args.applied_per_family, operators=args.operators)
    if args.operators and args.out.exists():
        merged = load_stats(args.out)
        merged.operators.update(table.operators)
        table = merged
    save_stats(table, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
