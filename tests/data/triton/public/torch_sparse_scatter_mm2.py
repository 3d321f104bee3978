# pytorch/pytorch torch/sparse/_triton_ops.py (BSD-3-Clause): _scatter_mm2_kernel, _scatter_mm2; extracted from torch 2.14.1, code unchanged (helpers it calls are not included).
import torch
import triton
import triton.language as tl


@triton.jit
def _scatter_mm2_kernel(
    M: tl.constexpr,
    K: tl.constexpr,
    N: tl.constexpr,
    blocks_ptr,
    blocks_stride_P,
    blocks_stride_M,
    blocks_stride_K,
    others_ptr,
    others_stride_Q,
    others_stride_K,
    others_stride_N,
    accumulators_ptr,
    accumulators_stride_R,
    accumulators_stride_M,
    accumulators_stride_N,
    pq_offsets_ptr,
    pq_offsets_stride,
    pq_ptr,
    pq_stride_T,
    pq_stride_1,
    dot_out_dtype: tl.constexpr,
    TILE_M: tl.constexpr,
    TILE_N: tl.constexpr,
    allow_tf32: tl.constexpr,
):
    Ms = M // TILE_M

    pid_t = tl.program_id(axis=0)

    pid = tl.program_id(axis=1)
    pid_m = pid // Ms
    pid_n = pid % Ms

    rm = pid_m * TILE_M + tl.arange(0, TILE_M)
    rn = pid_n * TILE_N + tl.arange(0, TILE_N)
    rk = tl.arange(0, K)

    A_ptr = blocks_ptr + (
        rm[:, None] * blocks_stride_M + rk[None, :] * blocks_stride_K
    )
    B_ptr = others_ptr + (
        rk[:, None] * others_stride_K + rn[None, :] * others_stride_N
    )

    g0 = tl.load(pq_offsets_ptr + pid_t * pq_offsets_stride)
    g1 = tl.load(pq_offsets_ptr + (pid_t + 1) * pq_offsets_stride)

    if g0 == g1:
        return

    acc_block = tl.zeros((TILE_M, TILE_N), dtype=dot_out_dtype)

    for i in range(g0, g1):
        p = tl.load(pq_ptr + i * pq_stride_T)
        q = tl.load(pq_ptr + i * pq_stride_T + pq_stride_1)
        A = tl.load(A_ptr + p * blocks_stride_P)
        B = tl.load(B_ptr + q * others_stride_Q)
        acc_block += tl.dot(A, B, out_dtype=dot_out_dtype, allow_tf32=allow_tf32)

    C_ptr = (
        accumulators_ptr
        + pid_t * accumulators_stride_R
        + (
            rm[:, None] * accumulators_stride_M
            + rn[None, :] * accumulators_stride_N
        )
    )
    tl.store(C_ptr, acc_block.to(accumulators_ptr.dtype.element_ty))


def _scatter_mm2(
    blocks: torch.Tensor,
    others: torch.Tensor,
    pq_offsets: torch.Tensor,
    pq_indices: torch.Tensor,
    accumulators: torch.Tensor,
):
    _P, M, K = blocks.shape
    _Q, _, N = others.shape

    meta = dict(
        TILE_M=max(16, M // 4), TILE_N=max(16, N // 4), num_stages=1, num_warps=2
    )

    def grid(META):
        return (
            pq_offsets.shape[0] - 1,
            triton.cdiv(M, META["TILE_M"]) * triton.cdiv(N, META["TILE_N"]),
            1,
        )

    dot_out_dtype = {
        torch.float16: tl.float32,
        torch.bfloat16: tl.float32,
        torch.float32: tl.float64,
        torch.float64: tl.float64,
    }[accumulators.dtype]
    if "allow_tf32" not in meta:
        meta.update(allow_tf32=dot_out_dtype == tl.float32)
    _scatter_mm2_kernel[grid](
        M,
        K,
        N,
        blocks,
        blocks.stride(0),
        blocks.stride(1),
        blocks.stride(2),
        others,
        others.stride(0),
        others.stride(1),
        others.stride(2),
        accumulators,
        accumulators.stride(0),
        accumulators.stride(1),
        accumulators.stride(2),
        pq_offsets,
        pq_offsets.stride(0),
        pq_indices,
        pq_indices.stride(0),
        pq_indices.stride(1),
        dot_out_dtype=dot_out_dtype,
        **meta,
    )
