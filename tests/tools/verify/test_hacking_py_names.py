"""Python spellings that reach a stopped name without calling it by name: held as a value,
looked up at run time, spelled as an operator; the honest uses next to them pass."""

from __future__ import annotations

import pytest

from structcover.tools.verify.hacking import hard_failures
from structcover.tools.verify.hacking_py import run_python_checks

HEAD = ('import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n'
        '{imports}\next = load_inline(name="e", cpp_sources="", cuda_sources="", functions=["f"])\n'
        "{module}\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        {init}\n\n    def forward(self, a, b):\n"
        "        {body}\n")


def _failed(body: str, *, imports: str = "", module: str = "", init: str = "pass") -> set[str]:
    source = HEAD.format(imports=imports, module=module, init=init, body=body)
    return {r.name for r in hard_failures(run_python_checks(source))} - {"defines_kernel"}


@pytest.mark.parametrize(("body", "imports", "module", "init", "check"), [
    ("return self.f(a, b)", "", "", "self.f = torch.matmul", "no_library_delegation"),
    ("return m[0](a, b)", "", "m = (torch.matmul,)", "pass", "no_library_delegation"),
    ("return p(a, b)", "import functools", "p = functools.partial(torch.mm)", "pass",
     "no_library_delegation"),
    ("return self.op(a)", "", "def h(x):\n    return torch.softmax(x, 1)", "self.op = h",
     "no_library_delegation"),
    ("return f(a, b)", "", "f = lambda x, y: torch.matmul(x, y)", "pass",
     "no_library_delegation"),
    ('return getattr(a, "mat" + "mul")(b)', "", "", "pass", "no_library_delegation"),
    ('return g(torch, "matmul")(a, b)', "", "g = getattr", "pass", "no_library_delegation"),
    ('return vars(torch)["matmul"](a, b)', "", "", "pass", "no_library_delegation"),
    ('return torch.__dict__["matmul"](a, b)', "", "", "pass", "no_library_delegation"),
    ('return operator.methodcaller("matmul", b)(a)', "import operator", "", "pass",
     "no_library_delegation"),
    ("return mm(a, b)", "from operator import matmul as mm", "", "pass",
     "no_library_delegation"),
    ("return a.__matmul__(b)", "", "", "pass", "no_library_delegation"),
    ("return matmul(a, b)", "from torch import *", "", "pass", "no_library_delegation"),
    ("return ext.f(self.w.matmul(a))", "", "", "self.w = nn.Parameter(torch.ones(2, 2))",
     "no_library_delegation"),
    ("return ext.f(a)", "", "E = torch.cuda.Event", "pass", "no_timing_tampering"),
    ("p(a)\n        return ext.f(a)", "", "p = print", "pass", "no_host_output"),
    ('__builtins__.print(a)\n        return ext.f(a)', "", "", "pass", "no_library_delegation"),
    ('ctypes.CDLL("libcudart.so").cudaDeviceReset()\n        return ext.f(a)', "import ctypes", "",
     "pass", "no_library_delegation"),
    ("cudart.cudaStreamCreate()\n        return ext.f(a)", "from cuda import cudart", "", "pass",
     "no_library_delegation"),
    ('return ext.f(pickle.loads(b"ctorch\\nmatmul\\n.")(a, b))', "import pickle", "", "pass",
     "no_library_delegation"),
    ('return ext.f(a.type("torch.cuda.HalfTensor"))', "", "", "pass", "no_precision_downgrade"),
    ("return ext.f(a.type(torch.HalfTensor))", "", "", "pass", "no_precision_downgrade"),
])
def test_a_stopped_name_reached_without_its_name_is_refused(body, imports, module, init, check):
    assert check in _failed(body, imports=imports, module=module, init=init), body


@pytest.mark.parametrize(("body", "module", "init"), [
    ("return ext.f(a)", "", "pass"),
    ("return self.e.f(a)", "", "self.e = ext"),
    ("return self.matmul(a)", "", "pass"),  # the module's own method (defined below)
    ('return ext.f(a) if getattr(self, "bias", None) is None else a', "", "self.bias = None"),
    ("half = a.shape[0] // 2\n        return ext.f(a[:half])", "", "pass"),
    ("return softmax(a)", "def softmax(x):\n    return ext.f(x)", "pass"),
])
def test_honest_names_lookups_and_helpers_pass(body, module, init):
    source = HEAD.format(imports="", module=module, init=init, body=body) + \
        "\n    def matmul(self, x):\n        return ext.f(x)\n"
    failed = {r.name for r in hard_failures(run_python_checks(source))} - {"defines_kernel"}
    assert not failed, failed
