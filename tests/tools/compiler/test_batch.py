"""compiler_feature_rows: the same rows in this process and on the local executor; failures are
rows, not crashes. (The Ray half is in tests/tools/executors/test_ray.py.)"""

from __future__ import annotations

import math

import pandas as pd

from structcover.config import CompilerSettings
from structcover.tools.compiler.batch import compiler_feature_rows
from structcover.tools.data.corpus import corpus_root, load_family
from structcover.tools.executors import LocalExecutor

from .conftest import needs_nvrtc

BROKEN = "__global__ void k(float* x) { x[threadIdx.x] = undefined_name; }\n"


@needs_nvrtc
def test_rows_are_the_same_here_and_on_the_local_pool(tmp_path):
    saxpy = load_family(corpus_root() / "saxpy")
    sources = [saxpy.reference.source, saxpy.variants[0].source, BROKEN]
    here_progress: list[int] = []
    # Separate compile caches: each side compiles for itself.
    here = compiler_feature_rows(
        sources, arch="sm_90", settings=CompilerSettings(via="nvrtc", cache_dir=tmp_path / "a"),
        on_progress=here_progress.append)
    with LocalExecutor(2) as ex:
        pooled = compiler_feature_rows(
            sources, arch="sm_90", settings=CompilerSettings(via="nvrtc", cache_dir=tmp_path / "b"),
            executor=ex, batch_size=2)
    pd.testing.assert_frame_equal(pd.DataFrame(pooled), pd.DataFrame(here))
    assert here_progress == [1, 2, 3]
    assert [r["compile.ok"] for r in here] == [1.0, 1.0, 0.0]
    assert here[0]["ptxas.registers"] > 0 and here[0]["occupancy.block_source"] != "none"
    # The broken program is a row with its reason and missing (not zero) numbers.
    assert "compile failed" in str(here[2]["compile.missing_reason"])
    assert math.isnan(float(here[2]["ptxas.registers"]))


def test_a_service_error_is_the_programs_row_not_the_jobs_failure(tmp_path):
    rows = compiler_feature_rows(["__global__ void k() {}"], arch="sm_9x")
    assert list(rows[0]) == ["compile.error"]
    assert rows[0]["compile.error"].startswith("ValueError: arch 'sm_9x'")
