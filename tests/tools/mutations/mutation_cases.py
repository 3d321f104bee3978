"""Cases and checks for operator tests: apply an operator to a few programs and verify every variant
(compiles, equivalent to its parent on the CPU emulator, promised features moved)."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.schema import TaskSpec
from structcover.tools.compiler.toolchain import find_nvcc
from structcover.tools.data.corpus import load_corpus, load_task

DATA = Path(__file__).parent / "data"


def program(family: str, name: str) -> tuple[str, TaskSpec]:
    """(source, task) of a corpus program, or of a fixture under data/ (family 'rowstats')."""
    if (DATA / f"{family}.yaml").exists():
        return (DATA / f"{name}.cu").read_text(), load_task(DATA / f"{family}.yaml")
    fam = next(f for f in load_corpus() if f.name == family)
    if (DATA / f"{name}.cu").exists():  # a fixture variant of a corpus task
        return (DATA / f"{name}.cu").read_text(), fam.tasks[0]
    prog = next(p for p in fam.programs if p.name == name)
    return prog.source, fam.tasks[0]


def _cpu_backend():
    """The sandboxed CPU emulator backend; skips when nvcc or the emulator is missing."""
    if find_nvcc() is None:
        pytest.skip("nvcc not found: operators cannot check that variants compile")
    from structcover.config import VerifySettings
    from structcover.tools.verify.select import get_backend

    # generous limit: the emulator's first build of a program is slow on a loaded 2-core box
    backend = get_backend("cpu", settings=VerifySettings(timeout_s=300))
    ok, why = backend.available()
    if not ok:
        pytest.skip(f"CPU emulator unavailable: {why}")
    return backend


def verify_operator(op: str, cases: list[tuple[str, str]], backend) -> None:  # noqa: ANN001
    """Every case must yield a variant; every variant must be equivalent and move as promised."""
    from structcover.tools.mutations.base import get_operator
    from structcover.tools.mutations.stats import check_variant

    info = get_operator(op)
    assert info.moves, f"{op} declares no feature moves in its docstring"
    for family, name in cases:
        source, spec = program(family, name)
        result = info.func(source)
        assert result.variants, f"{op} on {family}/{name}: {result.not_applicable}"
        for variant in result.variants:
            assert variant.source != source
            check = check_variant(variant, source, spec, family=family, program=name,
                                  backend=backend, trials=2)
            assert check.equivalent is True, (f"{op} on {family}/{name} {variant.params}: "
                                              f"{check.failure}: {check.detail}")
            assert check.moved, f"{op} on {family}/{name}: {check.misses}"


def not_applicable(op: str, family: str, name: str) -> str:
    """The operator's reason for not applying to a corpus program (asserts it did not apply)."""
    return not_applicable_source(op, program(family, name)[0])


def not_applicable_source(op: str, source: str) -> str:
    """The operator's reason for not applying to ``source`` (asserts it did not apply)."""
    from structcover.tools.mutations.base import get_operator

    result = get_operator(op).func(source)
    assert not result.variants and result.not_applicable
    return result.not_applicable
