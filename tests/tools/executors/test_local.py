"""LocalExecutor: order, batching, progress, and its faults (dead workers, poisoned items)."""

from __future__ import annotations

import pandas as pd
import pytest

from structcover.tools.executors import LocalExecutor, Quarantined, faults, make_executor
from structcover.tools.features.extract import extract_table


def test_results_come_back_in_input_order_with_progress():
    seen: list[int] = []
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.square, iter(range(103)), batch_size=5, on_progress=seen.append))
    assert out == [i * i for i in range(103)]
    assert seen[-1] == 103 and seen == sorted(seen)
    assert ex.quarantined == []


def test_a_raising_item_is_quarantined_and_the_rest_are_computed():
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.raise_on, [1, 2, -3, 4, 5], batch_size=2))
    assert out[:2] == [1, 4] and out[3:] == [16, 25]
    assert isinstance(out[2], Quarantined) and out[2].index == 2
    assert "ValueError: negative input -3" in out[2].reason
    assert ex.quarantined == [out[2]]


def test_a_worker_killed_mid_task_is_retried(tmp_path):
    flag = tmp_path / "die"
    flag.touch()
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.die_once, range(30), batch_size=4, shared=str(flag)))
    assert not flag.exists(), "the worker never reached the item that kills it"
    assert out == [i * i for i in range(30)]
    assert ex.quarantined == [] and ex.restarts >= 1


def test_a_poisoned_item_is_isolated_and_quarantined_without_stopping_the_job():
    items: list[object] = list(range(40))
    items[13] = "POISON"
    with LocalExecutor(2, retries=1) as ex:
        out = list(ex.map(faults.poison, items, batch_size=8))
    assert out[:13] == list(range(13)) and out[14:] == list(range(14, 40))
    assert isinstance(out[13], Quarantined)
    assert out[13].index == 13 and out[13].item == "'POISON'"
    assert "worker died on each of 2 attempts" in out[13].reason
    assert ex.quarantined == [out[13]]


def test_extraction_through_the_local_executor_matches_the_default_pool(corpus_programs):
    pairs = corpus_programs[:24]
    default = extract_table(pairs, workers=2, chunksize=3)
    with LocalExecutor(2) as ex:
        table = extract_table(iter(pairs), chunksize=3, executor=ex)
    pd.testing.assert_frame_equal(table, default)
    assert table.attrs["quarantined"] == []


def test_make_executor_rejects_bad_names():
    with pytest.raises(ValueError, match="'dask'"):
        make_executor("dask")
    with pytest.raises(ValueError, match="--address"):
        make_executor("local", address="auto")
    with pytest.raises(ValueError, match="batch_size"):
        list(LocalExecutor(1).map(faults.square, [1], batch_size=0))
