import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, N, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Block pointers with boundary checks instead of masks.
    pm, pn = tl.program_id(0), tl.program_id(1)
    a = tl.make_block_ptr(a_ptr, shape=(N, N), strides=(N, 1), offsets=(pm * BM, 0),
                          block_shape=(BM, BK), order=(1, 0))
    b = tl.make_block_ptr(b_ptr, shape=(N, N), strides=(N, 1), offsets=(0, pn * BN),
                          block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(N, BK)):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1), padding_option="zero"),
                      tl.load(b, boundary_check=(0, 1), padding_option="zero"))
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, (BK, 0))
    c = tl.make_block_ptr(c_ptr, shape=(N, N), strides=(N, 1), offsets=(pm * BM, pn * BN),
                          block_shape=(BM, BN), order=(1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        N = A.shape[0]
        C = torch.empty((N, N), device=A.device, dtype=A.dtype)
        mm_kernel[(triton.cdiv(N, 32), triton.cdiv(N, 32))](A, B, C, N, BM=32, BN=32, BK=32)
        return C
