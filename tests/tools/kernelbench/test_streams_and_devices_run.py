"""Spellings the text checks let through (test_renaming_properties.KNOWN_HOLES) stopped when run.

A stream from torch's pool, named, reached through a namespace alias, made current by a guard
or by ``setCurrentCUDAStream``: the launch reaches the emulator runtime on a stream that is not
the caller's, and the run fails as timing tampering. Another device than the one the GPU child
sees (``set_device(1)``, a ``CUDAGuard`` for device 1, a pointer to ``set_device``) fails as it
would there. Honest guards of the caller's own stream and device still pass.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from structcover.tools.kernelbench.problem import resolve_problem  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.kernelbench]

PROBLEM = '''"""Square of one vector."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * x


def get_inputs():
    return [torch.randn(4099)]


def get_init_inputs():
    return []
'''

_HEADERS = ("#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
            "#include <c10/cuda/CUDAGuard.h>\n#include <c10/cuda/CUDAStream.h>\n")


def program(top: str, body: str, stream: str = "") -> str:
    """A KernelBench square whose function runs ``body`` and launches on ``stream``."""
    config = f"(n + 255) / 256, 256, 0, {stream}" if stream else "(n + 255) / 256, 256"
    cuda = (f"{_HEADERS}{top}\n"
            "__global__ void k(const float* x, float* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = x[i] * x[i];\n}\n"
            "torch::Tensor square(torch::Tensor x) {\n"
            f"    {body}\n    auto y = torch::empty_like(x);\n    int n = x.numel();\n"
            f"    k<<<{config}>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n"
            "    return y;\n}\n")
    return ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
            f'\nsource = r"""\n{cuda}"""\n'
            'ext = load_inline(name="sq_streams", cpp_sources="torch::Tensor square(torch::Tensor x);",\n'
            '                  cuda_sources=source, functions=["square"])\n\n\n'
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.square(x)\n")


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("problem") / "square.py"
    path.write_text(PROBLEM)
    return resolve_problem(path)


STOPPED = [
    pytest.param("", "cudaStream_t side = c10::cuda::getStreamFromPool().stream();", "side",
                 "hacking", "no_timing_tampering", id="pool-stream-named"),
    pytest.param("namespace q = at::cuda;", "auto side = q::getStreamFromPool(true);", "side",
                 "hacking", "no_timing_tampering", id="pool-stream-namespace-alias"),
    pytest.param("", "auto side = at::cuda::getStreamFromPool();\n"
                     "    at::cuda::CUDAStreamGuard guard(side);",
                 "at::cuda::getCurrentCUDAStream()", "hacking", "no_timing_tampering",
                 id="pool-stream-made-current-by-a-guard"),
    pytest.param("using c10::cuda::setCurrentCUDAStream;",
                 "setCurrentCUDAStream(at::cuda::getStreamFromPool());",
                 "c10::cuda::getCurrentCUDAStream().stream()", "hacking", "no_timing_tampering",
                 id="pool-stream-set-current"),
    pytest.param("", "at::cuda::set_device(1);", "", "crash", "invalid device ordinal",
                 id="set-device"),
    pytest.param("", "at::cuda::CUDAGuard guard(1);", "", "crash", "invalid device ordinal",
                 id="device-guard"),
    pytest.param("", "auto pick = &c10::cuda::set_device;\n    pick(1, false);", "", "crash",
                 "invalid device ordinal", id="set-device-through-a-pointer"),
]


@pytest.mark.parametrize(("top", "body", "stream", "failure", "why"), STOPPED)
def test_a_text_check_hole_is_stopped_when_it_runs(problem, top, body, stream, failure, why):
    verdict = verify_kernelbench(program(top, body, stream), problem, backend="cpu", seed=1)
    said = f"{verdict.failure} | {verdict.detail}"
    assert verdict.equivalent is False, said
    assert verdict.failure == failure and why in verdict.detail, said


@pytest.mark.parametrize(("body", "stream"), [
    ("at::cuda::CUDAStreamGuard guard(at::cuda::getCurrentCUDAStream());",
     "at::cuda::getCurrentCUDAStream()"),
    ("const at::cuda::OptionalCUDAGuard guard(x.device());\n    at::cuda::set_device(0);",
     "c10::cuda::getCurrentCUDAStream().stream()"),
], ids=["guard-of-the-callers-stream", "guard-of-the-inputs-device"])
def test_guards_of_the_callers_own_stream_and_device_pass(problem, body, stream):
    verdict = verify_kernelbench(program("", body, stream), problem, backend="cpu", seed=1)
    assert verdict.equivalent is True, f"{verdict.failure} | {verdict.detail}"
