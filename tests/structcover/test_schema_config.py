"""Domain model and settings tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from structcover.config import load_settings
from structcover.schema import Reward, TaskSpec, eval_size_expr

ARGS = [{"name": "a", "shape": ["N"]}, {"name": "c", "shape": ["N"], "role": "output"},
        {"name": "n", "kind": "scalar", "value": "N"}]


def test_taskspec_signature_shapes_and_tolerance() -> None:
    spec = TaskSpec(task_id="t", args=ARGS, sizes={"N": 7}, rtol=1e-3)
    assert spec.c_signature() == ('extern "C" int launch(const float* a, float* c, int n, '
                                  'cudaStream_t stream)')
    assert spec.shape_of("c") == (7,)
    assert spec.tolerance("float32") == (1e-4, 1e-3)
    assert spec.tolerance("float16") == (1e-3, 1e-3)  # (dtype atol, the task's rtol)


@pytest.mark.parametrize(("change", "message"), [
    ({"sizes": {}}, "N"),
    ({"args": ARGS[:1]}, "no output"),
    ({"args": [*ARGS, {"name": "a", "shape": ["N"]}]}, "duplicate"),
    ({"args": [{"name": "c", "shape": ["N"], "role": "output", "dtype": "float8"}]},
     "unknown dtype"),
])
def test_taskspec_rejects_bad_specs(change: dict, message: str) -> None:
    data = {"task_id": "t", "args": ARGS, "sizes": {"N": 7}} | change
    with pytest.raises(ValueError, match=message):
        TaskSpec.model_validate(data)


def test_size_expressions_are_arithmetic_only() -> None:
    assert eval_size_expr("M*K+1", {"M": 3, "K": 4}) == 13
    with pytest.raises(ValueError):
        eval_size_expr("__import__('os')", {})


def test_reward_rejects_negative_speedup() -> None:
    with pytest.raises(ValueError):
        Reward(speedup=-1.0)


def test_settings_file_and_environment_override(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("compiler:\n  arch: sm_80\nverify:\n  trials: 3\n")
    monkeypatch.setenv("STRUCTCOVER_VERIFY__TRIALS", "9")
    settings = load_settings(path)
    assert settings.compiler.arch == "sm_80"
    assert settings.verify.trials == 9


def test_settings_refuse_secrets_in_files(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("llm:\n  api_key: sk-123\n")
    with pytest.raises(ValueError, match="environment"):
        load_settings(path)
