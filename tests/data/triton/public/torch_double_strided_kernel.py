# pytorch/pytorch torch/testing/_internal/triton_utils.py (BSD-3-Clause), kernel `double_strided_kernel`; extracted from torch 2.14.1, code unchanged.
import torch
import triton
from triton import language as tl


@triton.jit
def double_strided_kernel(
    in_ptr,
    out_ptr,
    in_y_stride,
    out_y_stride,
    X_BLOCK_SIZE: "tl.constexpr",
    Y_BLOCK_SIZE: "tl.constexpr",
):
    xid = tl.program_id(axis=0)
    yid = tl.program_id(axis=1)
    x_start = xid * X_BLOCK_SIZE
    y_start = yid * Y_BLOCK_SIZE
    x_offsets = x_start + tl.arange(0, X_BLOCK_SIZE)
    y_offsets = y_start + tl.arange(0, Y_BLOCK_SIZE)
    src_offsets = y_offsets[:, None] * in_y_stride + x_offsets[None, :]
    dst_offsets = y_offsets[:, None] * out_y_stride + x_offsets[None, :]
    src = tl.load(in_ptr + src_offsets)
    tl.store(out_ptr + dst_offsets, src * 2.0)
