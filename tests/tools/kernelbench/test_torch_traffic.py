"""torch's own operators inside forward: launches and bytes per operator (torch_traffic.py)."""

import pytest

torch = pytest.importorskip("torch")

from structcover.tools.kernelbench.torch_traffic import TorchTrafficMeter  # noqa: E402


def test_fills_write_copies_read_and_write_views_and_empties_launch_nothing() -> None:
    x = torch.arange(1000, dtype=torch.float32)
    with TorchTrafficMeter() as meter:
        torch.empty_like(x)                     # allocation only
        x.view(10, 100).t()                     # views only
        zeros = torch.zeros_like(x)             # a fill: 4000 B written, x not read
        zeros.copy_(x)                          # 4000 B read, 4000 B written
        x.view(10, 100).t().contiguous()        # a strided copy: read and write 4000 B
        x.half()                                # a cast: read 4000 B, write 2000 B
    ops = meter.ops
    assert "empty_like" not in ops and "view" not in ops and "t" not in ops
    assert ops["zeros_like"] == {"launches": 1, "read_bytes": 0, "write_bytes": 4000}
    assert ops["copy_"] == {"launches": 1, "read_bytes": 4000, "write_bytes": 4000}
    assert ops["clone"] == {"launches": 1, "read_bytes": 4000, "write_bytes": 4000}
    assert ops["_to_copy"] == {"launches": 1, "read_bytes": 4000, "write_bytes": 2000}


def test_an_in_place_op_reads_and_writes_its_operand_a_fill_only_writes() -> None:
    x = torch.ones(256)
    with TorchTrafficMeter() as meter:
        x.mul_(2.0)
        x.fill_(0.0)
    assert meter.ops["mul_"] == {"launches": 1, "read_bytes": 1024, "write_bytes": 1024}
    assert meter.ops["fill_"] == {"launches": 1, "read_bytes": 0, "write_bytes": 1024}


def test_an_out_target_is_written_not_read() -> None:
    a, b, out = torch.ones(64), torch.ones(64), torch.empty(64)
    with TorchTrafficMeter() as meter:
        torch.add(a, b, out=out)
    assert meter.ops["add"] == {"launches": 1, "read_bytes": 512, "write_bytes": 256}
