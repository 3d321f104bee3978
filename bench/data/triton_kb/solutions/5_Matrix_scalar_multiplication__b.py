import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_kernel(a_ptr, c_ptr, s, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(c_ptr + offs, tl.load(a_ptr + offs) * s)
    else:
        mask = offs < n
        tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        C = torch.empty_like(A)
        n = A.numel()
        scale_kernel[(triton.cdiv(n, 1024),)](A, C, s, n, BLOCK=1024)
        return C
