"""Our machinery failing is reported as our failure, never as quarantine (issue 28).

Quarantine is for bad input: an item whose processing raises, or kills its worker alone on
every try. An import that fails in a worker, a missing binary, a task that errors outside the
function are the same for every item: they are retried (bounded) and then reported as
:class:`Failed` with the cause, and ``structcover features`` exits non-zero when it lost every
program that way.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools import executors
from structcover.tools.executors import Failed, LocalExecutor, Quarantined, faults
from structcover.tools.executors.policy import RunPolicy
from structcover.tools.features import extract

CORPUS = Path(__file__).resolve().parents[3] / "src" / "structcover" / "corpus"


def test_an_import_failure_in_the_worker_is_ours_and_bad_input_is_quarantined():
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.import_fails, [1, -2, 3, 4], batch_size=2))
    assert isinstance(out[1], Quarantined) and not isinstance(out[1], Failed)
    assert "negative input -2" in out[1].reason
    assert [type(r) for i, r in enumerate(out) if i != 1] == [Failed] * 3
    assert all("ModuleNotFoundError" in r.reason and "2 tries" in r.reason
               for i, r in enumerate(out) if i != 1)
    assert ex.quarantined == [out[1]], "our failures are never listed as quarantined"
    assert ex.failures == [out[0], out[2], out[3]]


def test_a_task_that_errors_outside_fn_fails_its_items_without_blaming_one(monkeypatch):
    def broken(self):  # the worker cannot even set up the batch's policy
        raise ImportError("cannot import name 'jail' (injected)")

    monkeypatch.setattr(RunPolicy, "applied", broken)  # forked workers inherit it
    with LocalExecutor(2) as ex:
        out = list(ex.map(faults.square, range(6), batch_size=3))
    assert all(isinstance(r, Failed) for r in out) and len(out) == 6
    assert all("task failed 2 times" in r.reason and "cannot import name 'jail'" in r.reason
               for r in out)
    assert ex.quarantined == [] and ex.restarts == 0, "not mistaken for a worker death"


def test_a_worker_death_on_one_item_is_still_quarantine():
    items: list[object] = [0, 1, "POISON", 3]
    with LocalExecutor(2, retries=0) as ex:
        out = list(ex.map(faults.poison, items, batch_size=2))
    assert out[:2] == [0, 1] and out[3] == 3
    assert isinstance(out[2], Quarantined) and not isinstance(out[2], Failed)
    assert ex.failures == []


def _folder(tmp_path: Path) -> Path:
    for task in ("saxpy", "prefix_scan", "reduction"):
        (tmp_path / f"{task}.cu").write_text((CORPUS / task / "reference.cu").read_text())
    return tmp_path


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.fixture
def fake_ray(monkeypatch):
    # --executor ray without a cluster: the command gets a local pool through the same path.
    monkeypatch.setattr(executors, "make_executor",
                        lambda kind, **kw: LocalExecutor(1))


def test_features_exits_non_zero_with_the_cause_when_every_program_failed_ours(
        tmp_path, monkeypatch, fake_ray):
    def no_module(item):
        raise ModuleNotFoundError("No module named 'structcover.tools.features' (injected)")

    monkeypatch.setattr(extract, "_work", no_module)
    res = CliRunner().invoke(app, ["features", str(_folder(tmp_path)), "--executor", "ray",
                                   "--no-cache", "--json"], env={"COLUMNS": "300"})
    assert res.exit_code == 3, res.output
    errors = [line for line in _plain(res.output).splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "failed on all 3 programs" in errors[0] and "ModuleNotFoundError" in errors[0]
    assert "quarantined" not in _plain(res.output)


def test_features_quarantines_a_bad_input_row_and_exits_zero(tmp_path, monkeypatch, fake_ray):
    real = extract._work
    folder = _folder(tmp_path)
    (folder / "zz_bad.cu").write_text("// BAD_INPUT\n__global__ void k() {}\n")

    def picky(item):
        if "BAD_INPUT" in item[1]:
            raise ValueError("unreadable program (injected)")
        return real(item)

    monkeypatch.setattr(extract, "_work", picky)
    res = CliRunner().invoke(app, ["features", str(folder), "--executor", "ray", "--no-cache",
                                   "--json"], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    text = _plain(res.output)
    assert "quarantined" in text and "unreadable program" in text
    assert "failed (ours" not in text
    assert text.count('"program_id"') == 3, "the three good programs keep their rows"
