# pytorch/pytorch torch/testing/_internal/triton_utils.py (BSD-3-Clause), kernel `add_kernel_with_block_ptr`; extracted from torch 2.14.1, code unchanged.
import torch
import triton
from triton import language as tl


@triton.jit
def add_kernel_with_block_ptr(
    x_ptr,
    y_ptr,
    output_ptr,
    n_elements,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    x = tl.load(
        tl.make_block_ptr(
            base=x_ptr,
            shape=[n_elements],
            strides=[1],
            offsets=[block_start],
            block_shape=[BLOCK_SIZE],
            order=[0],
        ),
        boundary_check=[0],
    )
    y = tl.load(
        tl.make_block_ptr(
            base=y_ptr,
            shape=[n_elements],
            strides=[1],
            offsets=[block_start],
            block_shape=[BLOCK_SIZE],
            order=[0],
        ),
        boundary_check=[0],
    )
    output = x + y
    tl.store(
        tl.make_block_ptr(
            base=output_ptr,
            shape=[n_elements],
            strides=[1],
            offsets=[block_start],
            block_shape=[BLOCK_SIZE],
            order=[0],
        ),
        output,
        boundary_check=[0],
    )
