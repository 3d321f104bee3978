"""Every command that runs heavy work takes ``--executor local|ray`` and ``--address``, and
refuses a bad executor by name before doing any work."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from structcover.cli import app

COMMANDS = ["features", "verify", "campaign", "watch", "demo"]


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_command_takes_executor_and_address(command):
    res = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    text = _plain(res.output)
    assert "--executor" in text and "--address" in text


def test_demo_refuses_an_unknown_executor_and_a_stray_address(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["demo", "-o", str(tmp_path), "--executor", "dask"])
    assert bad.exit_code == 2 and "'dask'" in _plain(bad.output)
    stray = runner.invoke(app, ["demo", "-o", str(tmp_path), "--address", "auto"])
    assert stray.exit_code == 2 and "--executor ray" in _plain(stray.output)
    assert not any(tmp_path.iterdir()), "nothing runs before the options are checked"
