"""The fault-injection run (``jailed_cpu``): after the normal runs, every launch fails once more.

What it must show: a host path taken only when a launch fails, that computes with device
buffers (a host fallback), is a ``crash`` -- whatever the text calls it. What it must never do:
reject an honest program, whatever its error path does (return the error, print it and exit,
abort, retry with a smaller block, reset the output). The sample corpus (test_corpus_equivalence)
covers the common ``return (int)cudaGetLastError()``; these cover the rest.
"""

from __future__ import annotations

import pytest

from structcover.config import VerifySettings
from structcover.tools.data.corpus import find_task
from structcover.tools.verify import jailed_cpu
from structcover.tools.verify.equivalence import ReferenceCache, check_equivalence
from structcover.tools.verify.select import CpuBackend

SETTINGS = VerifySettings(timeout_s=30.0, seed=20261207)
_CACHE = ReferenceCache(max_entries=64)
_OK, _WHY = CpuBackend(SETTINGS).available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU emulator unavailable: {_WHY}")

_KERNEL = """#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
_SIGNATURE = 'extern "C" int launch(const float* a, const float* b, float* c, int n, ' \
             "cudaStream_t stream) {\n"
_LAUNCH = "    add<<<(n + 255) / 256, 256, 0, stream>>>(a, b, c, n);\n"

#: Honest error paths, each a launcher body after the launch.
HONEST = {
    "prints_and_exits": _LAUNCH + """    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { fprintf(stderr, "launch failed: %s\\n", cudaGetErrorString(e)); exit(1); }
    return 0;
""",
    "aborts": _LAUNCH + "    if (cudaGetLastError() != cudaSuccess) abort();\n    return 0;\n",
    "retries_smaller_blocks": """    int threads[3] = {1024, 256, 64};
    cudaError_t e = cudaSuccess;
    for (int k = 0; k < 3; ++k) {
        add<<<(n + threads[k] - 1) / threads[k], threads[k], 0, stream>>>(a, b, c, n);
        e = cudaGetLastError();
        if (e == cudaSuccess) break;
    }
    return (int)e;
""",
    "resets_the_output_on_error": _LAUNCH + """    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) cudaMemsetAsync(c, 0, sizeof(float) * n, stream);
    return (int)e;
""",
    "reads_a_result_back_through_memcpy": _LAUNCH + """    float first = 0.0f;
    cudaMemcpy(&first, c, sizeof(float), cudaMemcpyDeviceToHost);
    if (first != first) return 1;  // NaN: report, never touch c from the host
    return (int)cudaGetLastError();
""",
}


def _verify(body: str):
    spec, family = find_task("vector_add")
    return check_equivalence(_KERNEL + _SIGNATURE + body + "}\n", family.reference.source, spec,
                             backend=CpuBackend(SETTINGS), cache=_CACHE, settings=SETTINGS)


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_error_paths_pass(name: str) -> None:
    verdict = _verify(HONEST[name])
    assert verdict.equivalent is True, f"{verdict.failure}: {verdict.detail}"


def test_host_loop_on_the_error_path_is_a_crash() -> None:
    body = _LAUNCH + """    if (cudaGetLastError() != cudaSuccess)
        for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
    return 0;
"""
    verdict = _verify(body)
    assert verdict.equivalent is False and verdict.failure == "crash", verdict.detail
    assert "fault-injection run" in verdict.detail
    assert "host code read or wrote buffer `a`" in verdict.detail


def test_without_the_fault_run_the_host_loop_would_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the run adds: the same program, its finding dropped, is accepted (the normal runs
    # never take the error path).
    monkeypatch.setattr(jailed_cpu, "_fault_finding", lambda *a, **k: None)
    body = _LAUNCH + """    if (cudaGetLastError() != cudaSuccess)
        for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
    return 0;
"""
    assert _verify(body).equivalent is True


def test_every_launch_fails_in_the_fault_run(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = jailed_cpu._fault_finding

    def spy(spec, records, normal, results, nsets):
        seen.extend(records[normal:])
        return real(spec, records, normal, results, nsets)

    monkeypatch.setattr(jailed_cpu, "_fault_finding", spy)
    verdict = _verify(_LAUNCH + "    return (int)cudaGetLastError();\n")
    assert verdict.equivalent is True, verdict.detail
    # One fault run per batch of trials, each after the batch's clean runs: the launcher saw
    # cudaErrorLaunchOutOfResources (701), nothing ran, and no outputs came back.
    assert seen and all(r.code == 0 and r.rc == 701 and r.tensors == [] for r in seen)
