"""The child's GPU path end to end on a fake device: the reference and the candidate timed with
events, a speedup in the verdict, and work left on a side stream caught after the trials.

The child runs in this process (``child.CUDA`` is the fake; tensors stay on the CPU), so what
is tested is the GPU path's wiring; the jail and a real device are tested by
``scripts/gpu_check.sh``."""

import sys
from pathlib import Path

import pytest
from kb_fake_cuda import FakeCuda

torch = pytest.importorskip("torch")

from structcover.tools.kernelbench import child  # noqa: E402
from structcover.tools.kernelbench.problem import load_problem  # noqa: E402
from structcover.tools.kernelbench.verify import _copy_inputs, conclude  # noqa: E402

pytestmark = pytest.mark.kernelbench
PROBLEM = Path(__file__).parents[2] / "data" / "kernelbench" / "problems" / "1_elementwise_mul.py"

HONEST = """
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * b
"""
SIDE_STREAM = """
import torch
import torch.nn as nn
import kb_fake_cuda

class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros_like(a)
        kb_fake_cuda.DEVICE.queue_side_stream(lambda: out.copy_(a * b))
        return out
"""


@pytest.fixture()
def fake_device(monkeypatch):
    import kb_fake_cuda

    cuda = FakeCuda(virtual=False)  # wall-clock events: the models really run
    monkeypatch.setattr(child, "CUDA", cuda)
    monkeypatch.setattr(kb_fake_cuda, "DEVICE", cuda, raising=False)
    threads = torch.get_num_threads()
    yield cuda
    torch.set_num_threads(threads)
    for name in ("kb_problem", "kb_candidate"):
        sys.modules.pop(name, None)


def _run(tmp_path, candidate: str):
    problem = load_problem(PROBLEM)
    base = {"device": "cpu", "gpu": True, "problem_file": str(PROBLEM), "sizes": problem.sizes,
            "seed": 3, "trials": 2, "time": True, "warmup": 1, "timing_trials": 5}
    ref_dir, cand_dir = tmp_path / "ref", tmp_path / "cand"
    ref_dir.mkdir()
    cand_dir.mkdir()
    ref = child.run_reference({**base, "mode": "reference"}, ref_dir)
    inputs = _copy_inputs(ref, ref_dir, tmp_path / "inputs")
    (tmp_path / "cand.py").write_text(candidate)
    cand = child.run_candidate({**base, "mode": "candidate", "candidate_file":
                                str(tmp_path / "cand.py"), "inputs_dir": str(inputs)}, cand_dir)
    return problem, ref, ref_dir, cand, cand_dir


def test_timed_on_the_device_with_a_speedup(tmp_path, fake_device):
    problem, ref, ref_dir, cand, cand_dir = _run(tmp_path, HONEST)
    assert ref["timing"]["trials"] == 5 and cand["timing"]["trials"] == 5
    verdict = conclude(HONEST, problem, 3, ref, ref_dir, cand, cand_dir, backend="gpu",
                       compiled=None, notes=[], hacking_flags=[])
    assert verdict.equivalent is True and verdict.backend == "gpu"
    assert verdict.timing is not None and verdict.timing.median_ms > 0
    expected = ref["timing"]["median_ms"] / cand["timing"]["median_ms"]
    assert verdict.speedup == pytest.approx(expected)
    # Every trial waited for the device, then the check and the timing loop did.
    assert fake_device.device_syncs >= 2 + 1 + 5


def test_side_stream_work_fails_although_every_trial_matched(tmp_path, fake_device):
    problem, ref, ref_dir, cand, cand_dir = _run(tmp_path, SIDE_STREAM)
    assert len(cand["trials"]) == 2  # each trial synchronized the device: outputs right
    verdict = conclude(SIDE_STREAM, problem, 3, ref, ref_dir, cand, cand_dir, backend="gpu",
                       compiled=None, notes=[], hacking_flags=[])
    assert verdict.equivalent is False and verdict.failure == "side-stream"
    assert verdict.speedup is None


ALIAS = """
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, a, b):
        a *= b
        return a
"""
KEPT_BUFFER = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = None

    def forward(self, a, b):
        if self.buf is None:
            self.buf = torch.empty_like(a)
        return torch.mul(a, b, out=self.buf)
"""
CHANGES_INPUT = """
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, a, b):
        out = a * b
        b.zero_()
        return out
"""


@pytest.mark.parametrize(("source", "failure", "words"), [
    (ALIAS, "aliases-input", "shares memory with an input"),
    (KEPT_BUFFER, "output-reused", "memory returned by trial 0"),
    (CHANGES_INPUT, "modified-inputs", "input 1 was changed"),
])
def test_run_time_checks_name_the_hack(tmp_path, fake_device, source, failure, words):
    problem, ref, ref_dir, cand, cand_dir = _run(tmp_path, source)
    verdict = conclude(source, problem, 3, ref, ref_dir, cand, cand_dir, backend="gpu",
                       compiled=None, notes=[], hacking_flags=[])
    assert verdict.equivalent is False and verdict.failure == failure
    assert words in verdict.detail
