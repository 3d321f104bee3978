"""The GPU protocol against a fake device: timing with events and L2 flushes, energy,
work left running on a side stream or a thread."""

import threading
import time

import pytest
from kb_fake_cuda import FakeCuda, FakeMonitor

torch = pytest.importorskip("torch")

from structcover.tools.kernelbench.gpu_protocol import async_work_check, l2_flush_buffer, time_callable  # noqa: E402

pytestmark = pytest.mark.kernelbench


class CountingFlush:
    def __init__(self, cuda: FakeCuda) -> None:
        self.cuda, self.zeroed = cuda, []

    def zero_(self) -> None:
        self.zeroed.append(self.cuda.records)  # events recorded before this flush


def test_timing_median_energy_and_a_flush_before_every_timed_call():
    cuda = FakeCuda()
    calls = []
    durations = iter([9.0, 9.0, 9.0, 1.0, 3.0, 2.0, 2.0, 50.0])  # 3 warm-up calls, 5 timed

    def kernel():
        calls.append(1)
        cuda.advance(next(durations))

    flush = CountingFlush(cuda)
    result = time_callable(kernel, [], cuda, flush, warmup=3, trials=5,
                           monitor=FakeMonitor(step_mj=5000))
    assert len(calls) == 8
    assert result["median_ms"] == 2.0 and result["trials"] == 5
    assert result["mean_ms"] == pytest.approx(58.0 / 5)
    assert result["cv"] > 1.0  # the 50 ms outlier shows in the spread
    assert flush.zeroed == [0, 2, 4, 6, 8]  # before each timed call's start event
    assert result["energy_j"] == pytest.approx(5.0 / 5)  # one 5 J step over five calls


def test_without_a_monitor_there_is_no_energy():
    cuda = FakeCuda()
    result = time_callable(lambda: cuda.advance(1.0), [], cuda, CountingFlush(cuda),
                           warmup=0, trials=2)
    assert result["energy_j"] is None and result["median_ms"] == 1.0
    with pytest.raises(ValueError):
        time_callable(lambda: None, [], cuda, CountingFlush(cuda), trials=0)


def test_flush_buffer_is_twice_the_l2():
    buf = l2_flush_buffer(torch, FakeCuda(l2_bytes=60 << 20), "cpu")
    assert buf.numel() * 4 == 120 << 20
    assert l2_flush_buffer(torch, FakeCuda(l2_bytes=0), "cpu").numel() * 4 == 8 << 20


def test_work_on_a_side_stream_is_caught():
    cuda = FakeCuda()
    x = torch.arange(8.0)

    def side_stream(x):
        out = torch.zeros_like(x)
        cuda.queue_side_stream(lambda: out.copy_(x * 2))  # done only at a device-wide sync
        return out

    why = async_work_check(side_stream, [x], cuda)
    assert why is not None and why.startswith("side-stream")
    assert cuda.stream_syncs == 1 and cuda.device_syncs == 1


def test_ordered_work_passes():
    cuda = FakeCuda()
    assert async_work_check(lambda x: x * 2, [torch.arange(8.0)], cuda) is None
    nan = torch.tensor([float("nan"), 1.0])
    assert async_work_check(lambda x: x + 0, [nan], cuda) is None  # NaN equals itself here


def test_a_thread_left_running_is_caught():
    cuda = FakeCuda()
    stop = threading.Event()

    def threaded(x):
        out = x * 2
        threading.Thread(target=stop.wait, args=(5,), daemon=True).start()
        return out

    try:
        why = async_work_check(threaded, [torch.arange(4.0)], cuda)
    finally:
        stop.set()
    assert why is not None and why.startswith("thread")
    time.sleep(0.01)
