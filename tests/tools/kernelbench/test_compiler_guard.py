"""torch's compiler reached from a candidate is refused when it runs, however it is spelled.

``tools/kernelbench/compiler_guard.py``: a finder in front of the import system refuses
``torch._dynamo``/``torch._inductor``/export while the candidate's code is on the stack, and the
child reports it as ``hacking`` even when the candidate catches the ``ImportError`` and goes on.
The guard only works if the child never imports those packages itself: the dispatch watch and
the traffic meter keep torch from wrapping their modes in dynamo (which imports it).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

import structcover.tools.verify.hacking_py as hacking_py  # noqa: E402
from structcover.tools.kernelbench.verify import verify_kernelbench  # noqa: E402

REACHES = [
    # The name built at run time: the text check cannot read it.
    pytest.param("        f = getattr(torch, 'com' + 'pile')(lambda t: t.clamp_min(0))\n"
                 "        return f(x)", "", id="compile-by-getattr"),
    # The ImportError caught and the kernel's answer returned: still refused.
    pytest.param("        try:\n"
                 "            importlib.import_module('torch._' + 'inductor')\n"
                 "        except ImportError:\n"
                 "            pass\n"
                 "        return ext.run(x)", "", id="inductor-import-caught"),
    # At import time, from module code.
    pytest.param("        return ext.run(x)",
                 "try:\n    importlib.import_module('torch.' + '_dynamo')\nexcept ImportError:\n"
                 "    pass", id="dynamo-at-import"),
]


@pytest.mark.slow
@pytest.mark.kernelbench
@pytest.mark.parametrize(("forward", "top"), REACHES)
def test_the_compiler_reached_at_run_time_is_hacking(relu_problem, relu_candidate, forward, top,
                                                    monkeypatch):
    monkeypatch.setattr(hacking_py, "run_python_checks", lambda *a, **k: [])  # behaviour alone
    verdict = verify_kernelbench(relu_candidate(forward, top), relu_problem, backend="cpu",
                                 seed=1)
    said = f"{verdict.failure} | {verdict.detail}"
    assert verdict.equivalent is False, said
    assert verdict.failure == "hacking" and "torch's compiler" in verdict.detail, said


@pytest.mark.slow
@pytest.mark.kernelbench
def test_the_same_kernel_without_the_compiler_passes(relu_problem, relu_candidate):
    verdict = verify_kernelbench(relu_candidate("        return ext.run(x)"), relu_problem,
                                 backend="cpu", seed=1)
    assert verdict.equivalent is True, f"{verdict.failure} | {verdict.detail}"


def test_the_watches_do_not_import_the_compiler():
    """A watched op must not import torch._dynamo: the guard would then see no import."""
    code = ("import sys, torch\n"
            "from structcover.tools.kernelbench.dispatch_watch import TorchComputeWatch\n"
            "from structcover.tools.kernelbench.torch_traffic import TorchTrafficMeter\n"
            "from structcover.tools.kernelbench.compiler_guard import COMPILER_PACKAGES\n"
            "x = torch.ones(8)\n"
            "with TorchComputeWatch():\n    (x + 1).sum()\n"
            "with TorchTrafficMeter():\n    (x * 2).sum()\n"
            "print(sorted(p for p in COMPILER_PACKAGES if p in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_text_check_names_the_compiler_in_any_form():
    for source in ("import torch\n@torch.compile\ndef f(x):\n    return x\n",
                   "import torch\ng = torch.compile\n",
                   "from torch._inductor import compile_fx\n",
                   "import torch._dynamo as d\n",
                   "import torch.export\n"):
        found = {r.name: r for r in hacking_py.run_python_checks(source)}
        assert not found["no_library_delegation"].ok, source
        assert "torch's compiler" in found["no_library_delegation"].reason, source
    honest = {r.name: r for r in hacking_py.run_python_checks("import torch\nx = torch.ones(3)\n")}
    assert honest["no_library_delegation"].ok
