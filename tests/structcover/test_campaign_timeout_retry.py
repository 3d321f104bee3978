"""The campaign's verification port runs a candidate again when it only timed out once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from types import SimpleNamespace
from typing import Any

from structcover.campaign.bindings import VerifierBinding


def _result(passed: bool, failure: str | None) -> SimpleNamespace:
    """A pipeline result as ``verify_for_bin`` returns it (the fields the port reads)."""
    return SimpleNamespace(
        passed=passed, stage_failed=None if passed else "equivalence", feedback="",
        landed_bin="b", stages=[], features={},
        equivalence=SimpleNamespace(backend="cpu", failure=failure))


class Scripted:
    """An executor that answers each check with the next scripted pipeline result."""

    def __init__(self, results: list[SimpleNamespace]) -> None:
        self.results = list(results)
        self.calls = 0

    def map(self, fn: Callable[..., Any], items: Iterable[Any], *, batch_size: int = 1,
            resources: dict[str, float] | None = None,
            on_progress: Callable[[int], None] | None = None,
            shared: Any = None) -> Iterator[Any]:
        self.calls += 1
        return iter([self.results.pop(0) for _ in items])


def _binding(executor: Scripted) -> VerifierBinding:
    return VerifierBinding(coverage=None, archive=None, backend=SimpleNamespace(name="cpu"),
                           specs={"t": object()}, executor=executor)


def test_a_timeout_followed_by_a_pass_is_a_pass_and_says_it_was_retried():
    executor = Scripted([_result(False, "timeout"), _result(True, None)])
    verdict = _binding(executor).verify("src", "t", "b")
    assert executor.calls == 2
    assert verdict["ok"] is True
    assert "timed out once" in verdict["reason"]


def test_a_second_timeout_is_final():
    executor = Scripted([_result(False, "timeout"), _result(False, "timeout")])
    verdict = _binding(executor).verify("src", "t", "b")
    assert executor.calls == 2 and verdict["ok"] is False


def test_other_failures_are_not_run_again():
    executor = Scripted([_result(False, "mismatch"), _result(True, None)])
    verdict = _binding(executor).verify("src", "t", "b")
    assert executor.calls == 1 and verdict["ok"] is False
