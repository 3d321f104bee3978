"""One self-contained HTML report of a round's diagnosis (no network needed to view it).

Plots are inline SVG drawn by an inline script from JSON embedded in the page: coverage
heatmaps over pairs of archive features, the MI bar chart by tier, entropy and SCov across
rounds, the SRMis scatter, and the gap table with reasons.
"""

from __future__ import annotations

import html
import json
from itertools import combinations
from pathlib import Path
from string import Template

import numpy as np
import pandas as pd
from pydantic import BaseModel

from structcover.tools.coverage.archive import Archive
from structcover.tools.coverage.diagnosis import Diagnosis
from structcover.tools.report.template import TEMPLATE
from structcover.tools.data.atomic import write_text


class RoundPoint(BaseModel):
    """One round's headline numbers, for the across-rounds plots."""

    round: int
    scov: float
    entropy: float


def pair_heatmaps(archive: Archive, table: pd.DataFrame, features: list[str],
                  max_pairs: int = 3) -> list[dict]:
    """Program counts over the frozen bins of each pair of ``features`` (first pairs only)."""
    dims = {d.name: d for d in archive.dims}
    out = []
    for fx, fy in list(combinations([f for f in features if f in dims], 2))[:max_pairs]:
        dx, dy = dims[fx], dims[fy]
        ix, iy = dx.index(table[fx]), dy.index(table[fy])
        ok = (ix >= 0) & (iy >= 0)
        counts = np.zeros((dy.n_bins, dx.n_bins), np.int64)
        np.add.at(counts, (iy[ok], ix[ok]), 1)
        out.append({"x": fx, "y": fy, "x_labels": [dx.label(i) for i in range(dx.n_bins)],
                    "y_labels": [dy.label(i) for i in range(dy.n_bins)],
                    "counts": counts.tolist()})
    return out


def _kpis(d: Diagnosis) -> str:
    items = [("SCov", f"{d.scov:.3f}"), ("bins covered", f"{d.bins_covered} / {d.bins_total}"),
             ("zero bins", str(len(d.zero_bins))), ("low bins", str(len(d.low_bins))),
             ("H(S(D))", f"{d.entropy.joint:.3f} / {d.entropy.joint_max:.3f} nats"),
             ("SRMis", "n/a" if d.srmis.overall is None else f"{d.srmis.overall:.3f}"),
             ("collapse", "yes: " + (d.collapse.kind or "") if d.collapse.detected else "no")]
    if d.scov_adjusted is not None:
        items.insert(1, ("SCov, proven-infeasible bins removed", f"{d.scov_adjusted:.3f}"))
    return "".join(f'<div class="kpi">{html.escape(k)}<b>{html.escape(v)}</b></div>'
                   for k, v in items)


def _gap_table(d: Diagnosis) -> str:
    if not d.gaps:
        return "<p>No gaps.</p>"
    rows = "".join(
        f"<tr><td>{g.priority:.2f}</td><td>{html.escape(g.kind)}</td><td><code>"
        f"{html.escape(g.bin)}</code></td><td>{g.count}</td><td>"
        f"{'<br>'.join(html.escape(r) for r in g.reasons)}</td><td>{html.escape(g.action)}</td></tr>"
        for g in d.gaps)
    return ('<table id="gaps"><tr><th>priority</th><th>kind</th><th>bin</th><th>count</th>'
            f"<th>reasons</th><th>action</th></tr>{rows}</table>")


def render_report(diagnosis: Diagnosis, *, archive: Archive, table: pd.DataFrame,
                  history: list[RoundPoint] | None = None, simulated: bool = False,
                  title: str = "") -> str:
    """The report's HTML text.

    Args:
        diagnosis: This round's diagnosis.
        archive: The frozen archive (for bin labels in the heatmaps).
        table: This round's feature table (for the heatmap counts).
        history: Earlier rounds' numbers; this round is appended when missing.
        simulated: Label the page as built from simulated rewards.
        title: Shown in the page title.
    """
    crit = [f.name for f in diagnosis.features if f.tier == "critical" and f.in_archive]
    feats = crit if len(crit) >= 2 else archive.features
    rounds = list(history or [])
    this_round = diagnosis.round if diagnosis.round is not None else len(rounds)
    if not any(p.round == this_round for p in rounds):
        rounds.append(RoundPoint(round=this_round, scov=diagnosis.scov,
                                 entropy=diagnosis.entropy.joint))
    rounds.sort(key=lambda p: p.round)
    data = {"heatmaps": pair_heatmaps(archive, table, feats),
            "features": [f.model_dump() for f in diagnosis.features if f.mi is not None][:40],
            "rounds": [p.model_dump() for p in rounds],
            "scatter": [list(p) for p in diagnosis.srmis.scatter]}
    # "</" inside a script element would end it early; JSON allows the escaped form.
    blob = json.dumps(data, allow_nan=False).replace("</", "<\\/")
    banner = ('<p class="sim"><b>Simulated rewards</b>: rewards in this data come from the '
              "analytical GPU model of the rollout simulator, not from measurements.</p>"
              if simulated else "")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in
                    [*diagnosis.notes, diagnosis.collapse.note, diagnosis.srmis.predictor] if n)
    return Template(TEMPLATE).safe_substitute(
        title=html.escape(title or (f"round {diagnosis.round}" if diagnosis.round is not None
                                    else "")),
        banner=banner, kpis=_kpis(diagnosis), gaps=_gap_table(diagnosis),
        notes=f"<ul>{notes}</ul>", data=blob)


def write_report(path: Path, diagnosis: Diagnosis, **kwargs) -> Path:
    """Render and write the report atomically; keyword arguments as :func:`render_report`."""
    return write_text(render_report(diagnosis, **kwargs), Path(path))
