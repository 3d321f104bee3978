"""The KernelBench GPU child sees one device, the first of the caller's."""

import pytest

from structcover.tools.kernelbench.sandbox import _one_device


@pytest.mark.parametrize(("visible", "expected"), [
    (None, "0"), ("", "0"), ("3", "3"), ("2,5", "2"), (" GPU-1a2b , GPU-3c4d", "GPU-1a2b"),
])
def test_the_child_is_given_exactly_one_device(visible, expected):
    assert _one_device(visible) == expected
