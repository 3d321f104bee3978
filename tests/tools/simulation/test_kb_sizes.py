"""The two measured sizes of a KernelBench problem lie on one ray towards the problem's own sizes,
so a counter that grows with one size only (threads ~ rows) is extrapolated by that size's growth."""

import math
from pathlib import Path

import pytest

from structcover.tools.kernelbench.problem import load_problem
from structcover.tools.simulation.kb_profile import KbProfile, profile_sizes
from structcover.tools.simulation.kb_profile_features import extrapolate
from structcover.tools.simulation.kb_sizes import RAY_TOLERANCE, ray_skew, volume

#: 90_cumprod's shape: 128 rows of 4000. Rows are a multiple of 32, so a shrunk row count stays
#: one (32, 64, 96 or 128): at the 2^16 budget the rows sit at 32 in both measured sizes.
CUMPROD_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)

batch_size = 128
input_shape = (4000,)
dim = 1

def get_inputs():
    return [torch.randn(batch_size, *input_shape)]

def get_init_inputs():
    return [dim]
'''


@pytest.fixture
def cumprod(tmp_path: Path):
    path = tmp_path / "90_cumprod.py"
    path.write_text(CUMPROD_PROBLEM)
    return load_problem(path)


def test_skew_is_zero_on_the_ray_and_large_off_it():
    full = {"rows": 128, "cols": 4096}
    # Halving both sizes from (64, 2048): the same log step as from (64, 2048) to the full.
    assert ray_skew(full, {"rows": 64, "cols": 2048}, {"rows": 32, "cols": 1024}) == 0.0
    # Rows fixed at 32 while columns grow: the pair says nothing about growth in rows, and
    # extrapolating along it misses the rows' 4x by a factor of 4 (log 4 = 1.39).
    skew = ray_skew(full, {"rows": 32, "cols": 1024}, {"rows": 32, "cols": 512})
    assert skew == pytest.approx(math.log(4.0), rel=0.01)
    assert skew > RAY_TOLERANCE
    # A size that is the problem's own in the larger measured size never needs to grow.
    assert ray_skew(full, dict(full), {"rows": 64, "cols": 2048}) == 0.0


def test_volume_counts_only_the_sizes_that_scale():
    assert volume({"M": 64, "K": 1024, "kernel_size": 3}) == 64 * 1024


def test_cumprod_pair_grows_the_rows_too(cumprod):
    large, small = profile_sizes(cumprod, 2.0 ** 16)
    # Before, both sizes had 32 rows (32 x 1504 and 32 x 512).
    assert large["batch_size"] > small["batch_size"]
    assert ray_skew(dict(cumprod.sizes), large, small) <= RAY_TOLERANCE
    # Rows stay multiples of 32, as the problem's are.
    assert large["batch_size"] % 32 == 0 and small["batch_size"] % 32 == 0
    assert cumprod.work(large) >= 2 * cumprod.work(small)


def test_one_thread_per_row_extrapolates_to_the_problems_rows(cumprod):
    large, small = profile_sizes(cumprod, 2.0 ** 16)
    # A scan kernel with one thread per row: threads = rows, loads = rows * columns.
    def counters(sizes: dict[str, int]) -> dict[str, dict[str, int]]:
        rows, cols = sizes["batch_size"], sizes["input_shape__0"]
        return {"scan": {"launches": 1, "threads": rows, "global_load_requests": rows * cols}}

    prof = KbProfile(candidate="c", problem="90_cumprod", full_sizes=dict(cumprod.sizes),
                     sizes=[large, small], kernels=[counters(large), counters(small)],
                     output_elements=[1, 1], output_bytes=[4, 4], input_bytes=[4, 4],
                     work=[cumprod.work(large), cumprod.work(small)])
    extrapolated, _ = extrapolate(prof, cumprod.work())
    # The problem has 128 rows of 4000: 128 threads, not the 32 measured at the old sizes.
    assert extrapolated["scan"]["threads"] == pytest.approx(128, rel=0.1)
    assert extrapolated["scan"]["global_load_requests"] == pytest.approx(128 * 4000, rel=0.1)
