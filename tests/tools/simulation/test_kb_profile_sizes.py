"""The two sizes a KernelBench candidate is profiled at always differ in work when the problem
is larger than the budget, and a profile with one size is extrapolated in proportion to the
work, never left at the emulated size."""

from pathlib import Path

import pytest

from structcover.tools.kernelbench.problem import load_problem
from structcover.tools.simulation.kb_profile import KbProfile, profile_sizes
from structcover.tools.simulation.kb_profile_features import extrapolate

#: A 4-D norm problem: at the shrink floor of 16 per size its work is exactly 2^16.
NORM_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.norm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)

batch_size = 16
features = 64
dim1 = 256
dim2 = 256

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [features]
'''


@pytest.fixture
def norm(tmp_path: Path):
    path = tmp_path / "34_InstanceNorm.py"
    path.write_text(NORM_PROBLEM)
    return load_problem(path)


def test_sizes_differ_when_the_budget_is_at_the_floor(norm):
    budget = 2.0 ** 16
    large, small = profile_sizes(norm, budget)
    # Every size at the floor already fills the budget, so a quarter of it cannot shrink
    # further: the larger size is taken at four times the budget instead.
    assert small == {"batch_size": 16, "features": 16, "dim1": 16, "dim2": 16}
    assert norm.work(large) > norm.work(small)
    assert norm.work(large) <= 4 * budget
    assert large == norm.shrunk(4 * budget)


def test_a_problem_within_the_budget_is_measured_at_its_own_sizes(norm):
    large, small = profile_sizes(norm, 2.0 ** 40)
    assert large == small == norm.sizes


def test_sizes_still_halve_normally_above_the_floor(norm):
    budget = 2.0 ** 22
    large, small = profile_sizes(norm, budget)
    assert large == norm.shrunk(budget)
    assert norm.work(small) < norm.work(large) <= budget


def test_one_measured_size_extrapolates_in_proportion_to_the_work():
    row = {"launches": 1, "global_load_requests": 2048, "global_load_sectors": 8192}
    prof = KbProfile(candidate="c", problem="p", full_sizes={}, sizes=[{}, {}],
                     kernels=[{"k": dict(row)}, {"k": dict(row)}], output_elements=[1, 1],
                     output_bytes=[4, 4], input_bytes=[4, 4], work=[65536.0, 65536.0])
    counters, compulsory = extrapolate(prof, 8 * 65536.0)
    # No growth can be measured from one size: every counter scales with the work (an
    # exponent of 0 would predict the problem at the emulated size).
    assert counters["k"]["global_load_requests"] == pytest.approx(8 * 2048)
    assert counters["k"]["global_load_sectors"] == pytest.approx(8 * 8192)
    assert counters["k"]["launches"] == 1  # a launch count is not taken to grow
    assert compulsory == pytest.approx(8 * 8)
