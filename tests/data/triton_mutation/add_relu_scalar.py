"""relu(a + b): one element per Triton program (grid = n), the relu in the kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_one(a_ptr, b_ptr, out_ptr):
    i = tl.program_id(0)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    s = a + b
    tl.store(out_ptr + i, tl.where(s > 0, s, 0.0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        add_one[(out.numel(),)](a, b, out)
        return out
