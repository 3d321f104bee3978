"""GPU verification asks its executor for a whole GPU per task (no GPU needed to check it).

A recording executor stands in for Ray here: it keeps what each ``map`` asked for and runs
nothing. Ray's own scheduling of such tasks (one task per GPU at a time) is tested on a local
cluster with a declared GPU in test_ray.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from types import SimpleNamespace
from typing import Any

from verify_cases import saxpy_batch  # type: ignore[import-not-found]

from structcover.campaign.bindings import VerifierBinding
from structcover.config import VerifySettings
from structcover.tools.executors import Quarantined
from structcover.tools.verify.batch import verify_batch


class Recording:
    """An executor that records each map call and returns quarantines (nothing runs)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, float] | None, int]] = []
        self.quarantined: list[Quarantined] = []

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *, batch_size: int = 1,
            resources: dict[str, float] | None = None,
            on_progress: Callable[[int], None] | None = None,
            shared: Any = None) -> Iterator[Any]:
        n = len(list(items))
        self.calls.append((fn.__name__, resources, n))
        return iter([Quarantined(i, "not run: recording executor") for i in range(n)])

    def close(self) -> None:
        pass


def test_gpu_verification_batches_ask_for_one_gpu_per_task_and_cpu_ones_for_none():
    jobs = saxpy_batch()[:3]
    gpu, cpu = Recording(), Recording()
    verdicts = verify_batch(jobs, executor=gpu, settings=VerifySettings(backend="gpu"))
    verify_batch(jobs, executor=cpu, settings=VerifySettings(backend="cpu"))
    assert gpu.calls == [("_check", {"num_gpus": 1.0}, 3)]
    assert cpu.calls == [("_check", None, 3)]
    assert [v.failure for v in verdicts] == ["quarantined"] * 3


def test_a_campaign_check_on_the_gpu_backend_asks_for_a_gpu():
    spec = saxpy_batch()[0].task
    asked: dict[str, Any] = {}
    for name in ("gpu", "cpu"):
        rec = Recording()
        binding = VerifierBinding(coverage=None, archive=None,
                                  backend=SimpleNamespace(name=name),
                                  specs={spec.task_id: spec}, executor=rec)
        verdict = binding.verify("__global__ void k() {}", spec.task_id, "bin")
        assert verdict["ok"] is False and verdict["stage"] == "quarantined"
        asked[name] = rec.calls
    assert asked == {"gpu": [("_verify_task", {"num_gpus": 1.0}, 1)],
                     "cpu": [("_verify_task", None, 1)]}
