"""Each named feature pinned by a small hand-written kernel (issue 3, "Done when")."""

from __future__ import annotations

from pathlib import Path

import feature_kernels as K
import pytest

from structcover.tools.features.extract import extract_features, extract_values
from structcover.tools.features.registry import NAMES


def v(src: str) -> dict:
    return extract_values(src)


def test_required_names_are_registered():
    required = """kernel.count kernel.has_custom_kernel loop.max_depth loop.unroll_pragmas
    loop.grid_stride mem.global_coalesced mem.global_strided mem.global_broadcast
    mem.global_indirect mem.coalesced_fraction mem.vector_loads smem.static_bytes smem.dynamic
    smem.tiled smem.padded sync.block_barriers sync.barriers_in_loops sync.warp_syncs
    warp.shuffles warp.votes atomics.global atomics.shared tc.used async.copies lib.calls
    parse.error_nodes program.language mem.global_unknown""".split()
    assert set(required) <= set(NAMES)
    values = v(K.COALESCED)
    assert set(NAMES) <= set(values)


def test_coalesced_index_through_def_use():
    f = v(K.COALESCED)
    assert f["mem.global_coalesced"] == 3
    assert f["mem.global_strided"] == f["mem.global_indirect"] == 0
    assert f["mem.coalesced_fraction"] == 1.0
    assert f["dataflow.index_vars"] == 1
    assert f["dataflow.max_chain_length"] == 1
    assert f["kernel.count"] == 1 and f["kernel.has_custom_kernel"] is True
    assert f["branch.divergent"] == 1


def test_strided_by_symbolic_stride():
    f = v(K.STRIDED)
    assert f["mem.global_strided"] == 1
    assert f["mem.global_coalesced"] == 1
    assert f["mem.coalesced_fraction"] == 0.5


def test_indirect_access():
    f = v(K.INDIRECT)
    assert f["mem.global_indirect"] == 1
    assert f["mem.global_coalesced"] == 2  # idx[i] and c[i]


def test_design_example_column_vs_row_major():
    col = v(K.COLUMN_MAJOR)
    row = v(K.ROW_MAJOR)
    assert col["mem.global_coalesced"] == 2 and col["mem.global_strided"] == 0
    assert row["mem.global_strided"] == 1 and row["mem.global_coalesced"] == 1


def test_broadcast_and_unknown_are_counted_not_guessed():
    f = v(K.BROADCAST)
    assert f["mem.global_broadcast"] == 2
    assert f["mem.global_coalesced"] == 2
    u = v(K.UNKNOWN)
    assert u["mem.global_unknown"] == 1
    assert u["mem.global_coalesced"] + u["mem.global_strided"] == 0
    assert u["mem.coalesced_fraction"] is None


def test_tiled_gemm():
    f = v(K.TILED_GEMM)
    assert f["smem.tiled"] is True
    assert f["smem.reuse_in_loop"] is True
    assert f["sync.block_barriers"] == 2
    assert f["sync.barriers_in_loops"] == 2
    assert f["smem.static_bytes"] == 2 * 16 * 16 * 4
    assert f["smem.padded"] is False
    assert f["loop.max_depth"] == 2
    assert f["loop.unroll_pragmas"] == 1
    assert f["mem.global_coalesced"] == 3 and f["mem.global_strided"] == 0
    assert f["launch.count"] == 1
    assert f["launch.block_size"] == 256
    assert f["launch.with_stream"] is True
    assert f["mem.restrict_params"] == 2


def test_naive_gemm_differs_from_tiled():
    f = v(K.NAIVE_GEMM)
    assert f["smem.tiled"] is False
    assert f["sync.block_barriers"] == 0
    # A[row*N + k] is warp-uniform in x; B[k*N + col] and C[row*N + col] are coalesced.
    assert f["mem.global_broadcast"] == 1 and f["mem.global_coalesced"] == 2


def test_warp_shuffle_reduction_grid_stride_atomics():
    f = v(K.WARP_REDUCE)
    assert f["warp.shuffles"] == 1 and f["warp.shuffles_in_loops"] == 1
    assert f["warp.shuffle_reduction"] is True
    assert f["loop.grid_stride"] == 1
    assert f["atomics.global"] == 1 and f["atomics.shared"] == 0
    assert f["kernel.device_functions"] == 1
    assert f["mem.global_coalesced"] == 1  # x[i] inside the grid-stride loop
    assert f["smem.tiled"] is False


def test_shared_tree_reduction():
    f = v(K.SHARED_REDUCE)
    assert f["reduce.shared_tree"] is True
    assert f["warp.shuffles"] == 0
    assert f["sync.barriers_in_loops"] == 1
    assert f["smem.static_bytes"] == 1024
    assert f["atomics.global"] == 1


def test_transposes():
    naive = v(K.TRANSPOSE_NAIVE)
    tiled = v(K.TRANSPOSE_TILED)
    assert naive["mem.global_strided"] == 1 and naive["mem.global_coalesced"] == 1
    assert tiled["mem.global_strided"] == 0 and tiled["mem.global_coalesced"] == 2
    assert tiled["smem.tiled"] is True and tiled["smem.padded"] is True
    assert tiled["smem.static_bytes"] == 32 * 33 * 4
    assert naive["smem.tiled"] is False


def test_vector_loads_and_ldg():
    f = v(K.VECTOR)
    assert f["mem.vector_loads"] == 3
    assert f["mem.global_coalesced"] == 4  # float4 [i] twice, &a[4*i] as float4, __ldg(&a[i])
    assert f["mem.ldg"] == 1


def test_misc_cuda_features():
    f = v(K.MISC)
    assert f["tc.used"] is True
    assert f["cg.used"] is True and f["cg.tiled_partitions"] == 1
    assert f["warp.votes"] == 2
    assert f["atomics.shared"] == 1 and f["atomics.global"] == 0
    assert f["sync.warp_syncs"] == 1
    assert f["sync.block_barriers"] == 1  # block.sync() on a thread_block
    assert f["async.copies"] == 1
    assert f["smem.dynamic"] is True


def test_host_library_graphs():
    f = v(K.HOST_LIBRARY)
    assert f["kernel.has_custom_kernel"] is False
    assert f["lib.calls"] == 2 and f["lib.reference_library"] is True
    assert f["host.graphs"] == 1


@pytest.mark.parametrize("src,lang,custom", [
    (K.TORCH, "torch", False), (K.TRITON, "triton", True), (K.COALESCED, "cuda", True),
    ("int main() { return 0; }", "unknown", False)])
def test_language(src, lang, custom):
    f = v(src)
    assert f["program.language"] == lang
    assert f["kernel.has_custom_kernel"] is custom


def test_torch_library_calls_and_triton_kernels():
    assert v(K.TORCH)["lib.calls"] >= 1
    assert v(K.TRITON)["kernel.count"] == 1


def test_load_inline_cuda_is_read():
    f = v(K.LOAD_INLINE)
    assert f["program.language"] == "cuda" and f["program.embedded_cuda"] is True
    assert f["kernel.count"] == 1 and f["mem.global_coalesced"] == 2


def test_feature_vector_has_content_id():
    fv = extract_features(K.COALESCED)
    assert len(fv.program_id) == 16
    assert fv.values["kernel.count"] == 1


ADVERSARIAL = Path(__file__).parents[2] / "data" / "adversarial"


@pytest.mark.skipif(not ADVERSARIAL.is_dir(), reason="adversarial fixtures not present")
def test_anti_hacking_signals_on_cheating_fixtures():
    def f(name: str) -> dict:
        return v((ADVERSARIAL / f"{name}.cu").read_text())

    assert f("no_kernel")["kernel.has_custom_kernel"] is False
    assert f("torch_delegation")["lib.reference_library"] is True
    assert f("cublas_delegation")["lib.calls"] > 0
    assert f("side_stream")["host.streams"] >= 1
    assert f("event_tamper")["host.events"] >= 1
    assert f("default_stream")["lib.reference_library"] is False
