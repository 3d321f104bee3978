"""The driver's security settings reach its workers exactly: never looser, never stricter.

The workers here have no jail (``faults.jailless_run`` hides bubblewrap from them), so the
``--allow-unsandboxed`` decision is what stands between a program and the machine. The Ray
half of these checks is in test_ray.py.
"""

from __future__ import annotations

import pytest

from structcover.tools.executors import LocalExecutor, faults
from structcover.tools.executors.policy import RunPolicy
from structcover.tools.verify import jail

#: A worker whose own settings would allow unsandboxed runs.
PERMISSIVE_WORKER = {"STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED": "true"}


@pytest.fixture(autouse=True)
def _driver_follows_its_settings(monkeypatch):
    monkeypatch.delenv("STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED", raising=False)
    monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", None)


def test_a_strict_driver_keeps_a_permissive_worker_strict():
    assert RunPolicy.of_driver() == RunPolicy(allow_unsandboxed=False)
    # Without the policy, these workers' own settings would let the program run.
    assert faults.jailless_run(PERMISSIVE_WORKER, 0) == "ran unsandboxed"
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.jailless_run, range(4), batch_size=1, shared=PERMISSIVE_WORKER))
    assert out == ["refused"] * 4


def test_a_driver_that_opted_in_is_followed_by_its_workers():
    jail.set_allow_unsandboxed(True)  # what `verify --allow-unsandboxed` does
    assert RunPolicy.of_driver() == RunPolicy(allow_unsandboxed=True)
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.jailless_run, range(3), batch_size=2, shared={}))
    assert out == ["ran unsandboxed"] * 3


def test_a_batch_puts_the_workers_own_decision_back():
    with RunPolicy(allow_unsandboxed=True).applied():
        assert jail.unsandboxed_allowed() is True
        with RunPolicy(allow_unsandboxed=False).applied():
            assert faults.jailless_run(PERMISSIVE_WORKER, 0) == "refused"
        assert jail.allow_unsandboxed_override() is True
    assert jail.allow_unsandboxed_override() is None
    assert faults.jailless_run({}, 0) == "refused"
