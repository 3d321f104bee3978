"""RayExecutor on a local 2-CPU cluster started here: same results as the local pool, faults.

Runs in CI (the dev extra installs ray); skipped only where ray is not importable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd
import pytest
from verify_cases import comparable, saxpy_batch  # type: ignore[import-not-found]

from structcover.config import VerifySettings
from structcover.tools.executors import LocalExecutor, Quarantined, faults
from structcover.tools.features.extract import extract_table
from structcover.tools.verify.batch import verify_batch

ray = pytest.importorskip("ray")
from structcover.tools.executors.ray_exec import RayExecutor  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayExecutor]:
    assert not ray.is_initialized(), "another test left a Ray cluster running"
    ex = RayExecutor(num_cpus=2, retries=1)
    try:
        assert ray.cluster_resources().get("CPU") == 2
        yield ex
    finally:
        ex.close()
    assert not ray.is_initialized(), "the cluster started here is shut down afterwards"


def test_local_cluster_runs_without_token_auth(cluster):
    # A private cluster the tool starts itself: token auth off, no token written for it.
    assert os.environ.get("RAY_AUTH_MODE") == "disabled"


def test_feature_extraction_is_identical_on_ray_and_local(cluster, corpus_programs):
    progress: list[int] = []
    on_ray = extract_table(iter(corpus_programs), chunksize=6, executor=cluster,
                           on_progress=progress.append)
    with LocalExecutor(2) as local:
        on_pool = extract_table(corpus_programs, chunksize=6, executor=local)
    default = extract_table(corpus_programs, workers=2)
    pd.testing.assert_frame_equal(on_ray, on_pool)
    pd.testing.assert_frame_equal(on_ray, default)
    assert len(on_ray) == len(corpus_programs) and on_ray.attrs["quarantined"] == []
    assert progress[-1] == len(corpus_programs)


def test_a_verification_batch_is_identical_on_ray_and_local(cluster):
    jobs = saxpy_batch()
    cpu = VerifySettings(backend="cpu")
    on_ray = verify_batch(jobs, executor=cluster, settings=cpu, seed=11, trials=2, batch_size=2)
    with LocalExecutor(2) as local:
        on_pool = verify_batch(jobs, executor=local, settings=cpu, seed=11, trials=2)
    assert [v.equivalent for v in on_ray] == [True] * (len(jobs) - 1) + [False]
    assert [comparable(v) for v in on_ray] == [comparable(v) for v in on_pool]


def test_results_keep_input_order_and_python_errors_are_quarantined(cluster):
    out = list(cluster.map(faults.raise_on, [3, -1, *range(20)], batch_size=3))
    assert out[0] == 9 and out[2:] == [i * i for i in range(20)]
    assert isinstance(out[1], Quarantined) and "negative input -1" in out[1].reason


def test_a_worker_killed_mid_task_is_retried_by_ray(cluster, tmp_path):
    flag = tmp_path / "die"
    flag.touch()
    out = list(cluster.map(faults.die_once, range(16), batch_size=4, shared=str(flag)))
    assert not flag.exists(), "the worker never reached the item that kills it"
    assert out == [i * i for i in range(16)]
    assert cluster.quarantined == []


def test_a_poisoned_item_is_quarantined_without_stopping_the_job(cluster):
    items: list[object] = list(range(12))
    items[6] = "POISON"
    # Joins the running cluster (retries=0 keeps the test short: each death costs a worker).
    ex = RayExecutor(retries=0)
    out = list(ex.map(faults.poison, items, batch_size=4))
    ex.close()
    assert ray.is_initialized(), "an executor that joined a cluster leaves it running"
    assert out[:6] == list(range(6)) and out[7:] == list(range(7, 12))
    assert isinstance(out[6], Quarantined) and out[6].index == 6
    assert "worker died" in out[6].reason
    assert ex.quarantined == [out[6]]


def _small_campaign(out, executor: str):
    from structcover.campaign import CampaignOptions
    from structcover.demo import run_demo

    # The demo's real offline campaign (mutations compiled, candidates run on the CPU
    # emulator) on two families with a small budget: the same seed on both executors.
    result = run_demo(out, rounds=2, verify=False, families=["softmax", "vector_add"], seed=0,
                      campaign=CampaignOptions(budget=6, backend="cpu", executor=executor))
    camp = result.campaign
    assert camp is not None
    return camp


def test_a_campaign_is_identical_on_ray_and_local(cluster, tmp_path, monkeypatch):
    local = _small_campaign(tmp_path / "local", "local")
    checks: list[int] = []
    real_map = RayExecutor.map

    def counting_map(self, fn, items, **kw):
        checks.append(1)
        return real_map(self, fn, items, **kw)

    monkeypatch.setattr(RayExecutor, "map", counting_map)
    on_ray = _small_campaign(tmp_path / "ray", "ray")
    assert len(checks) >= on_ray.candidates >= 1, "every check went through the Ray executor"
    assert ray.is_initialized(), "the campaign joined the test's cluster, not a new one"
    assert local.verified >= 1, "the campaign should verify at least one new program"
    assert (on_ray.candidates, on_ray.verified) == (local.candidates, local.verified)
    assert [a.model_dump() for a in on_ray.added] == [a.model_dump() for a in local.added]
    assert on_ray.scov_after == local.scov_after


def test_cli_features_and_verify_run_on_ray(cluster, tmp_path):
    import json

    from typer.testing import CliRunner

    from structcover.cli import app

    runner = CliRunner()
    from pathlib import Path

    saxpy = str(Path(__file__).resolve().parents[3] / "structcover" / "corpus" / "saxpy")
    args = ["features", saxpy, "--no-cache", "--json"]
    on_ray = runner.invoke(app, [*args, "--executor", "ray"])
    local = runner.invoke(app, args)
    assert on_ray.exit_code == 0, on_ray.output
    rows = json.loads(on_ray.stdout[on_ray.stdout.index("["):])
    assert len(rows) >= 5 and rows == json.loads(local.stdout[local.stdout.index("["):])

    res = runner.invoke(app, ["verify", f"{saxpy}/variants/grid_stride.cu", "--task", "saxpy",
                              "--backend", "cpu", "--seed", "5", "--trials", "2", "--json",
                              "--executor", "ray"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.stdout[res.stdout.index("{"):])
    assert verdict["equivalent"] is True and verdict["backend"] == "cpu"
    assert verdict["seed"] is not None
    assert ray.is_initialized(), "the commands joined the running cluster and left it up"
