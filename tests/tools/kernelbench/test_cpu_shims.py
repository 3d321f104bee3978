"""The CPU path's Python shims, in a fresh interpreter (they patch torch for the process)."""

import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.kernelbench

SCRIPT = r"""
import torch
from structcover.tools.kernelbench.cpu_shims import install_cpu_shims
install_cpu_shims({})
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

x = torch.ones(3).cuda()
y = torch.zeros(2, device="cuda")
z = torch.randn(2, 2, device=torch.device("cuda:0")).to("cuda").to(torch.float64)
m = nn.Linear(2, 2).cuda().to("cuda")
assert x.device.type == y.device.type == z.device.type == "cpu" and z.dtype == torch.float64
assert next(m.parameters()).device.type == "cpu"
assert torch.cuda.is_available() and torch.cuda.current_stream().cuda_stream == 0
torch.cuda.synchronize()
try:
    load_inline(name="e", cpp_sources="int f();", functions=["f"])
except RuntimeError as exc:
    assert "built at run time" in str(exc), exc
else:
    raise AssertionError("an extension not built beforehand must be refused")
print("ok")
"""


def test_cuda_device_maps_to_cpu_and_unknown_extensions_are_refused():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"
