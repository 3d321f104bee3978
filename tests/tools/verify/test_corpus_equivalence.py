"""Every sample-corpus variant is equivalent to its reference on the CPU backend (issue 5).

One test per (task, program). Reference outputs are cached across the module (one reference
run per task and seed), and the emulator caches each program's compiled library, so each
program compiles once however many trials it runs.
"""

from __future__ import annotations

import pytest

from structcover.config import VerifySettings
from structcover.tools.data.corpus import load_corpus
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.select import CpuBackend

SETTINGS = VerifySettings(timeout_s=120.0)
_OK, _WHY = CpuBackend(SETTINGS).available()
_CACHE = ReferenceCache(max_entries=1024)


def _cases() -> list:
    cases = []
    for family in load_corpus():
        for spec in family.tasks:
            for prog in family.variants:
                cases.append(pytest.param(family, spec, prog,
                                          id=f"{spec.task_id}/{prog.name}"))
    return cases


@pytest.mark.skipif(not _OK, reason=f"CPU emulator unavailable: {_WHY}")
@pytest.mark.parametrize("family,spec,program", _cases())
def test_variant_equivalent_to_reference(family, spec, program):
    verdict = check_equivalence(program.source, family.reference.source, spec,
                                backend=CpuBackend(SETTINGS), cache=_CACHE, settings=SETTINGS)
    assert verdict.backend == "cpu"
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"
