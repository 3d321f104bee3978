from mutation_cases import not_applicable, verify_operator


def test_to_grid_stride_variants_verify(cpu_backend):
    verify_operator("to_grid_stride", [("vector_add", "reference"), ("spmv_csr", "reference")],
                    cpu_backend)


def test_coarsen_variants_verify(cpu_backend):
    verify_operator("coarsen", [("saxpy", "reference"), ("conv1d", "reference")], cpu_backend)


def test_from_grid_stride_variants_verify(cpu_backend):
    verify_operator("from_grid_stride", [("saxpy", "grid_stride"), ("spmv_csr", "grid_stride_rows")],
                    cpu_backend)


def test_warp_per_row_variants_verify(cpu_backend):
    verify_operator("warp_per_row", [("spmv_csr", "reference"), ("rowstats", "rowstats")],
                    cpu_backend)


def test_parallel_strategy_not_applicable():
    assert "one-thread-per-element" in not_applicable("to_grid_stride", "reduction", "reference")
    assert "grid-stride" in not_applicable("from_grid_stride", "vector_add", "reference")
