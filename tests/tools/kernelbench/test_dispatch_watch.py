"""The run-time torch-compute watch: plumbing passes, compute is seen however it is spelled,
and end to end a candidate that launches its kernel but returns torch's answer fails."""

import operator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from structcover.tools.kernelbench.dispatch_watch import TorchComputeWatch  # noqa: E402

DATA = Path(__file__).parents[2] / "data" / "kernelbench"


def test_allocation_views_copies_and_fills_are_plumbing():
    a = torch.arange(12.0).reshape(3, 4)
    with TorchComputeWatch() as watch:
        out = torch.empty_like(a)
        out.copy_(a.t().contiguous().t())
        out.zero_()
        _ = a.view(4, 3).float().clone()
        _ = a[1:, :2].unsqueeze(0).expand(2, 2, 2)
    assert dict(watch.compute) == {}
    assert watch.finding(0) is None


@pytest.mark.parametrize("spelling", [
    lambda a, b: a.__matmul__(b),
    lambda a, b: getattr(a, "mat" + "mul")(b),
    lambda a, b: operator.matmul(a, b),
    lambda a, b: torch.ops.aten.mm.default(a, b),
])
def test_matmul_is_seen_whatever_the_spelling(spelling):
    a, b = torch.ones(4, 3), torch.ones(3, 5)
    with torch.no_grad(), TorchComputeWatch() as watch:
        assert torch.equal(spelling(a, b), torch.full((4, 5), 3.0))
    assert watch.compute["mm"] == 1
    finding = watch.finding(2)
    assert finding.startswith("trial 2: no_library_delegation:") and "aten.mm x1" in finding


def test_elementwise_and_reduction_compute_are_counted():
    a = torch.ones(8)
    with TorchComputeWatch() as watch:
        _ = (a * 2 + 1).sum()
    assert watch.compute["mul"] == 1 and watch.compute["add"] == 1 and watch.compute["sum"] == 1


def test_compute_on_constants_is_not_delegation():
    # A public solution zeroes its output as torch::ones(...) * 0: compute, but on no data.
    with TorchComputeWatch() as watch:
        out = torch.ones(4, 5) * 0
        out = torch.full((4, 5), 2.0).add_(out).relu()
    assert dict(watch.compute) == {} and watch.finding(0) is None
    assert watch.constant_compute == {"mul": 1, "add_": 1, "relu": 1}


def test_compute_on_inputs_or_on_a_constant_mixed_with_them_is_counted():
    a = torch.arange(6.0)  # made outside the watch: data, like the trial's inputs
    with TorchComputeWatch() as watch:
        zeros = torch.zeros(6)
        zeros.add_(a)       # data written into a constant: from now on it is data
        _ = zeros * 2
    assert watch.compute == {"add_": 1, "mul": 1}


def test_a_constant_written_outside_the_dispatcher_becomes_data():
    # A kernel writes through the raw pointer, unseen by the dispatcher; numpy does the same.
    # A policy could copy the inputs into a "constant" buffer and let torch finish the job.
    with TorchComputeWatch() as watch:
        buf = torch.ones(3, 3)
        buf.numpy()[:] = 7.0
        _ = buf @ torch.ones(3, 3)
    assert watch.compute["mm"] == 1
    assert "aten.mm x1" in watch.finding(1)


def test_uninitialised_memory_with_nans_still_compares_equal_to_itself():
    with TorchComputeWatch() as watch:
        buf = torch.empty(16)
        buf.numpy()[:3] = float("nan")  # written outside: data
        fresh = torch.full((4,), float("nan"))
        _ = fresh * 1
    assert dict(watch.compute) == {} and watch.constant_compute["mul"] == 1


def test_watching_does_not_change_results():
    a, b = torch.randn(6, 7, generator=torch.Generator().manual_seed(3)), torch.randn(7, 2)
    with TorchComputeWatch():
        watched = torch.softmax(a @ b, dim=1)
    assert torch.equal(watched, torch.softmax(a @ b, dim=1))


def _cpu_build_available() -> bool:
    try:
        from structcover.tools.kernelbench import cpu_build  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.kernelbench
@pytest.mark.slow
@pytest.mark.skipif(not _cpu_build_available(), reason="the CPU extension builder is not present")
@pytest.mark.parametrize("candidate", [
    "matmul_dunder_delegation.py",   # A.__matmul__(B) in forward
    "matmul_getattr_delegation.py",  # getattr(A, "mat" + "mul")(B)
    "matmul_dispatcher_cpp.py",      # aten::mm through c10::Dispatcher inside the extension
])
def test_a_kernel_that_returns_torchs_answer_fails_at_run_time(candidate, monkeypatch):
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench
    from structcover.tools.verify import hacking_py

    # The text checks refuse these spellings too (issue 27: the RL reward gates on them);
    # with them passed over, the run-time watch is what must catch each one.
    text = (DATA / "candidates" / candidate).read_text()
    assert not {r.name: r for r in hacking_py.run_python_checks(text)}["no_library_delegation"].ok
    checks = hacking_py.run_python_checks
    monkeypatch.setattr(hacking_py, "run_python_checks", lambda src: [
        r.model_copy(update={"ok": True}) if r.name == "no_library_delegation" else r
        for r in checks(src)])
    verdict = verify_kernelbench(text,
                                 resolve_problem("5", DATA / "problems"), backend="cpu", seed=1)
    assert verdict.equivalent is False and verdict.failure == "hacking", verdict.detail
    assert "no_library_delegation" in verdict.detail and "aten.mm" in verdict.detail


@pytest.mark.kernelbench
@pytest.mark.slow
@pytest.mark.skipif(not _cpu_build_available(), reason="the CPU extension builder is not present")
def test_a_tensor_operator_in_cpp_passes_the_text_but_not_the_run():
    # The renaming property tests' known hole (`x * x` on tensors in C++): the text layer lets it
    # through, the full verifier does not.
    from structcover.tools.kernelbench.problem import resolve_problem
    from structcover.tools.kernelbench.verify import verify_kernelbench
    from structcover.tools.verify import hacking_py

    text = (DATA / "candidates" / "elementwise_mul_tensor_operator.py").read_text()
    assert {r.name: r for r in hacking_py.run_python_checks(text)}["no_library_delegation"].ok
    verdict = verify_kernelbench(text, resolve_problem("1", DATA / "problems"), backend="cpu",
                                 seed=1)
    assert verdict.equivalent is False and verdict.failure == "hacking", verdict.detail
    assert "no_library_delegation" in verdict.detail and "aten.mul" in verdict.detail


# --- a finishing step (module doc): torch over what the kernels reduced, not over the inputs ---


def test_torch_summing_a_kernels_partials_is_a_finishing_step():
    x = torch.rand(4096)  # the input: 16 KiB
    partials = torch.rand(16)  # what a kernel of 16 blocks would leave: 64 bytes
    with TorchComputeWatch() as watch:
        _ = partials.sum().sqrt()
    assert watch.data_bytes == 64 + 4  # the sum read the partials, the sqrt one float
    note = watch.finishing(x.numel() * 4, launched=True)
    assert note and "aten.sum x1" in note and "finishing step" in note
    assert watch.finding(0, x.numel() * 4, launched=True) is None


def test_torch_over_input_sized_data_or_without_a_kernel_still_delegates():
    x = torch.rand(4096)
    loss = torch.rand(4096)  # a per-element loss a kernel wrote: the size of the input
    with TorchComputeWatch() as watch:
        _ = loss.mean()
    finding = watch.finding(1, x.numel() * 4, launched=True)
    assert finding and "no_library_delegation" in finding and "100 % of the input bytes" in finding
    partials = torch.rand(16)
    with TorchComputeWatch() as small:
        _ = partials.sum()
    # No kernel ran in the call: whatever torch did is the answer, however small.
    assert small.finding(0, x.numel() * 4, launched=False)
    # The share is of the input bytes: 1/16 passes, a byte more does not.
    small_data = torch.rand(256)  # made outside the watch: data (inside, a factory's output
    with TorchComputeWatch() as edge:  # is a constant)
        _ = small_data.sum()
    assert edge.finding(0, 256 * 4 * 16, launched=True) is None
    assert edge.finding(0, 256 * 4 * 16 - 1, launched=True)


# --- host computation: tensor data read into Python, which no dispatcher op computes ----------


def test_reads_into_python_are_counted_and_judged_like_compute():
    from structcover.tools.kernelbench.dispatch_watch import install_host_read_watch

    install_host_read_watch()
    x = torch.rand(64)
    with TorchComputeWatch() as listed:
        _ = torch.tensor([max(v, 0.0) for v in x.tolist()])
    assert listed.host_reads == {"tolist": 1} and listed.host_bytes == 64 * 4
    found = listed.finding(0, 64 * 4, launched=True)
    assert found and "host_compute" in found and "tolist x1" in found
    with TorchComputeWatch() as looped:  # `float(v)` per element: `_local_scalar_dense` each
        _ = torch.tensor([max(float(v), 0.0) for v in x])
    assert looped.host_reads["item"] == 64 and looped.finding(0, 64 * 4, launched=True)
    with TorchComputeWatch() as scalar:  # one scalar read after a kernel: a finishing step
        _ = x[0].item()
    assert scalar.finding(0, 64 * 4, launched=True) is None
    assert x.tolist()[:1] == [x[0].item()]  # outside a watch nothing is counted or changed


def test_raw_memory_read_through_ctypes_by_candidate_code_is_host_compute():
    import sysconfig

    from structcover.tools.kernelbench.dispatch_watch import install_host_read_watch

    install_host_read_watch()
    x = torch.rand(32)
    readers = {
        "from_address": "def peek(t):\n    import torch\n"
                        "    return list((torch.ctypes.c_float * 32).from_address(t.data_ptr()))\n",
        "cast": "def peek(t):\n    import ctypes\n"
                "    p = ctypes.cast(t.data_ptr(), ctypes.POINTER(ctypes.c_float))\n"
                "    return [p[i] for i in range(32)]\n",
        "address_only": "def peek(t):\n    return t.data_ptr() % 16\n",  # an alignment check
    }
    seen = {}
    for name, code in readers.items():
        scope: dict = {}
        exec(compile(code, f"/jobs/kb_candidate_{name}.py", "exec"), scope)  # noqa: S102
        with TorchComputeWatch() as watch:
            scope["peek"](x)
        seen[name] = watch.finding(0, 32 * 4, launched=True)
    assert seen["from_address"] and "ctypes.cdata" in seen["from_address"]
    assert seen["cast"] and "ctypes.cast" in seen["cast"]
    assert seen["address_only"] is None  # an address alone reads nothing
    # The same read from a library's file is not the candidate's.
    lib: dict = {}
    exec(compile(readers["cast"], sysconfig.get_paths()["purelib"] + "/some_lib/x.py", "exec"),  # noqa: S102
         lib)
    with TorchComputeWatch() as library:
        lib["peek"](x)
    assert not library.host_reads
