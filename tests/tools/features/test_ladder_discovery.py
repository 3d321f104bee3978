"""``discover`` on the hand-written ladders, labels from the ladder order (issue 12).

On a ladder every optimization makes the source longer, so code length is not a confounder
to control for here but a consequence of the optimizations (controlling for it removes the
very signal); the run uses ``--no-length-control`` and shows the length baseline beside F*.

Why F* does not beat the length baseline here (measured, seed 0, 93 within-ladder pairs):
length ranks 0.89 of the pairs, because almost every step adds code; F* (re-discovered on
the three training ladders of each fold, 22 programs) ranks about 0.66.

* Most steps move a feature that only their own ladder moves (padding, coarsening,
  ``__restrict__``/``__ldg``, ``__launch_bounds__``, fast math, online softmax): trained on
  the other ladders, a model cannot learn its direction, so those steps tie. Even with every
  untied pair right, the six pattern levels tie 19 of the 93 pairs (ceiling 0.898) and the
  full-data F* (reuse, vector width) ties 29 (ceiling 0.844).
* Some directions disagree between ladders: softmax gets faster by moving its reduction
  from shared memory to warp shuffles (fewer shared accesses), the other ladders by staging
  more in shared memory; the softmax fold's F* (shared accesses, ...) ranks it 0.31.
* Selection on 22 programs is unstable: F* on all data is (pattern.reuse,
  mem.vector_width_global), and that fixed set ranks 0.81 held out, but the SGEMM and
  softmax folds select neither (warp shuffles, shared accesses, ``__restrict__`` ...).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from structcover.cli import app
from structcover.tools.features.registry import is_structural

LADDERS = Path(__file__).parents[2] / "data" / "ladders"


def ladder_table() -> pd.DataFrame:
    """One row per ladder step; speedup grows with the step (each optimization helps)."""
    rows = []
    for ladder in ("sgemm", "reduction", "transpose", "softmax"):
        for i, path in enumerate(sorted((LADDERS / ladder).glob("[0-9][0-9]_*.cu"))):
            rows.append({"task_id": ladder, "program_id": f"{ladder}/{path.stem}",
                         "program": path.read_text(), "speedup": 1.5 ** i, "correct": True})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_discover_on_ladders_keeps_a_reuse_or_access_pattern(tmp_path):
    ladder_table().to_parquet(tmp_path / "ladders.parquet")
    res = CliRunner().invoke(app, ["discover", str(tmp_path / "ladders.parquet"), "--json",
                                   "--bootstrap", "2", "--no-length-control"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {"pattern.reuse", "pattern.global_access"} & set(out["f_star"]), out["f_star"]
    # F* is structure, never a size measure standing in for the length baseline.
    assert all(is_structural(name) for name in out["f_star"]), out["f_star"]
    rows = {r["name"]: r for r in out["ranking"]["rows"]}
    assert {"length", "kernels", "F*", "F* + length"} <= set(rows)
    # Structure ranks the steps of held-out ladders better than kernel counts, chance and its
    # own shuffled-label control; beside length it keeps most of length's accuracy.
    f_star = rows["F*"]
    assert f_star["pooled"] > rows["kernels"]["pooled"] and f_star["pooled"] > 0.6
    assert f_star["pooled"] > f_star["shuffled"] + 0.1
    assert rows["F* + length"]["pooled"] > f_star["pooled"]
