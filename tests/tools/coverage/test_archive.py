"""Coverage archive: frozen bins, batch add statuses, save/load, CVT."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from structcover.config import ArchiveSettings
from structcover.tools.coverage.archive import GridArchive, build_archive, load, load_archive
from structcover.tools.coverage.bins import Dimension
from structcover.tools.coverage.cvt import CVTArchive


def _table(frac, tiled, speed, correct=None):
    n = len(frac)
    return pd.DataFrame({"program_id": [f"p{i}" for i in range(n)], "task_id": "t",
                         "mem.coalesced_fraction": frac, "smem.tiled": tiled,
                         "speedup": speed, "correct": correct if correct else [True] * n})


def test_grid_bins_statuses_and_stats():
    t = _table([0.0, 0.25, 0.5, 0.75, 1.0, 1.0], [True, False, True, False, True, True],
               [1.0, 2.0, 3.0, 4.0, 5.0, 9.0])
    arch = build_archive(t, ["smem.tiled", "mem.coalesced_fraction"],
                         settings=ArchiveSettings(bins_per_feature=2))
    assert isinstance(arch, GridArchive)
    # fixed quarters for a fraction, never round-0 quantiles (the median would be .625)
    assert arch.dims[1].edges == (0.0, 0.25, 0.5, 0.75, 1.0)
    arch = GridArchive(dims=[arch.dims[0], Dimension("mem.coalesced_fraction", "numeric",
                                                     edges=(0.0, 0.5, 1.0))])
    assert arch.n_bins == 4  # levels {0,1} x edges [0, 0.5, 1]
    res = arch.add(t)
    # rows: (1,[0,.5)) new; (0,[0,.5)) new; (1,[.5,1]) new; (0,[.5,1]) new; then two more in
    # (1,[.5,1]): 5.0 > 3.0 improved, 9.0 > 5.0 improved
    assert res["status"].tolist() == ["new", "new", "new", "new", "improved", "improved"]
    st = arch.stats().set_index("label")
    row = st.loc["smem.tiled=1,mem.coalesced_fraction=[0.5,1]"]
    assert row["count"] == 3 and row["best"] == 9.0 and row["mean"] == pytest.approx(17 / 3)
    # a worse program into a filled bin is not added; a wrong program scores 0
    res2 = arch.add(_table([0.9], [True], [100.0], [False]))
    assert res2["status"].tolist() == ["not_added"]
    bounds = arch.describe_bin("smem.tiled=1,mem.coalesced_fraction=[0.5,1]")
    assert bounds["smem.tiled"].value == "1"
    frac = bounds["mem.coalesced_fraction"]
    assert (frac.low, frac.high) == (0.5, 1.0)
    with pytest.raises(ValueError):
        arch.describe_bin("smem.tiled=7,mem.coalesced_fraction=[0.5,1]")


def test_frozen_edges_survive_save_load_and_second_round(tmp_path):
    r0 = _table([0.1, 0.2, 0.3, 0.9], [True, True, False, False], [1, 2, 3, 4])
    arch = build_archive(r0, ["mem.coalesced_fraction"],
                         settings=ArchiveSettings(bins_per_feature=2))
    edges = arch.dims[0].edges
    arch.add(r0)
    arch.save(tmp_path / "archive.json")
    again = load_archive(tmp_path)
    assert again.dims[0].edges == edges
    assert again.stats()["count"].tolist() == arch.stats()["count"].tolist()
    # round 1 has a very different distribution: the edges must not move
    r1 = _table([0.95, 0.97, 0.99, 5.0], [True] * 4, [1, 1, 1, 1])
    fresh = again.empty_copy()
    fresh.add(r1)
    assert fresh.dims[0].edges == edges
    # all in the top quarter (5.0 clipped into the end bin)
    assert fresh.stats()["count"].tolist() == [0, 0, 0, 4]
    assert load(tmp_path / "archive.json").labels() == arch.labels()


def test_unseen_level_and_missing_are_not_binned():
    r0 = pd.DataFrame({"program.language": ["cuda", "triton"], "speedup": [1.0, 1.0]})
    arch = build_archive(r0, ["program.language"])
    res = arch.add(pd.DataFrame({"program.language": ["cute", None], "speedup": [1.0, 1.0]}))
    assert res["bin"].tolist() == [-1, -1]
    assert res["status"].tolist() == ["not_added", "not_added"]


def test_cvt_above_dims_is_seeded_and_roundtrips(tmp_path):
    rng = np.random.default_rng(0)
    t = pd.DataFrame({f"f{i}": rng.random(300) for i in range(5)})
    t["flag"] = rng.random(300) > 0.5
    t["speedup"] = 1.0
    s = ArchiveSettings(cvt_above_dims=4, cvt_cells=16)
    a = build_archive(t, [*(f"f{i}" for i in range(5)), "flag"], settings=s, seed=3)
    b = build_archive(t, [*(f"f{i}" for i in range(5)), "flag"], settings=s, seed=3)
    assert isinstance(a, CVTArchive) and a.n_bins == 16
    assert np.allclose(a.centers, b.centers)
    a.add(t)
    assert a.stats()["count"].sum() == 300
    a.save(tmp_path / "archive.json")
    c = load(tmp_path / "archive.json")
    assert (c.index(t) == a.index(t)).all()
    lab = c.labels()[0]
    bounds = c.describe_bin(lab)
    assert set(bounds) == {*(f"f{i}" for i in range(5)), "flag"}
    assert bounds["flag"].value in {"0", "1"} and bounds["f0"].low <= bounds["f0"].high


def test_bad_values_rejected():
    with pytest.raises(ValueError):
        Dimension("x", "numeric", edges=(1.0,))
    with pytest.raises(ValueError):
        GridArchive(dims=[])
    with pytest.raises(ValueError):
        build_archive(pd.DataFrame({"a": [1.0]}), ["b"])
