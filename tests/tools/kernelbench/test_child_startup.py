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
