"""Elementwise product in Triton (problem 1_elementwise_mul): planted off-by-one: the mask lets element n through."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets <= n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * b, mask=mask)


def mul(a, b):
    out = torch.empty_like(a)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    mul_kernel[grid](a, b, out, n, BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return mul(a.cuda().contiguous(), b.cuda().contiguous())
