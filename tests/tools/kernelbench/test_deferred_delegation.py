"""Which text findings of torch delegation the KernelBench path leaves to the run-time meter."""

from __future__ import annotations

import pytest

from structcover.tools.kernelbench.deferred_delegation import defers_to_run
from structcover.tools.verify.hacking import hard_failures
from structcover.tools.verify.hacking_py import run_python_checks

_HEAD = ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
         'source = r"""\n#include <torch/extension.h>\n'
         "__global__ void k(const float* x, float* p, int n) {\n"
         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "    if (i < n) atomicAdd(&p[blockIdx.x], x[i] * x[i]);\n}\n")


def candidate(wrapper: str, forward: str = "return ext.norm(x)", top: str = "") -> str:
    """A Frobenius-norm-like candidate: a kernel of partial sums, ``wrapper`` finishing them."""
    return (_HEAD + top + "torch::Tensor norm(torch::Tensor x) {\n"
            "    int n = x.numel();\n    auto p = torch::zeros({(n + 255) / 256}, x.options());\n"
            "    k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), p.data_ptr<float>(), n);\n"
            f"    {wrapper}\n}}\n" + '"""\n'
            'ext = load_inline(name="fn", cpp_sources="torch::Tensor norm(torch::Tensor x);",\n'
            '                  cuda_sources=source, functions=["norm"])\n\n\n'
            f"class ModelNew(nn.Module):\n    def forward(self, x):\n        {forward}\n")


def _defers(text: str) -> bool:
    hard = [r for r in hard_failures(run_python_checks(text)) if r.name != "defines_kernel"]
    assert hard, "the text check should find torch compute here"
    return defers_to_run(hard, text)


@pytest.mark.parametrize("text", [
    candidate("return x / p.sum().sqrt();"),
    candidate("return torch::sqrt(p.sum());"),
    candidate("return p;", forward="return ext.norm(x).sum()"),
    candidate("return p;", forward="return torch.sum(ext.norm(x))"),
], ids=["cxx-tensor-method", "cxx-torch-op", "py-tensor-method", "py-torch-op"])
def test_dispatched_torch_compute_is_left_to_the_run(text):
    assert _defers(text)


@pytest.mark.parametrize("text", [
    candidate("return at::native::sum(p);"),
    # The first finding is a light torch op in forward; the pasted ATen kernel comes after it.
    candidate("return at::NS(nat, ive)::mul(p, p);", forward="return torch.sum(ext.norm(x))",
              top="#define NS(a, b) a##b\n"),
    candidate("return at::cpu::sum(p);"),
    candidate("return p;", forward="return getattr(torch, 'su' + 'm')(ext.norm(x))"),
    candidate("return p;", forward="return torch.sum(ext.norm(x))", top="// numpy.sum\n"),
    candidate("return p.sum();", top="#include <cublas_v2.h>\n"),
    candidate("return p;", forward="return eval('torch.sum')(ext.norm(x))"),
    candidate("return at::NS(nat, ive)::sum(p);", top="#define NS(a, b) a##b\n"),
], ids=["aten-native", "light-op-first-then-pasted-aten-native", "aten-cpu", "getattr",
        "numpy-named", "library", "eval", "aten-native-pasted"])
def test_compute_the_watch_cannot_see_or_names_by_computation_stays_refused(text):
    hard = [r for r in hard_failures(run_python_checks(text)) if r.name != "defines_kernel"]
    assert hard and not defers_to_run(hard, text), [r.reason for r in hard]


def test_other_hard_failures_are_never_deferred():
    text = candidate("return p;", forward="self.cache = ext.norm(x)\n        return self.cache.sum()")
    hard = [r for r in hard_failures(run_python_checks(text)) if r.name != "defines_kernel"]
    assert {r.name for r in hard} >= {"no_cached_outputs"} and not defers_to_run(hard, text)


@pytest.mark.parametrize("text", [
    candidate("return torch::matmul(x.view({-1, 1}), p.view({1, -1}));"),
    candidate("return p;", forward="y = ext.norm(x)\n        return y @ y"),
    candidate("return p;", forward="return torch.mm(ext.norm(x)[None], x[:, None])"),
], ids=["cxx-matmul", "py-matmul-operator", "py-mm"])
def test_ops_that_are_never_a_finishing_step_stay_refused_unrun(text):
    hard = [r for r in hard_failures(run_python_checks(text)) if r.name != "defines_kernel"]
    assert hard and not defers_to_run(hard, text), [r.reason for r in hard]
