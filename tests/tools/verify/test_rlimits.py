"""Child rlimits through prlimit (no fork of the caller) or, without it, a preexec_fn."""

import resource
import subprocess

import pytest

from structcover.tools.verify import rlimits

_LIMITS = [(resource.RLIMIT_CPU, 7), (resource.RLIMIT_NOFILE, 33),
           (resource.RLIMIT_AS, 512 * 1024 * 1024)]
_SHOW = ["sh", "-c", "ulimit -t; ulimit -n; ulimit -v"]


def _shown(argv: list[str], preexec) -> list[str]:  # noqa: ANN001
    out = subprocess.run(argv, capture_output=True, text=True, check=True, preexec_fn=preexec)
    return out.stdout.split()


def test_limits_go_through_prlimit_without_a_preexec_fn():
    if rlimits._prlimit() is None:
        pytest.skip("prlimit (util-linux) is not installed")
    argv, preexec = rlimits.limited(_SHOW, _LIMITS)
    assert preexec is None and argv[0].endswith("prlimit") and argv[-3:] == _SHOW[-3:]
    assert _shown(argv, preexec) == ["7", "33", str(512 * 1024)]


def test_limits_fall_back_to_a_preexec_fn_without_prlimit(monkeypatch):
    monkeypatch.setattr(rlimits, "_prlimit", lambda: None)
    argv, preexec = rlimits.limited(_SHOW, _LIMITS)
    assert argv == _SHOW and preexec is not None
    assert _shown(argv, preexec) == ["7", "33", str(512 * 1024)]


def test_a_limit_above_the_hard_limit_is_lowered_to_it():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    (_, value), = rlimits.capped([(resource.RLIMIT_NOFILE, hard + 1000)])
    assert value == (hard + 1000 if hard == resource.RLIM_INFINITY else hard)
