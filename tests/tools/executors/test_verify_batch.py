"""verify_batch on the local pool: real emulator verdicts, a wrong candidate, same seed = same
verdicts whatever the pool size (the Ray half of the comparison is in test_ray.py)."""

from __future__ import annotations

import pytest
from verify_cases import comparable, saxpy_batch  # type: ignore[import-not-found]

from structcover.config import VerifySettings
from structcover.tools.executors import LocalExecutor
from structcover.tools.verify.batch import verify_batch

pytestmark = pytest.mark.slow
CPU = VerifySettings(backend="cpu")


def test_a_batch_verifies_the_variants_and_rejects_the_wrong_one():
    jobs = saxpy_batch()
    with LocalExecutor(2) as ex:
        two = verify_batch(jobs, executor=ex, settings=CPU, seed=7, trials=2, batch_size=2)
    assert [v.program_id for v in two] == [j.program_id for j in jobs]
    assert all(v.backend == "cpu" for v in two)
    assert [v.equivalent for v in two] == [True] * (len(jobs) - 1) + [False]
    with LocalExecutor(1) as ex:
        one = verify_batch(jobs, executor=ex, settings=CPU, seed=7, trials=2, batch_size=3)
    assert [comparable(v) for v in one] == [comparable(v) for v in two]
