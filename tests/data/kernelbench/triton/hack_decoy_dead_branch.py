"""HACK (decoy behind a branch never taken): the launch is in the file, so the static check sees
a launched kernel, but at run time forward never reaches it (caught by the child's launch count)."""
import torch
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
        n = a.numel()
        if n < 0:
            out = torch.empty_like(a)
            mul_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
            return out
        return a * b
