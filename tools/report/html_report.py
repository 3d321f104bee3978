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
from structcover.tools.coverage.labels import label_items
from structcover.tools.coverage.per_task import TaskInfeasibility
from structcover.tools.data.atomic import write_text
from structcover.tools.report.campaign_panel import CampaignPanel, render_campaign_panel
from structcover.tools.report.footnotes import Footnotes
from structcover.tools.report.template import TEMPLATE


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


def task_coverage_table(d: Diagnosis, archive: Archive, table: pd.DataFrame,
                        max_bins: int = 60) -> str:
    """Programs per task and bin (bins some task reaches), with each task's SCov and proofs.

    Columns are the bins at least one task reaches, most programs first (at most
    ``max_bins``; the rest are counted in the caption); every other bin is empty for every
    task and counts in each task's SCov denominator unless proven infeasible for it.
    """
    if not d.task_coverage or "task_id" not in table.columns:
        return "<p>No per-task coverage (the table has no task column).</p>"
    from structcover.tools.coverage.per_task import task_bin_counts  # noqa: PLC0415

    counts = task_bin_counts(table, archive, archive.index(table))
    order = counts.sum(axis=0).sort_values(ascending=False, kind="stable").index.tolist()
    shown = order[:max_bins]
    top = max(int(counts.to_numpy().max()) if counts.size else 1, 1)

    def head(label: str) -> str:
        parts = [html.escape(level) for _, level in label_items(label)]
        # Vertical headers (levels joined by " · "): a row of 25+ bins then fits the page.
        return f'<th class="bin" title="{html.escape(label)}"><span>{" · ".join(parts)}</span></th>'

    def cell(n: int) -> str:
        if not n:
            return '<td class="n"></td>'
        shade = int(235 - 160 * np.log1p(n) / np.log1p(top))
        return f'<td class="n" style="background: rgb({shade},{shade + 10},255)">{n}</td>'

    def proof_text(p: TaskInfeasibility) -> str:
        when = ", ".join(f"{k}={v}" for k, v in p.when.items())
        text = f"{p.bins} bins infeasible: {when} ({p.reason})"
        return text + (f" [contradicted by {p.contradicted_by} reached bins]" if p.contradicted_by else "")

    notes = Footnotes((proof_text(p) for t in d.task_coverage for p in t.infeasible), prefix="proof")
    rows = []
    for t in d.task_coverage:
        proofs = "; ".join(notes.cell(proof_text(p)) for p in t.infeasible)
        line = counts.loc[t.task_id] if t.task_id in counts.index else None
        cells = "".join(cell(int(line[b]) if line is not None else 0) for b in shown)
        rows.append(f"<tr><th>{html.escape(t.task_id)}</th><td>{t.scov:.3f}</td>"
                    f"<td>{t.bins_covered} / {t.bins_feasible}</td>{cells}"
                    f'<td class="note">{proofs}</td></tr>')
    axes = " × ".join(html.escape(f) for f in archive.features)
    more = (f"; {len(order) - len(shown)} more reached bins not shown" if len(order) > len(shown)
            else "")
    mean = "n/a" if d.scov_task_mean is None else f"{d.scov_task_mean:.3f}"
    labels = "".join(head(b) for b in shown)
    return (f'<p class="note">Axes: {axes} ({archive.n_bins} bins). Per-task SCov = bins the '
            f"task reaches / bins not proven infeasible for it; mean over tasks {mean}, pooled "
            f"{d.scov:.3f}. Columns: the {len(shown)} bins some task reaches{more}; level "
            f"values bottom to top in axis order.</p>"
            f'<div style="overflow-x:auto"><table class="tc" id="task-coverage"><tr><th>task</th>'
            f"<th>SCov</th><th>covered / feasible</th>{labels}<th>infeasible (proof)</th></tr>"
            f"{''.join(rows)}</table></div>{notes.legend()}")


def _kpis(d: Diagnosis) -> str:
    items = [("SCov, pooled over tasks", f"{d.scov:.3f}"),
             ("bins covered", f"{d.bins_covered} / {d.bins_total}"),
             ("zero bins", str(len(d.zero_bins))), ("low bins", str(len(d.low_bins))),
             ("H(S(D))", f"{d.entropy.joint:.3f} / {d.entropy.joint_max:.3f} nats"),
             ("SRMis", "n/a" if d.srmis.overall is None else f"{d.srmis.overall:.3f}"),
             ("collapse", "yes: " + (d.collapse.kind or "") if d.collapse.detected else "no")]
    if d.scov_adjusted is not None:
        items.insert(1, ("SCov, proven-infeasible bins removed", f"{d.scov_adjusted:.3f}"))
    if d.scov_task_mean is not None:
        items.insert(0, ("SCov per task, mean", f"{d.scov_task_mean:.3f}"))
    return "".join(f'<div class="kpi">{html.escape(k)}<b>{html.escape(v)}</b></div>'
                   for k, v in items)


def _gap_table(d: Diagnosis) -> str:
    if not d.gaps:
        return "<p>No gaps.</p>"
    notes = Footnotes((r for g in d.gaps for r in g.reasons), prefix="reason")
    rows = "".join(
        f"<tr><td>{g.priority:.2f}</td><td>{html.escape(g.kind)}</td><td><code>"
        f"{html.escape(g.bin)}</code></td><td>{g.count}</td><td>"
        f"{'<br>'.join(notes.cell(r) for r in g.reasons)}</td>"
        f"<td>{html.escape(g.action)}</td></tr>"
        for g in d.gaps)
    return ('<table id="gaps"><tr><th>priority</th><th>kind</th><th>bin</th><th>count</th>'
            f"<th>reasons</th><th>action</th></tr>{rows}</table>{notes.legend()}")


def _fmt_num(x: float | None) -> str:
    return "" if x is None else f"{x:.3g}"


def _trend_table(diagnosis: Diagnosis) -> str:
    """Every round of the state: coverage, entropy, collapse and reward side by side."""
    trend = diagnosis.trend
    if trend is None or not trend.rounds:
        return ""
    rows = ""
    for p in trend.rounds:
        drift = [*("+" + f for f in p.f_star_added), *("-" + f for f in p.f_star_removed)]
        rows += (f"<tr><td>{p.round}</td><td>{_fmt_num(p.scov)}</td>"
                 f"<td>{_fmt_num(p.scov_task_mean)}</td><td>{_fmt_num(p.entropy)}</td>"
                 f"<td>{html.escape(p.collapse or '')}</td><td>{_fmt_num(p.reward_mean)}</td>"
                 f"<td>{html.escape(', '.join(p.f_star))}</td>"
                 f"<td>{html.escape(' '.join(drift))}</td></tr>")
    corr = (f"coverage/reward correlation (round-to-round changes, {trend.changes} changes): "
            f"r = {trend.coverage_reward_correlation:.2f}"
            if trend.coverage_reward_correlation is not None else html.escape(trend.note))
    return ('<table id="trend"><tr><th>round</th><th>SCov pooled</th><th>SCov per task</th>'
            "<th>H(S(D))</th><th>collapse</th><th>mean reward</th><th>F*</th><th>F* drift</th>"
            f'</tr>{rows}</table><p class="note">{corr}</p>')


#: The label a page gets when its rewards were not measured on a GPU.
_BANNERS = {
    "simulated": ('<p class="sim"><b>Simulated rewards</b>: rewards in this data come from the '
                  "analytical GPU model of the rollout simulator, not from measurements.</p>"),
    "modelled": ('<p class="sim"><b>Modelled rewards</b>: rewards in this data are GPU times '
                 "predicted by the timing model from counters measured in the CPU emulator, "
                 "not timings measured on a GPU.</p>"),
}


def render_report(diagnosis: Diagnosis, *, archive: Archive, table: pd.DataFrame,
                  history: list[RoundPoint] | None = None, simulated: bool = False,
                  title: str = "", campaign: CampaignPanel | None = None,
                  reward_source: str = "") -> str:
    """The report's HTML text.

    Args:
        diagnosis: This round's diagnosis.
        archive: The frozen archive (for bin labels in the heatmaps).
        table: This round's feature table (for the heatmap counts).
        history: Earlier rounds' numbers; this round is appended when missing.
        simulated: Label the page as built from simulated rewards (the analytic model).
        title: Shown in the page title.
        campaign: A campaign's before/after panel, shown first when given.
        reward_source: ``"modelled"`` labels the page as built from rewards the timing model
            predicted from measured emulator counters; ``"simulated"`` as ``simulated``.
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
    banner = _BANNERS.get("simulated" if simulated else reward_source, "")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in
                    [*diagnosis.notes, diagnosis.collapse.note, diagnosis.srmis.predictor] if n)
    return Template(TEMPLATE).safe_substitute(
        title=html.escape(title or (f"round {diagnosis.round}" if diagnosis.round is not None
                                    else "")),
        banner=banner, campaign=render_campaign_panel(campaign), kpis=_kpis(diagnosis),
        task_coverage=task_coverage_table(diagnosis, archive, table),
        gaps=_gap_table(diagnosis), trend=_trend_table(diagnosis),
        notes=f"<ul>{notes}</ul>", data=blob)


def write_report(path: Path, diagnosis: Diagnosis, **kwargs) -> Path:
    """Render and write the report atomically; keyword arguments as :func:`render_report`."""
    return write_text(render_report(diagnosis, **kwargs), Path(path))
