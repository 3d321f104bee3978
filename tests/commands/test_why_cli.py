"""``structcover why``: one program's predicted performance explained from its features."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app

pytestmark = pytest.mark.slow
FAKES = Path(__file__).parents[1] / "fakes"


def _fakes():  # type: ignore[no-untyped-def]
    if "explain_state" not in sys.modules:
        spec = importlib.util.spec_from_file_location("explain_state",
                                                      FAKES / "explain_state.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules["explain_state"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["explain_state"]


es = _fakes()
STRIDED = """#include <cuda_runtime.h>
__global__ void saxpy_strided(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = (i * 33) % n;
    if (i < n) y[j] = a * x[j] + y[j];
}
extern "C" int launch(const float* x, float* y, float a, int n, cudaStream_t stream) {
    saxpy_strided<<<(n + 255) / 256, 256, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}
"""


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return es.build(tmp_path_factory.mktemp("why"))


def _why(state: Path, ref: str) -> dict:
    res = CliRunner().invoke(app, ["why", ref, "--state", str(state), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_vectorized_program_is_fast_because_of_its_features(state: Path) -> None:
    from structcover.tools.explain.state import StateView

    with StateView.open(state) as view:
        progs = {p.program_id: p for p in view.programs("saxpy")}
    vec = next(p for p in progs.values() if p.features.get("mem.vector_loads", 0) > 0)
    out = _why(state, vec.program_id[:10])  # a unique prefix is enough
    assert out["program_id"] == vec.program_id and out["predicted_us"] > 0
    fast = {f["feature"]: f for f in out["fast_because"]}
    assert "mem.coalesced_fraction" in fast and fast["mem.coalesced_fraction"]["effect"] > 2
    assert "mem.vector_loads" in fast and "vector loads" in out["summary"]
    assert out["summary"].index("coalesced") < out["summary"].index("vector loads")
    assert "atomics.global" not in fast  # an absent cost is no reason to be fast
    assert out["sources"] == [f"program:{vec.program_id}"]


def test_strided_file_is_slow_because_uncoalesced(state: Path, tmp_path: Path) -> None:
    path = tmp_path / "strided.cu"
    path.write_text(STRIDED)
    out = _why(state, f"saxpy:{path}")
    slow = {f["feature"]: f for f in out["slow_because"]}
    assert "mem.coalesced_fraction" in slow and slow["mem.coalesced_fraction"]["effect"] < 0.5
    assert "slow because uncoalesced global accesses" in out["summary"]
    res = CliRunner().invoke(app, ["why", f"saxpy:{path}", "--state", str(state)])
    assert res.exit_code == 0 and "slow because" in res.output


def test_unknown_program(state: Path) -> None:
    res = CliRunner().invoke(app, ["why", "ffffffff", "--state", str(state)])
    assert res.exit_code == 2 and "no verified program in memory" in res.output
