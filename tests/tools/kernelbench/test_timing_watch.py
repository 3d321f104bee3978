"""The run-time timing watch: a candidate's clock reads in ``forward`` are seen however spelled;
library code's own clock reads (``logging`` stamps its records) are not the candidate's."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench import timing_watch  # noqa: E402

#: Candidate code: compiled under a file name outside the library folders, as a job's file is.
CANDIDATE = '''
import time as t
from time import perf_counter as tick
import torch

def aliased():
    return tick()

def by_name():
    return getattr(t, "mono" + "tonic")()

def synchronizes():
    wait = torch.cuda.synchronize
    wait()

def honest(x):
    return x * 2
'''


def _candidate() -> dict:
    timing_watch.install_timing_watch()  # before the candidate's imports, as the child does
    scope: dict = {}
    exec(compile(CANDIDATE, "/jobs/kb_candidate.py", "exec"), scope)  # noqa: S102
    return scope


@pytest.mark.parametrize(("call", "seen"), [("aliased", "time.perf_counter"),
                                            ("by_name", "time.monotonic")])
def test_a_clock_read_in_forward_is_seen_however_it_is_spelled(call, seen):
    scope = _candidate()
    with timing_watch.watching() as calls:
        scope[call]()
    detail = timing_watch.finding(calls, 2)
    assert seen in detail and "trial 2: no_timing_tampering" in detail, detail


def test_device_timing_api_is_seen():
    scope = _candidate()
    if not hasattr(__import__("torch").cuda, "synchronize"):
        pytest.skip("no torch.cuda.synchronize")
    with timing_watch.watching() as calls:
        try:
            scope["synchronizes"]()
        except Exception:  # noqa: BLE001 - no GPU here: the call is what counts, not its result
            pass
    assert "torch.cuda.synchronize" in timing_watch.finding(calls, 0)


def test_calls_outside_a_trial_and_library_clock_reads_are_not_counted():
    scope = _candidate()
    scope["aliased"]()  # at import or between trials: not forward's
    with timing_watch.watching() as calls:
        assert scope["honest"](3) == 6
        logging.getLogger("sc-test").warning("logging stamps this record with time.time_ns")
    assert timing_watch.finding(calls, 0) == ""


def test_the_wrapper_gives_no_way_back_to_the_original():
    import time

    timing_watch.install_timing_watch()
    assert not hasattr(time.perf_counter, "__wrapped__")
    assert isinstance(time.perf_counter(), float)
