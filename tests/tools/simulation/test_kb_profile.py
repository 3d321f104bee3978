"""Profiles of KernelBench candidates on the CPU path: counters a reader can count by hand,
extrapolation to the problem's size, the timing model's order, reasons instead of zeros."""

import math
from pathlib import Path

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench.problem import resolve_problem  # noqa: E402
from structcover.tools.simulation.gpu_specs import DEFAULT_GPU, gpu_spec  # noqa: E402
from structcover.tools.simulation.kb_profile import profile_candidate  # noqa: E402
from structcover.tools.simulation.kb_profile_features import (  # noqa: E402
    COLUMNS,
    extrapolate,
    profile_features,
)
from structcover.tools.simulation.timing_model import LAUNCH_S  # noqa: E402

pytestmark = pytest.mark.kernelbench
DATA = Path(__file__).parents[2] / "data" / "kernelbench"
#: Work budget of these tests: ReLU on 2^20 elements is measured at 4096 and 1024.
BUDGET = 4096.0


def _profile(candidate: str, problem: str, tmp_path: Path):
    return profile_candidate((DATA / "candidates" / candidate).read_text(),
                             resolve_problem(problem, DATA / "problems"), budget=BUDGET,
                             cache_dir=tmp_path)


@pytest.fixture(scope="module")
def relu(tmp_path_factory):
    return _profile("relu_cuda.py", "8", tmp_path_factory.mktemp("cache"))


def test_relu_counters_by_hand(relu):
    assert relu.error == ""
    assert [s["size"] for s in relu.sizes] == [4096, 1024]
    for sizes, kernels in zip(relu.sizes, relu.kernels, strict=True):
        n = sizes["size"]
        c = kernels["relu_kernel"]
        blocks = -(-n // 256)  # (n + 255) / 256 blocks of 256 threads
        warps = blocks * 8
        assert (c["launches"], c["blocks"], c["threads"], c["warps"]) == (1, blocks, blocks * 256,
                                                                          warps)
        # One coalesced float load and one store per thread inside `if (i < n)`: one warp
        # request per warp with an active lane, ceil(n / 32); 32 lanes x 4 B = 4 sectors of
        # 32 B per full warp (buffers start aligned), so ceil(4 n / 32) sectors in all.
        assert c["global_load_requests"] == c["global_store_requests"] == -(-n // 32)
        assert c["global_load_sectors"] == c["global_store_sectors"] == -(-n // 8)
        assert c["global_load_bytes"] == 4 * n
        # The `if` is evaluated once by every warp; n is a multiple of 32: no warp diverges.
        assert (c["branch_requests"], c["branch_lanes"], c["divergent_branches"]) == (
            warps, warps * 32, 0)
        # `blockIdx.x * blockDim.x + threadIdx.x` is one integer FMA per thread; the compare
        # and the `?:` count nothing, so no float operation at all.
        assert c["ops_int_fma"] == blocks * 256
        assert sum(v for k, v in c.items() if k.startswith("ops_fp")) == 0
        assert c["shared_load_requests"] == c["barriers"] == 0


def test_relu_features_are_normalized_per_output_element(relu):
    problem = resolve_problem("8", DATA / "problems")
    row = profile_features(relu, problem.work())
    assert row["profile.reason"] == ""
    assert set(COLUMNS) <= set(row)
    assert row["profile.global_load_requests_per_el"] == pytest.approx(1 / 32)
    assert row["profile.load_sectors_per_request"] == pytest.approx(4.0)
    assert row["profile.threads_per_block"] == pytest.approx(256.0)
    # Every byte read and written once, in whole sectors: traffic equals the compulsory bytes.
    assert row["profile.traffic_over_compulsory"] == pytest.approx(1.0)
    assert row["profile.model_time_s"] > 0


def test_extrapolation_reaches_the_problems_own_size(relu):
    problem = resolve_problem("8", DATA / "problems")
    counters, compulsory = extrapolate(relu, problem.work())
    c = counters["relu_kernel"]
    n = 1 << 20
    # Requests and blocks grow linearly with the work (exponent 1), launches do not (0).
    assert c["global_load_requests"] == pytest.approx(n / 32)
    assert c["blocks"] == pytest.approx(n / 256)
    assert c["launches"] == 1
    assert compulsory == pytest.approx(2 * 4 * n)  # one float in, one out, per element


def test_one_block_is_modelled_slower_than_a_thread_per_element(relu, tmp_path):
    problem = resolve_problem("8", DATA / "problems")
    slow = _profile("relu_one_block_cuda.py", "8", tmp_path)
    assert slow.error == ""
    c = slow.kernels[0]["relu_one_block"]
    n = slow.sizes[0]["size"]
    # Same coalesced requests; the loop condition runs n / 256 + 1 times in each of 8 warps;
    # `i += blockDim.x` is one integer add per iteration per thread (n in all).
    assert c["global_load_requests"] == n // 32
    assert c["branch_requests"] == 8 * (n // 256 + 1)
    assert c["ops_int_add"] == n
    fast_row = profile_features(relu, problem.work())
    slow_row = profile_features(slow, problem.work())
    assert slow_row["profile.model_time_s"] > 2 * fast_row["profile.model_time_s"]


def test_a_candidate_without_cuda_gets_a_reason_not_zeros(tmp_path):
    prof = _profile("elementwise_mul_torch.py", "1", tmp_path)
    assert prof.error.startswith("no-extension")
    row = profile_features(prof, 1.0)
    assert row["profile.reason"].startswith("no-extension")
    assert all(math.isnan(row[c]) for c in COLUMNS)


def test_profiles_are_cached_by_content(tmp_path):
    first = _profile("relu_cuda.py", "8", tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 1
    again = _profile("relu_cuda.py", "8", tmp_path)
    assert again.to_json() == first.to_json()
    text = (DATA / "candidates" / "relu_cuda.py").read_text().replace(
        "<<<(n + 255) / 256, 256>>>", "<<<(n + 127) / 128, 128>>>")
    other = profile_candidate(text, resolve_problem("8", DATA / "problems"), budget=BUDGET,
                              cache_dir=tmp_path)
    assert other.kernels[0]["relu_kernel"]["blocks"] == 4096 // 128
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_a_zero_filled_output_is_charged_as_torch_traffic(relu, tmp_path):
    # The same ReLU with `torch::zeros_like` for its output: torch writes the whole output once
    # more (a fill kernel) before the ReLU overwrites it. The emulator's counters cannot see
    # that work; the profile child's dispatch meter does.
    problem = resolve_problem("8", DATA / "problems")
    zeros = _profile("relu_zeros_cuda.py", "8", tmp_path)
    assert zeros.error == ""
    for sizes, ops in zip(zeros.sizes, zeros.torch_ops, strict=True):
        assert ops["zeros_like"] == {"launches": 1, "read_bytes": 0,
                                     "write_bytes": 4 * sizes["size"]}
    assert relu.torch_ops == [{}, {}]  # empty_like launches nothing
    fill = profile_features(zeros, problem.work())
    plain = profile_features(relu, problem.work())
    assert fill["profile.torch_bytes_per_el"] == pytest.approx(4.0)
    assert fill["profile.torch_launches"] == 1
    assert plain["profile.torch_bytes_per_el"] == 0
    # The model charges the fill as one more launch that writes 4 B per element of the 2^20
    # at the DRAM peak of the default GPU; the ReLU kernel itself is modelled the same.
    extra = LAUNCH_S + 4 * (1 << 20) / gpu_spec(DEFAULT_GPU).dram_bytes_per_s
    assert fill["profile.model_time_s"] - plain["profile.model_time_s"] == pytest.approx(extra)


def test_only_delegation_is_measured_despite_the_checks():
    from structcover.tools.simulation.kb_profile import delegation_only

    kernel = (DATA / "candidates" / "relu_cuda.py").read_text()
    assert not delegation_only(kernel)  # nothing refused at all
    # The same kernel with the result finished by torch in forward: delegation alone.
    assert "return ext.relu_cuda(x.contiguous())" in kernel
    partial = kernel.replace("return ext.relu_cuda(x.contiguous())",
                             "return torch.sum(ext.relu_cuda(x.contiguous()))")
    assert delegation_only(partial)
    # Delegation plus state kept between calls: a measurement would mislead, so it stays out.
    cached = partial.replace("return torch.sum(",
                             "self.last = x\n        return torch.sum(")
    assert not delegation_only(cached)
