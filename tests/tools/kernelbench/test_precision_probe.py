"""The response probe's parts on plain torch: which elements are nudged, and what counts as a
response (the end-to-end verdicts are in test_verify_precision.py)."""

import pytest

torch = pytest.importorskip("torch")

from structcover.tools.kernelbench.precision_probe import (  # noqa: E402
    EVERY,
    nudged,
    reconsider,
    responded,
)


def test_every_61st_float_element_moves_and_other_inputs_stay():
    x = torch.randn(4, 50)
    n = torch.arange(10)
    original = x.clone()
    (moved, ints), count = nudged([x, n])
    changed = (moved != x).view(-1).nonzero().view(-1)
    assert changed.tolist() == list(range(0, x.numel(), EVERY)) and count == len(changed)
    step = (moved.view(-1)[changed] / x.view(-1)[changed] - 1).double()
    assert ((step > 2.0 ** -20) & (step < 2.0 ** -18)).all()  # ~2^-19: float16 cannot see it
    assert ints is n and torch.equal(x, original)  # the original is not touched


def test_float32_work_responds_and_float16_work_does_not():
    x = torch.randn(64, 257)
    moved, count = nudged([x])
    for f, follows in [(lambda t: torch.nn.functional.gelu(t, approximate="tanh"), True),
                       (lambda t: t.sum(-1), True),
                       (lambda t: t.half().float().sum(-1), False),
                       (lambda t: torch.nn.functional.gelu(t.half()).float(), False)]:
        a, b = f(x), f(moved[0])
        assert responded(int((a != b).sum()), a.numel(), count) is follows


def test_a_probe_that_did_not_run_leaves_the_failure_standing():
    stands, why = reconsider("output 0: error 3000x", {"ran": False, "why": "boom"})
    assert stands and "did not run (boom)" in why
    stands, why = reconsider("output 0: error 3000x", {"ran": True, "nudges": 10, "outputs": [
        {"size": 100, "changed": 9}, {"size": 100, "changed": 0}]})
    assert stands and "output 1 did not follow" in why
    stands, _ = reconsider("output 0: error 3000x", {"ran": True, "nudges": 10, "outputs": [
        {"size": 100, "changed": 9}, {"size": 0, "changed": None}]})
    assert not stands
