"""The child's start-up: deterministic mode set without importing torch's compiler stack."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

# Trusted code only (no problem, no candidate): the child's own helper in a fresh interpreter,
# so nothing this test process imported earlier hides an import the helper makes.
_PROBE = """
import json, sys, torch
from structcover.tools.kernelbench.child import _deterministic
_deterministic(torch)
state = {"enabled": torch.are_deterministic_algorithms_enabled(),
         "warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
         "inductor_imported": "torch._inductor.config" in sys.modules}
import torch._inductor.config as cfg  # what a candidate's torch.compile would import later
state["inductor_deterministic"] = cfg.deterministic
print(json.dumps(state))
"""


@pytest.mark.kernelbench
def test_deterministic_mode_matches_the_public_call_without_the_inductor_import():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         timeout=300, check=True)
    state = json.loads(out.stdout.strip().splitlines()[-1])
    assert state == {"enabled": True, "warn_only": True, "inductor_imported": False,
                     "inductor_deterministic": True}


# The zygote's preload, then the CPU path's set-up of a candidate run (what each fork does
# before the candidate's own import): every module that set-up needs must already be loaded.
_PRELOAD_PROBE = """
import json, sys
from structcover.tools.kernelbench.zygote_server import _preload
_preload()
before = set(sys.modules)
from structcover.tools.kernelbench.dispatch_watch import install_host_read_watch
from structcover.tools.kernelbench.cpu_shims import install_cpu_shims
from structcover.tools.kernelbench.timing_watch import install_timing_watch
install_host_read_watch()
install_cpu_shims({})
install_timing_watch()
import torch.utils.cpp_extension as ce
try:
    ce.load_inline("e", "int f();", functions=["f"])  # the hook's model: built, then refused
except RuntimeError:
    pass
print(json.dumps(sorted(m for m in set(sys.modules) - before
                        if m.startswith(("structcover", "pydantic", "annotated_types")))))
"""


@pytest.mark.kernelbench
def test_a_fork_imports_nothing_the_zygote_could_have_preloaded():
    out = subprocess.run([sys.executable, "-c", _PRELOAD_PROBE], capture_output=True,
                         text=True, timeout=300, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
