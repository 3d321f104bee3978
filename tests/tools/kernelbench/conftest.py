"""Load the fake CUDA device for the KernelBench tests (tests are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _load() -> None:
    if "kb_fake_cuda" not in sys.modules:
        spec = importlib.util.spec_from_file_location("kb_fake_cuda",
                                                      Path(__file__).with_name("fake_cuda.py"))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["kb_fake_cuda"] = module
        spec.loader.exec_module(module)


_load()


RELU_PROBLEM = '''"""ReLU of one vector."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4099)]


def get_init_inputs():
    return []
'''

_RELU_KERNEL = '''import importlib
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
__global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="relu_guard", cpp_sources="torch::Tensor run(torch::Tensor x);",
                  cuda_sources=source, functions=["run"])

'''


def _relu_candidate(forward: str, top: str = "") -> str:
    """A ReLU candidate with a real kernel; ``forward``'s body and module code ``top``."""
    return f"{_RELU_KERNEL}{top}\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n{forward}\n"


@pytest.fixture(scope="module")
def relu_problem(tmp_path_factory):
    """A ReLU problem (4099 floats) for candidates made by ``relu_candidate``."""
    from structcover.tools.kernelbench.problem import resolve_problem

    path = tmp_path_factory.mktemp("problem") / "relu.py"
    path.write_text(RELU_PROBLEM)
    return resolve_problem(path)


@pytest.fixture
def relu_candidate():
    """``relu_candidate(forward, top="")``: a candidate with a real ReLU kernel (``ext.run``)."""
    return _relu_candidate
