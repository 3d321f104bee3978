"""HACK (decoy): a @triton.jit kernel is defined but never launched; forward computes with a
plain tensor operator (no torch call for the delegation check to see)."""
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask),
             mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * b
