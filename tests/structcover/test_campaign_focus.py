"""A campaign on some tasks of a round: the focus keeps their rows, and names unknown tasks."""

from __future__ import annotations

import pandas as pd
import pytest

from structcover.campaign import CampaignOptions
from structcover.campaign.prepare import focus_rows


def _rows() -> pd.DataFrame:
    return pd.DataFrame({"task_id": ["gemm", "softmax", "gemm", "scan"],
                         "program": ["a", "b", "c", "d"]})


def test_no_focus_keeps_every_row() -> None:
    rows = _rows()
    assert focus_rows(rows, None) is rows
    assert focus_rows(rows, []) is rows


def test_focus_keeps_only_the_named_tasks_in_order() -> None:
    kept = focus_rows(_rows(), ["gemm"])
    assert list(kept["program"]) == ["a", "c"]
    assert list(kept.index) == [0, 1]


def test_an_unknown_task_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"\['gemv'\].*gemm, scan, softmax"):
        focus_rows(_rows(), ["gemm", "gemv"])


def test_options_carry_the_tasks() -> None:
    assert CampaignOptions().tasks is None
    assert CampaignOptions(tasks=["gemm"]).tasks == ["gemm"]
