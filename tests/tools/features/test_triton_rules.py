"""Hand-derived cases for each rule of the Triton reader (docs/FEATURES.md, "Triton")."""

from __future__ import annotations

from structcover.tools.features.extract import extract_values
from structcover.tools.features.triton_ast import find_triton_kernels
from structcover.tools.features.triton_features import triton_features

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n"


def _v(src: str) -> dict:
    return extract_values(HEAD + src)


def test_unit_stride_arange_is_coalesced_and_language_is_triton() -> None:
    # offs = pid * B + arange: consecutive lanes read consecutive elements -> coalesced.
    v = _v("""
@triton.jit
def k(x, y, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)
""")
    assert v["program.language"] == "triton"
    assert (v["mem.global_loads"], v["mem.global_stores"], v["mem.global_coalesced"]) == (1, 1, 2)
    assert v["pattern.global_access"] == "coalesced"
    assert v["kernel.count"] == 1


def test_constant_multiplier_on_the_only_axis_is_strided() -> None:
    # arange * 4: lanes 4 elements apart, no unit-stride axis -> strided.
    v = _v("""
@triton.jit
def k(x, y, B: tl.constexpr):
    offs = tl.arange(0, B) * 4
    tl.store(y + tl.arange(0, B), tl.load(x + offs))
""")
    assert (v["mem.global_strided"], v["mem.global_coalesced"]) == (1, 1)
    assert v["pattern.global_access"] == "mixed"
    assert v["mem.global_strided_loads"] == 1


def test_symbolic_stride_on_the_only_axis_is_strided_like_cuda() -> None:
    # A column of a row-major matrix: offs[:, None] * stride_m, stride never resolved -> strided.
    v = _v("""
@triton.jit
def k(x, y, stride_m, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(y + offs[:, None], tl.load(x + offs[:, None] * stride_m))
""")
    assert v["mem.global_strided"] == 1


def test_no_arange_is_broadcast() -> None:
    v = _v("""
@triton.jit
def k(x, y):
    row = tl.program_id(0)
    tl.store(y + row, tl.load(x + row))
""")
    assert v["pattern.global_access"] == "broadcast"


def test_loaded_index_is_indirect() -> None:
    # x[idx[i]]: the address depends on a loaded value.
    v = _v("""
@triton.jit
def k(x, idx, y, B: tl.constexpr):
    offs = tl.arange(0, B)
    i = tl.load(idx + offs)
    tl.store(y + offs, tl.load(x + i))
""")
    assert v["mem.global_indirect"] == 1
    assert v["pattern.global_access"] == "indirect"


def test_two_unresolved_symbolic_axes_are_unknown_but_launch_strides_resolve_them() -> None:
    kernel = """
@triton.jit
def k(a, c, sm, sk, BM: tl.constexpr, BK: tl.constexpr):
    om = tl.arange(0, BM)
    ok = tl.arange(0, BK)
    tl.store(c + om[:, None] * BK + ok[None, :], tl.load(a + om[:, None] * sm + ok[None, :] * sk))
"""
    # Without a launch the layout of `a` is a run-time matter: unknown.
    assert _v(kernel)["mem.global_unknown"] == 1
    # a.stride(1) is the last stride passed for `a`: sk is unit -> coalesced.
    launched = kernel + """
def run(a, c):
    k[(1,)](a, c, a.stride(0), a.stride(1), BM=64, BK=32)
"""
    v = _v(launched)
    assert (v["mem.global_coalesced"], v["mem.global_unknown"]) == (2, 0)
    assert v["triton.block_elements"] == 64 * 32
    # A transposed read (unit stride on the M axis) is still coalesced: Triton's coalescing
    # pass orders threads along whichever axis is contiguous.
    swapped = kernel + """
def run(a, c):
    k[(1,)](a, c, a.stride(1), a.stride(0), BM=64, BK=32)
"""
    assert _v(swapped)["mem.global_coalesced"] == 2
    # Literal strides > 1 on both axes: no contiguous axis -> strided.
    literal = kernel + """
def run(a, c):
    k[(1,)](a, c, 8, 4, BM=64, BK=32)
"""
    assert _v(literal)["mem.global_strided"] == 1


def test_dot_in_k_loop_is_tensor_cores_register_tiling_and_pipelined() -> None:
    # acc (64x64 fp32) carried across the K loop; num_stages=3 at the launch.
    v = _v("""
@triton.jit
def mm(a, b, c, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    om = tl.arange(0, BM)
    on = tl.arange(0, BN)
    ok = tl.arange(0, BK)
    pa = a + om[:, None] * K + ok[None, :]
    pb = b + ok[:, None] * BN + on[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, K, BK):
        acc += tl.dot(tl.load(pa), tl.load(pb))
        pa += BK
        pb += BK * BN
    tl.store(c + om[:, None] * BN + on[None, :], acc)

def run(a, b, c, K):
    mm[(1,)](a, b, c, K, BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
""")
    assert v["tc.used"] and v["triton.dots"] == 1 and v["pattern.tensor_cores"] == "yes"
    assert v["triton.dot_acc_fp32"]
    assert v["reg.accumulators"] == 64 * 64 and v["reg.tiled"]
    assert v["pattern.reuse"] == "register_tiling"
    assert (v["pipeline.stages"], v["pipeline.double_buffered"]) == (3, True)
    assert (v["triton.num_warps"], v["launch.block_size"]) == (4, 128.0)
    assert (v["loop.count"], v["loop.max_depth"]) == (1, 1)
    # 2*64*64*32 FLOP per iteration (16 iterations assumed) over the bytes moved: high.
    assert v["pattern.intensity"] == "high"


def test_dot_with_fp16_out_dtype_is_not_fp32_accumulation() -> None:
    v = _v("""
@triton.jit
def k(a, b, c, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(a + o[:, None] * B + o[None, :])
    tl.store(c + o[:, None] * B + o[None, :], tl.dot(x, x, out_dtype=tl.float16))
""")
    assert v["triton.dots"] == 1 and not v["triton.dot_acc_fp32"]


def test_reductions_map_to_warp_shuffles() -> None:
    v = _v("""
@triton.jit
def k(x, y, B: tl.constexpr):
    r = tl.load(x + tl.arange(0, B))
    tl.store(y, tl.sum(r, axis=0) + tl.max(r, axis=0))
""")
    assert v["triton.reductions"] == 2
    assert v["warp.shuffle_reduction"] and v["pattern.sync"] == "warp"


def test_atomics_and_debug_barrier() -> None:
    v = _v("""
@triton.jit
def k(x, y, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.debug_barrier()
    tl.atomic_add(y + o, tl.load(x + o))
""")
    # The atomic's location is a store access, as in the CUDA path.
    assert (v["atomics.global"], v["mem.global_stores"], v["sync.block_barriers"]) == (1, 1, 1)
    assert v["pattern.sync"] == "atomic_or_grid" and v["reduce.atomic"]


def test_block_pointer_order_decides_coalescing() -> None:
    src = """
@triton.jit
def k(a, M, N, s0, s1, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(base=a, shape=(M, N), strides=(s0, s1), offsets=(0, 0),
                          block_shape=(BM, BN), order=(1, 0))
    x = tl.load(p, boundary_check=(0, 1))
    p = tl.advance(p, (0, BN))
    tl.store(p, x)

def run(a):
    k[(1,)](a, 8, 8, {s0}, {s1}, BM=16, BN=16)
"""
    v = _v(src.format(s0="a.stride(0)", s1="a.stride(1)"))
    assert v["triton.block_pointers"] == 1 and v["mem.global_coalesced"] == 2
    assert v["triton.block_elements"] == 256
    # order=(1, 0) names axis 1 fastest; its stride passed as a leading stride -> strided.
    assert _v(src.format(s0="a.stride(1)", s1="a.stride(0)"))["mem.global_strided"] == 2


def test_tensor_descriptors_are_coalesced_block_pointers() -> None:
    v = _v("""
@triton.jit
def k(a, m, n, B: tl.constexpr):
    d = tl.make_tensor_descriptor(a, shape=[m, n], strides=[n, 1], block_shape=[B, B])
    x = d.load([0, 0])
    d.store([0, 0], x)
""")
    assert (v["triton.block_pointers"], v["mem.global_coalesced"]) == (1, 2)
    assert v["pipeline.async_copy"]


def test_grouped_ordering_swizzle() -> None:
    v = _v("""
@triton.jit
def k(c, M, N, BM: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_in_group = GROUP_SIZE_M * tl.cdiv(N, BM)
    group_id = pid // num_pid_in_group
    tl.store(c + group_id, 0)
""")
    assert v["triton.grouped_ordering"]
    # A plain row-major mapping (pid // n) is not grouped.
    plain = _v("""
@triton.jit
def k(c, N):
    pid_m = tl.program_id(0) // N
    tl.store(c + pid_m, 0)
""")
    assert not plain["triton.grouped_ordering"]


def test_autotune_configs_give_block_sizes_warps_and_stages() -> None:
    v = _v("""
@triton.autotune(configs=[triton.Config({'B': 128}, num_warps=4, num_stages=2),
                          triton.Config({'B': 1024}, num_warps=8, num_stages=4)], key=['n'])
@triton.jit
def k(x, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    for i in tl.range(0, n, num_stages=2):
        tl.store(x + o, tl.load(x + o) * 2)
""")
    assert v["triton.autotune_configs"] == 2
    assert (v["triton.block_elements"], v["triton.num_warps"], v["triton.num_stages"]) == \
        (1024, 8, 4)
    assert v["pipeline.stages"] == 4


def test_branches_constexpr_if_is_static_and_where_is_a_select() -> None:
    v = _v("""
@triton.jit
def k(x, n, FLAG: tl.constexpr, B: tl.constexpr):
    o = tl.arange(0, B)
    v = tl.load(x + o)
    if FLAG:
        v = v * 2
    if n > 3:
        v = v + 1
    tl.store(x + o, tl.where(v > 0, v, 0.0))
""")
    # One run-time if (n > 3) + one select; the constexpr `if FLAG` is resolved statically.
    assert (v["branch.count"], v["branch.ternary"], v["branch.divergent"]) == (2, 1, 0)


def test_loops_static_range_and_depth() -> None:
    v = _v("""
@triton.jit
def k(x, n, B: tl.constexpr):
    o = tl.arange(0, B)
    for i in range(n):
        for j in tl.static_range(4):
            tl.store(x + o, tl.load(x + o))
""")
    assert (v["loop.count"], v["loop.max_depth"], v["loop.unroll_pragmas"]) == (2, 2, 1)


def test_helpers_are_inlined_and_not_kernels() -> None:
    # `ld` is called by the kernel and never launched: a helper, its loads bound to the
    # caller's (loaded) indices -> indirect; `act` returns a value: a helper too.
    src = HEAD + """
@triton.jit
def act(x):
    return tl.where(x > 0, x, 0)

@triton.jit
def ld(ptr, idx, out, B: tl.constexpr):
    tl.store(out + tl.arange(0, B), act(tl.load(ptr + idx)))

@triton.jit
def k(ptr, ip, out, B: tl.constexpr):
    idx = tl.load(ip + tl.arange(0, B))
    ld(ptr, idx, out, B)
"""
    v = extract_values(src)
    assert (v["kernel.count"], v["kernel.device_functions"]) == (1, 2)
    assert v["mem.global_indirect"] == 1 and v["pattern.global_access"] == "indirect"
    names = [(k.name, k.is_helper) for k in find_triton_kernels(src)]
    assert names == [("act", True), ("ld", True), ("k", False)]


def test_fast_math_libdevice() -> None:
    v = _v("""
from triton.language.extra.libdevice import tanh

@triton.jit
def k(x, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x + o, tanh(tl.load(x + o)))
""")
    assert v["math.fast_intrinsics"] == 1


def test_modelnew_forward_launches_and_torch_ops() -> None:
    # forward launches one kernel on one path (if/else -> the larger arm) and leaves a
    # matmul to torch: 1 launch + 1 heavy op, lib.calls counts torch.matmul only
    # (allocations do not count).
    v = extract_values(HEAD + """import torch.nn as nn

@triton.jit
def relu(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.maximum(tl.load(x + o, mask=o < n), 0.0), mask=o < n)

def launch(x):
    y = torch.empty_like(x)
    if x.numel() > 1024:
        relu[(x.numel() // 1024,)](x, y, x.numel(), B=1024)
    else:
        relu[(1,)](x, y, x.numel(), B=1024)
    return y

class ModelNew(nn.Module):
    def forward(self, a, b):
        return launch(torch.matmul(a, b))
""")
    assert v["fusion.launches_per_forward"] == 2
    assert v["lib.calls"] == 1 and v["lib.delegates_heavy_op"]
    assert v["launch.count"] == 2


def test_malformed_python_never_raises() -> None:
    v = extract_values("import triton\n@triton.jit\ndef k(x:\n    tl.load(x\n")
    assert v["program.language"] == "triton"
    assert v["parse.error_nodes"] == 1 and not v["parse.extract_error"]
    assert triton_features.__name__ == "triton_features"


def test_mixed_load_inline_cuda_keeps_the_cuda_reading() -> None:
    # load_inline CUDA wins the shared features; the Triton kernel only fills triton.*.
    v = extract_values(HEAD + '''from torch.utils.cpp_extension import load_inline
src = """
__global__ void k(float* x) { x[threadIdx.x] = 0; }
"""
@triton.jit
def t(a, b, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(a + o, tl.sum(tl.load(b + o), axis=0))
''')
    assert v["program.language"] == "cuda" and v["program.embedded_cuda"]
    assert v["triton.reductions"] == 1 and v["warp.shuffles"] == 0
