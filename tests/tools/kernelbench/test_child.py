"""The child: failure kinds from what a candidate's call raised (no torch needed), the float64
reference pass (torch)."""

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


def test_float64_pass_replays_the_forwards_random_draws_and_upcasts():
    torch = pytest.importorskip("torch")
    from structcover.tools.kernelbench.child_fp64 import fp64_outputs

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 32)
            self.drop = torch.nn.Dropout(0.5)  # training mode: draws a mask every call

        def forward(self, x, n):
            y = self.drop(self.lin(x)) + torch.ones(32)  # a factory without a dtype
            return y, torch.argmax(y, dim=1), n

    torch.manual_seed(0)
    model, x = Model(), torch.randn(8, 64)
    model_double = Model().double()
    model_double.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    state = torch.get_rng_state()
    outputs = list(model(x, 3))
    after = torch.get_rng_state()
    wide, why = fp64_outputs(model_double, [x, 3], outputs, state)
    assert why == "" and wide is not None
    assert wide[0].dtype == torch.float64 and wide[1] is None and wide[2] is None
    # The same dropout mask: float64 and float32 agree to float32 rounding.
    assert torch.allclose(wide[0], outputs[0].double(), rtol=1e-5, atol=1e-5)
    assert torch.equal(torch.get_rng_state(), after)
    assert torch.get_default_dtype() == torch.float32


def test_float64_pass_failure_is_a_reason_not_an_error():
    torch = pytest.importorskip("torch")
    from structcover.tools.kernelbench.child_fp64 import fp64_outputs

    class Picky(torch.nn.Module):
        def forward(self, x):
            if x.dtype == torch.float64:
                raise TypeError("float32 only")
            return x

    x = torch.ones(3)
    wide, why = fp64_outputs(Picky(), [x], [x], torch.get_rng_state())
    assert wide is None and "the float64 run raised TypeError: float32 only" in why
    assert torch.get_default_dtype() == torch.float32
