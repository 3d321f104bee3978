"""The child's failure kinds from what a candidate's call raised (no torch needed)."""

import pytest

from structcover.tools.kernelbench.child import classify


@pytest.mark.parametrize(("message", "kind"), [
    ("EmulatorFault: race: data race: threads 0 and 1 of block (0,0,0) ...", "race"),
    ("EmulatorFault: deadlock: a barrier no thread reaches", "deadlock"),
    ("EmulatorFault: out-of-bounds read of a tensor", "out-of-bounds"),
    ("Error building extension 'kb_mul': nvcc exited 1", "compile-error"),
    ("unsupported: inline PTX", "unsupported"),
    ("see the traceback above", "crash"),  # "trace" is not a race
    ("index 7 is out of range", "crash"),
])
def test_failure_kind_from_the_exception(message, kind):
    assert classify(RuntimeError(message)) == kind
