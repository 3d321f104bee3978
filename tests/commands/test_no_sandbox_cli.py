"""Without the jail, the demo and the campaign refuse to start and say why (exit non-zero),
instead of reporting every program failed and every gap out of reach as if that were a result."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.verify import jail
from structcover.tools.verify.preflight import require_jail


@pytest.fixture
def no_jail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without bubblewrap whose user did not opt out of the sandbox."""
    monkeypatch.setattr(jail, "bwrap_path", lambda: None)
    monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", False)
    jail.jail_status.cache_clear()
    yield
    jail.jail_status.cache_clear()


def test_demo_without_a_jail_fails_naming_bubblewrap(no_jail: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "-o", str(tmp_path / "demo"), "--json"])
    assert result.exit_code != 0
    assert "the demo cannot start" in result.output
    assert "bubblewrap (bwrap) is not installed" in result.output
    assert "STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED=true" in result.output
    # Nothing was simulated or written as if it were a result.
    assert not (tmp_path / "demo" / "rollouts.parquet").exists()


def test_campaign_without_a_jail_fails_naming_bubblewrap(no_jail: None, tmp_path: Path) -> None:
    from structcover.tools.simulation.kernelbench_sample import write_sample

    data, problems = write_sample(tmp_path, 0)
    result = CliRunner().invoke(app, ["campaign", str(data), "--state", str(tmp_path / "s"),
                                      "--problems", str(problems), "--json"])
    assert result.exit_code != 0
    assert "the campaign cannot start" in result.output
    assert "bubblewrap (bwrap) is not installed" in result.output


def test_require_jail_passes_when_the_user_opted_out(no_jail: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", True)
    require_jail("the campaign")  # no error: the user chose to run without isolation
    monkeypatch.setattr(jail, "_ALLOW_UNSANDBOXED", False)
    with pytest.raises(jail.SandboxUnavailable, match="the campaign cannot start"):
        require_jail("the campaign")
