"""no_precision_downgrade on Python candidates: a half dtype only compared against is no cast.

Regression for public Triton solutions that dispatch on the input dtype (``if x.dtype in
(torch.float16, torch.bfloat16): <half kernel> else: <fp32 kernel>``): they were rejected as
precision downgrades although nothing is converted for a float32 task.
"""

from __future__ import annotations

import pytest

from structcover.tools.verify.hacking_py import run_python_checks

_TRITON = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
{body}
        y = torch.empty_like(x)
        scale[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
'''


def _downgrade(body: str) -> tuple[bool, str]:
    result = {r.name: r for r in run_python_checks(_TRITON.format(body=body))}
    return result["no_precision_downgrade"].ok, result["no_precision_downgrade"].reason


@pytest.mark.parametrize("body", [
    "        block = 1024 if x.dtype == torch.float16 else 256",
    "        if x.dtype in [torch.float16, torch.bfloat16]:\n            x = x.contiguous()",
    "        assert x.dtype not in (torch.half,), 'fp32 only'",
])
def test_dtype_comparison_is_not_a_downgrade(body: str) -> None:
    ok, reason = _downgrade(body)
    assert ok, reason


@pytest.mark.parametrize("body", [
    "        x = x.to(torch.float16)",
    "        x = x.to(dtype=torch.bfloat16) if x.dtype == torch.float32 else x",
    "        low = torch.float16\n        x = x.to(low)",
    "        x = torch.empty(x.shape, dtype=torch.half).copy_(x)",
    "        x = x.half()",
    "        same = x.to(torch.float16) == x",
])
def test_half_casts_are_still_downgrades(body: str) -> None:
    ok, reason = _downgrade(body)
    assert not ok and ("torch.float16" in reason or "torch.bfloat16" in reason
                       or "torch.half" in reason or ".half()" in reason), reason
