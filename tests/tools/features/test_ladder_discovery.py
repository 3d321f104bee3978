"""``discover`` on the hand-written ladders, labels from the ladder order (issue 12).

On a ladder every optimization makes the source longer, so code length is not a confounder
to control for here but a consequence of the optimizations (controlling for it removes the
very signal); the run uses ``--no-length-control`` and shows the length baseline beside F*.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from structcover.cli import app

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
    rows = {r["name"]: r for r in out["ranking"]["rows"]}
    # Structure ranks the steps of held-out ladders better than kernel counts or chance.
    assert rows["F*"]["pooled"] > rows["kernels"]["pooled"] and rows["F*"]["pooled"] > 0.6
