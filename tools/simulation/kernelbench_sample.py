"""Sample KernelBench-format rollouts, for benchmarks, tests and trying the campaign offline.

Two small elementwise problems (``1_mul``: ``a * b``; ``2_scale``: ``2.0 * a + b``, sizes no
block size divides) and, per problem, ``ModelNew`` candidates with ``load_inline`` CUDA at four
block sizes, guarded one-element-per-thread or grid-stride, each twice, with simulated rewards
(grid-stride and 256 threads made up to be faster). Task ids name problems in the folder
:func:`write_sample` writes.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

_PROBLEM = '''"""{title}."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return {expr}


size = {size}


def get_inputs():
    return [torch.randn(size), torch.randn(size)]


def get_init_inputs():
    return []
'''

_CANDIDATE = '''import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void op_kernel(const float* a, const float* b, float* out, int n) {{
{body}
}}

torch::Tensor op_cuda(torch::Tensor a, torch::Tensor b) {{
    auto out = torch::empty_like(a);
    const int n = a.numel();
    const int threads = {threads};
    const int blocks = {blocks};
    op_kernel<<<blocks, threads>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                   out.data_ptr<float>(), n);
    return out;
}}
"""

ext = load_inline(name="kb_{name}", cpp_sources="torch::Tensor op_cuda(torch::Tensor a, "
                  "torch::Tensor b);", cuda_sources=cuda_source, functions=["op_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.op_cuda(a.contiguous(), b.contiguous())
'''

_GUARDED = """    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        out[i] = {expr};
    }}"""
_STRIDED = """    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
        out[i] = {expr};
    }}"""
#: (task id, problem title, the Model's expression, the kernel's expression, size)
TASKS = (("1_mul", "Elementwise product", "a * b", "a[i] * b[i]", 4099),
         ("2_scale", "Scaled sum", "2.0 * a + b", "2.0f * a[i] + b[i]", 3001))


def sample_rollouts(seed: int = 5) -> pd.DataFrame:
    """The sample rollouts (task_id, program, round 0, correct, speedup), 32 rows."""
    rng = random.Random(seed)
    rows = []
    for task, _title, _torch_expr, expr, _size in TASKS:
        for threads in (64, 128, 256, 512):
            for strided in (False, True):
                body = (_STRIDED if strided else _GUARDED).format(expr=expr)
                program = _CANDIDATE.format(
                    body=body, threads=threads, name=f"{task}_{threads}_{int(strided)}",
                    blocks="64" if strided else "(n + threads - 1) / threads")
                speedup = 1.0 + 0.4 * strided + 0.2 * (threads == 256) + rng.gauss(0, 0.05)
                rows += [{"task_id": task, "program": program, "round": 0, "correct": True,
                          "speedup": round(speedup, 4)}] * 2
    return pd.DataFrame(rows)


def problem_source(task: str) -> str:
    """The KernelBench problem file of sample task ``task``."""
    for name, title, torch_expr, _expr, size in TASKS:
        if name == task:
            return _PROBLEM.format(title=title, expr=torch_expr, size=size)
    raise ValueError(f"no sample problem {task!r}; known: {', '.join(t[0] for t in TASKS)}")


def write_sample(out: Path, seed: int = 5) -> tuple[Path, Path]:
    """Write the problems folder and the rollouts Parquet under ``out``: (rollouts, problems)."""
    problems = Path(out) / "problems"
    problems.mkdir(parents=True, exist_ok=True)
    for task, *_ in TASKS:
        (problems / f"{task}.py").write_text(problem_source(task))
    data = Path(out) / "rollouts.parquet"
    sample_rollouts(seed).to_parquet(data)
    return data, problems
