# FlagOpen/FlagGems src/flag_gems/ops/index_select.py (Apache-2.0); trimmed: the config-pruning helpers and the multi-batch kernel removed.
import logging
import math

import torch
import triton
import triton.language as tl

from .. import runtime
from ..utils import MAX_NRAM_SIZE, TOTAL_CORE_NUM, libentry


def get_max_block_size(dtype_size):
    return MAX_NRAM_SIZE // 3 // dtype_size


@triton.jit
def ld_st_1(indices, N: tl.constexpr, weight_ptr, in_mask, in_offsets, out_ptr):
    weight_offsets = indices[:, None] * N + tl.arange(0, N)
    embedding_weight = tl.load(weight_ptr + weight_offsets, in_mask[:, None])
    out_offsets = in_offsets[:, None] * N + tl.arange(0, N)
    tl.store(out_ptr + out_offsets, embedding_weight, in_mask[:, None])


@libentry()
@triton.autotune(
    configs=[
        triton.Config(kwargs={"BLOCK_SIZE": 512 * 2**4}, num_stages=1, num_warps=1)
    ],
    key=["N", "in_n_elements"],
)
@triton.jit
def one_batch_index_select_kernel(  # 2D
    out_ptr,
    in_ptr,
    in_n_elements: tl.constexpr,
    weight_ptr,
    N: tl.constexpr,
    dtype_size,
    inp_numel,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_jobs = tl.num_programs(axis=0)

    INDEX_BLOCK_SIZE: tl.constexpr = (BLOCK_SIZE + N - 1) // N

    step = num_jobs * INDEX_BLOCK_SIZE
    iters = tl.cdiv(in_n_elements, step)

    small_out = inp_numel.to(tl.int64) * dtype_size <= 2**31

    for i in tl.range(iters):
        iter_start = i * step
        iter_end = iter_start + step

        if iter_end <= in_n_elements:
            block_offset = iter_start + pid * INDEX_BLOCK_SIZE
            block_len = INDEX_BLOCK_SIZE
        else:
            rem_n_elements = in_n_elements - iter_start
            base_num = rem_n_elements // num_jobs
            remn_num = rem_n_elements % num_jobs
            extra_one = pid < remn_num

            block_offset = iter_start + (
                (base_num + 1) * pid if extra_one else (base_num * pid + remn_num)
            )
            block_len = base_num + extra_one

        in_offsets = block_offset + tl.arange(0, INDEX_BLOCK_SIZE)
        in_mask = in_offsets < (block_offset + block_len)
        indices = tl.load(in_ptr + in_offsets, in_mask, other=0.0)
        if indices.dtype != tl.int32 and small_out:
            indices_int32 = indices.to(tl.int32)
            ld_st_1(indices_int32, N, weight_ptr, in_mask, in_offsets, out_ptr)
        else:
            ld_st_1(indices, N, weight_ptr, in_mask, in_offsets, out_ptr)


def index_select(inp, dim, index):
    logging.debug("GEMS INDEX SELECT")
    if index.ndim == 0:
        index = index.unsqueeze(0)
    dim = dim % inp.ndim
    inp_shape = list(inp.shape)
    index_dim = index.numel()
    inp = inp.contiguous()
    inp_numel = inp.numel()
    c_dim = math.prod(inp_shape[(dim + 1) :])
    out_shape = inp_shape
    out_shape[dim] = index_dim
    out = torch.empty(out_shape, dtype=inp.dtype, device=inp.device)
    if torch.is_floating_point(inp):
        dtype_size = torch.finfo(inp.dtype).bits // 8
    else:
        dtype_size = torch.iinfo(inp.dtype).bits // 8

    def grid_fn(meta):
        index_block_size_grid = max(meta["BLOCK_SIZE"] // c_dim, 1)
        index_block_num = triton.cdiv(index_dim, index_block_size_grid)
        return (min(index_block_num, TOTAL_CORE_NUM),)

    one_batch_index_select_kernel[grid_fn](
        out, index, index_dim, inp, c_dim, dtype_size, inp_numel
    )
    return out
