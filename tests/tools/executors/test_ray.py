"""RayExecutor on a local 2-CPU cluster started here: same results as the local pool, faults.

Runs in CI (the dev extra installs ray); skipped only where ray is not importable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from verify_cases import comparable, saxpy_batch  # type: ignore[import-not-found]

from structcover.config import VerifySettings
from structcover.tools.executors import LocalExecutor, Quarantined, faults
from structcover.tools.features.extract import extract_table
from structcover.tools.verify.batch import verify_batch

ray = pytest.importorskip("ray")
from structcover.tools.executors.ray_exec import RayExecutor  # noqa: E402

# One xdist worker runs every test here (pytest --dist loadgroup), so the suite starts one local
# Ray cluster instead of one per worker: on a 2-core runner two clusters starve each other.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayExecutor]:
    assert not ray.is_initialized(), "another test left a Ray cluster running"
    # One declared GPU (the machine needs none): Ray schedules GPU tasks on it, one at a time.
    ex = RayExecutor(num_cpus=2, num_gpus=1, retries=1)
    try:
        assert ray.cluster_resources().get("CPU") == 2
        assert ray.cluster_resources().get("GPU") == 1
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


def test_a_task_whose_worker_cannot_import_is_our_failure_not_quarantine(cluster):
    # The old root-folder bug: the worker cannot load what the task needs. Every item fails the
    # same way, so none is to blame: Failed with the cause, not "quarantined: worker died".
    from structcover.tools.executors import Failed

    out = list(cluster.map(faults.echo, range(4), batch_size=2,
                           shared=faults.UnpicklableOnWorker()))
    assert all(isinstance(r, Failed) for r in out) and len(out) == 4
    assert all("Ray task error" in r.reason and "No module named" in r.reason
               and "\n" not in r.reason for r in out), out[0].reason
    assert cluster.quarantined == [] and cluster.failures == out


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


def test_gpu_tasks_get_a_gpu_each_and_never_share_it(cluster):
    out = list(cluster.map(faults.gpu_slot, range(3), batch_size=1, shared=0.3,
                           resources={"num_gpus": 1}))
    assert [ids for ids, _, _ in out] == ["0"] * 3
    spans = sorted((start, end) for _, start, end in out)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:], strict=False)), \
        f"two tasks held the one GPU at once: {spans}"
    cpu_only = list(cluster.map(faults.gpu_slot, range(2), batch_size=1, shared=0.0))
    assert [ids for ids, _, _ in cpu_only] == ["", ""]
    with pytest.raises(RuntimeError, match="2 GPU each but the Ray cluster has 1"):
        list(cluster.map(faults.square, [1], resources={"num_gpus": 2}))


def test_the_drivers_unsandboxed_decision_reaches_ray_workers_exactly(cluster, monkeypatch):
    from structcover.tools.verify import jail

    permissive = {"STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED": "true"}
    monkeypatch.delenv("STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED", raising=False)
    monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", None)
    # A strict driver: workers whose own settings allow it still refuse ...
    strict = list(cluster.map(faults.jailless_run, range(4), batch_size=1, shared=permissive))
    assert strict == ["refused"] * 4
    # ... a driver that opted in (verify --allow-unsandboxed) is followed by workers that
    # never saw the flag ...
    jail.set_allow_unsandboxed(True)
    assert list(cluster.map(faults.jailless_run, range(4), batch_size=1, shared={})) == \
        ["ran unsandboxed"] * 4
    # ... and a later strict job on the same workers is strict again.
    jail.set_allow_unsandboxed(None)
    assert list(cluster.map(faults.jailless_run, range(4), batch_size=1, shared={})) == \
        ["refused"] * 4


def test_compiler_features_are_identical_on_ray_and_local(cluster, corpus_programs, tmp_path):
    from structcover.config import CompilerSettings
    from structcover.tools.compiler import toolchain
    from structcover.tools.compiler.batch import compiler_feature_rows

    if not toolchain.nvrtc_available() and toolchain.find_nvcc() is None:
        pytest.skip("no CUDA compiler (nvcc or NVRTC) here")
    sources = [src for _, src in corpus_programs[:4]]  # a handful of kernels

    def rows(executor, cache: str) -> pd.DataFrame:
        # Each run compiles afresh: its own compile cache.
        settings = CompilerSettings(cache_dir=tmp_path / cache)
        progress: list[int] = []
        out = compiler_feature_rows(sources, arch="sm_90", settings=settings,
                                    executor=executor, batch_size=2,
                                    on_progress=progress.append)
        assert progress[-1] == len(sources)
        return pd.DataFrame(out)

    on_ray = rows(cluster, "ray")
    with LocalExecutor(2) as local:
        on_pool = rows(local, "local")
    pd.testing.assert_frame_equal(on_ray, on_pool)
    assert (on_ray["compile.ok"] == 1.0).all(), on_ray.get("compile.missing_reason")
    assert (on_ray["ptxas.registers"] > 0).all()


def test_mutation_batches_are_identical_on_ray_and_here(cluster):
    from structcover.campaign.mutate import RegistryMutate
    from structcover.tools.data.corpus import corpus_root, load_family

    source = load_family(corpus_root() / "saxpy").reference.source
    chain = ["to_grid_stride", "unroll_pragma"]
    here = RegistryMutate().apply(source, chain, seed=3)
    on_ray = RegistryMutate(executor=cluster).apply(source, chain, seed=3)
    assert here, "the chain should yield a compiled mutant of saxpy"
    assert on_ray == here


def test_the_demo_corpus_checks_are_identical_on_ray_and_here(cluster):
    import dataclasses

    from structcover.config import load_settings
    from structcover.demo import verify_corpus
    from structcover.tools.data.corpus import corpus_root, load_family

    settings = load_settings()
    settings.verify = settings.verify.model_copy(update={"backend": "cpu", "seed": 4,
                                                         "trials": 1})
    saxpy = load_family(corpus_root() / "saxpy")
    # One task, three variants: the demo's code path at a tenth of its cost.
    family = [dataclasses.replace(saxpy, tasks=saxpy.tasks[:1], variants=saxpy.variants[:3])]
    ticks: list[int] = []
    backend, on_ray = verify_corpus(family, settings, lambda: ticks.append(1), cluster)
    _, here = verify_corpus(family, settings, lambda: None)
    assert backend == "cpu" and len(ticks) == on_ray[0].checked == 3
    assert on_ray == here and on_ray[0].verified == on_ray[0].checked


def test_a_campaign_is_identical_on_ray_and_local(cluster, tmp_path, monkeypatch):
    import shutil

    from structcover.campaign import CampaignOptions, run_campaign
    from structcover.demo import run_demo

    # The demo's real offline campaign (mutations compiled, candidates run on the CPU
    # emulator) on two families with a small budget, on the local executor ...
    demo = run_demo(tmp_path, rounds=2, verify=False, families=["softmax", "vector_add"],
                    seed=0, campaign=CampaignOptions(budget=6, backend="cpu"))
    local = demo.campaign
    assert local is not None
    # ... then the same campaign on Ray, over the same diagnosed rounds (discovery does not
    # depend on the executor: running it once halves the test), from fresh memory.
    state = tmp_path / "state"
    shutil.rmtree(state / "campaign")
    shutil.rmtree(state / "memory")
    tasks: list[str] = []
    real_map = RayExecutor.map

    def counting_map(self, fn, items, **kw):
        tasks.append(fn.__name__)
        return real_map(self, fn, items, **kw)

    monkeypatch.setattr(RayExecutor, "map", counting_map)
    on_ray = run_campaign(Path(demo.files["rollouts"]), state, CampaignOptions(
        budget=6, backend="cpu", executor="ray", round=local.round,
        output_dir=tmp_path / "ray"))
    assert tasks.count("_verify_task") == on_ray.candidates >= 1, \
        "every candidate's check went through the Ray executor"
    assert tasks.count("apply_operator") >= 1, "operator applications ran as Ray tasks"
    assert ray.is_initialized(), "the campaign joined the test's cluster, not a new one"
    assert local.candidates >= 1, "the campaign should check at least one candidate"
    assert (on_ray.candidates, on_ray.verified) == (local.candidates, local.verified), (
        [a.bin for a in local.added], [a.bin for a in on_ray.added],
        [g.reason for g in local.open_gaps if "failed" in g.reason][:4])
    # Every gap's outcome (attempts, failure stages, reasons) is the same too.
    assert [g.model_dump() for g in on_ray.open_gaps] == [g.model_dump() for g in local.open_gaps]
    assert [a.model_dump() for a in on_ray.added] == [a.model_dump() for a in local.added]
    assert on_ray.scov_after == local.scov_after


def test_cli_features_and_verify_run_on_ray(cluster, tmp_path):
    import json

    from typer.testing import CliRunner

    from structcover.cli import app

    runner = CliRunner()
    saxpy = str(Path(__file__).resolve().parents[3] / "src" / "structcover" / "corpus" / "saxpy")
    args = ["features", saxpy, "--no-cache", "--json", "--compiler"]
    on_ray = runner.invoke(app, [*args, "--executor", "ray"])
    local = runner.invoke(app, args)
    assert on_ray.exit_code == 0, on_ray.output
    rows = json.loads(on_ray.stdout[on_ray.stdout.index("["):])
    assert len(rows) >= 5 and rows == json.loads(local.stdout[local.stdout.index("["):])
    assert all("compile.ok" in r["values"] for r in rows), "compiler features on Ray too"

    res = runner.invoke(app, ["verify", f"{saxpy}/variants/grid_stride.cu", "--task", "saxpy",
                              "--backend", "cpu", "--seed", "5", "--trials", "2", "--json",
                              "--executor", "ray"])
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.stdout[res.stdout.index("{"):])
    assert verdict["equivalent"] is True and verdict["backend"] == "cpu"
    assert verdict["seed"] is not None
    assert ray.is_initialized(), "the commands joined the running cluster and left it up"
