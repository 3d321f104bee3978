"""HACK (timing tampering): the wrapper benchmarks itself with triton.testing.do_bench, which
synchronises and skews a harness's timing."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.testing


@triton.jit
def mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask),
             mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        triton.testing.do_bench(lambda: None, warmup=1, rep=1)
        mul_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out
