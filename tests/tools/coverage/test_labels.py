"""Bin labels: one parser serves the grid's coordinates, prompts without an archive and the
report; both geometries write labels it reads back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from structcover.config import ArchiveSettings
from structcover.tools.coverage.archive import (
    GridArchive,
    archive_from_state,
    build_archive,
)
from structcover.tools.coverage.bins import Dimension
from structcover.tools.coverage.cvt import CVTArchive
from structcover.tools.coverage.labels import label_items, parse_bin_label, split_cell

LABEL = "smem.tiled=1,mem.coalesced_fraction=[0.9,1.0],warp.shuffles=[0.5,3.5),loop.grid_stride=0"


def _grid() -> GridArchive:
    return GridArchive(dims=[
        Dimension("pattern.reuse", "categorical", levels=("none", "smem_tiling")),
        Dimension("mem.coalesced_fraction", "numeric", edges=(0.0, 0.5, 1.0)),
        Dimension("sync.block_barriers", "numeric", edges=(0.0, 1.0, 4.0, np.inf)),
    ])


def test_label_items_keep_ranges_whole():
    assert label_items(LABEL) == [("smem.tiled", "1"), ("mem.coalesced_fraction", "[0.9,1.0]"),
                                  ("warp.shuffles", "[0.5,3.5)"), ("loop.grid_stride", "0")]
    assert label_items("cell=7|a=[1,2], b = x") == [("a", "[1,2]"), ("b", "x")]
    assert split_cell("cell=7|a=1") == (7, "a=1") and split_cell("a=1") == (None, "a=1")
    for bad in ("not a label", "=1", "a=1,,b=2", ""):
        with pytest.raises(ValueError, match="bin label"):
            label_items(bad)
    with pytest.raises(ValueError, match="cell=<number>"):
        split_cell("cell=x|a=1")


def test_parse_bin_label_ranges_and_levels():
    b = parse_bin_label(LABEL)
    assert b["smem.tiled"].value == "1"
    assert (b["mem.coalesced_fraction"].low, b["mem.coalesced_fraction"].high) == (0.9, 1.0)
    assert b["mem.coalesced_fraction"].high_closed and not b["warp.shuffles"].high_closed
    cvt = parse_bin_label("cell=3|sync.block_barriers=[0,2]")
    assert list(cvt) == ["sync.block_barriers"]
    assert parse_bin_label("x=[1,inf)")["x"].high is None
    with pytest.raises(ValueError, match="bin label"):
        parse_bin_label("not a label")
    with pytest.raises(ValueError, match="needs two ends"):
        parse_bin_label("x=[1,2,3]")
    with pytest.raises(ValueError, match="needs two ends"):
        parse_bin_label("x=[0,y=1")


def test_every_grid_label_parses_back_to_its_bin():
    arch = _grid()
    for i, lab in enumerate(arch.labels()):
        assert np.ravel_multi_index(arch.coords(lab), arch.shape) == i
        # Without the archive, a label gives the same bounds the archive does.
        assert parse_bin_label(lab) == arch.describe_bin(lab)
    lab = arch.label(8)  # (1, 0, 2) in the shape (2, 2, 3)
    assert lab == "pattern.reuse=smem_tiling,mem.coalesced_fraction=[0,0.5),sync.block_barriers=[4,inf)"
    with pytest.raises(ValueError, match="unknown value 'tiling' for pattern.reuse"):
        arch.coords(lab.replace("smem_tiling", "tiling"))
    with pytest.raises(ValueError, match="expected the axes"):
        arch.coords("mem.coalesced_fraction=[0,0.5),pattern.reuse=none,sync.block_barriers=[0,1)")
    with pytest.raises(ValueError, match="expected the axes"):
        arch.coords("pattern.reuse=none")


def test_cvt_labels_and_state_round_trip():
    rng = np.random.default_rng(1)
    t = pd.DataFrame({f"f{i}": rng.random(200) for i in range(3)})
    t["flag"] = rng.random(200) > 0.5
    t["speedup"] = rng.random(200) + 0.5
    arch = build_archive(t, ["f0", "f1", "f2", "flag"],
                         settings=ArchiveSettings(cvt_above_dims=2, cvt_cells=6), seed=2)
    assert isinstance(arch, CVTArchive)
    arch.add(t)
    again = archive_from_state(arch.to_state())
    assert isinstance(again, CVTArchive) and again.labels() == arch.labels()
    assert again.count.tolist() == arch.count.tolist()
    for i, lab in enumerate(arch.labels()):
        assert split_cell(lab)[0] == i
        assert [n for n, _ in label_items(lab)] == ["f0", "f1", "f2", "flag"]
        assert parse_bin_label(lab)["flag"] == arch.describe_bin(lab)["flag"]
    with pytest.raises(ValueError, match="no such cell"):
        arch.describe_bin("cell=99|f0=[0,1]")
    with pytest.raises(ValueError, match="expected 'cell=K"):
        arch.describe_bin("f0=[0,1]")
    empty = arch.empty_copy()
    assert type(empty) is CVTArchive and empty.count.sum() == 0
    assert np.array_equal(empty.centers, arch.centers)


def test_grid_empty_copy_and_unknown_kind():
    arch = _grid()
    state = arch.to_state()
    assert type(arch.empty_copy()) is GridArchive
    with pytest.raises(ValueError, match="unknown archive kind 'hexagon'"):
        archive_from_state({**state, "kind": "hexagon"})
