"""The campaign's before/after panel: the first thing a reader of a campaign report sees.

A campaign report is built from the round's diagnosis, which is the *before* state (the data
as it came in). Without this panel the page led with the before numbers while the after
numbers appeared only in the terminal. The panel shows per-task SCov before and after, how
many programs were added and how each was verified, and the language split of the data and
of the added programs (CUDA and Triton share one archive).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field


class TaskDelta(BaseModel):
    """One task's SCov before and after the campaign."""

    task: str
    before: float
    after: float


class CampaignPanel(BaseModel):
    """What the campaign did, as the report shows it."""

    scov_before: float = Field(description="mean per-task SCov before the campaign")
    scov_after: float = Field(description="mean per-task SCov after the campaign")
    tasks: list[TaskDelta] = Field(default_factory=list)
    added: int = 0
    added_by_origin: dict[str, int] = Field(default_factory=dict)
    verified_by_backend: dict[str, int] = Field(default_factory=dict)
    candidates: int = 0
    languages: dict[str, int] = Field(default_factory=dict, description="data rows per language")
    added_languages: dict[str, int] = Field(default_factory=dict,
                                            description="added programs per language")
    stopped: str = ""


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(counter.items())) or "none"


def render_campaign_panel(panel: CampaignPanel | None) -> str:
    """The panel's HTML (empty when the report is not a campaign's)."""
    if panel is None:
        return ""
    rows = "".join(
        f"<tr><th>{html.escape(t.task)}</th><td>{t.before:.3f}</td><td>{t.after:.3f}</td>"
        f"<td>{t.after - t.before:+.3f}</td></tr>"
        for t in sorted(panel.tasks, key=lambda t: (t.after - t.before, t.task)))
    verified = (f"every one verified equivalent ({_counts(panel.verified_by_backend)})"
                if panel.added else "none")
    stopped = f"; stopped: {html.escape(panel.stopped)}" if panel.stopped else ""
    languages = _counts(panel.languages)
    added_lang = _counts(panel.added_languages)
    return (
        '<section id="campaign"><h2>This campaign</h2><div class="kpis">'
        f'<div class="kpi">SCov per task, mean: before → after<b>{panel.scov_before:.3f} → '
        f"{panel.scov_after:.3f}</b></div>"
        f'<div class="kpi">programs added<b>{panel.added}</b></div>'
        f'<div class="kpi">candidates judged<b>{panel.candidates}</b></div></div>'
        f'<p>Added programs: {verified}; by origin: {_counts(panel.added_by_origin)}{stopped}. '
        f"Languages: data {languages}; added {added_lang}.</p>"
        '<details><summary>Per task, before and after (smallest gain first)</summary>'
        '<table id="campaign-tasks"><tr><th>task</th><th>before</th><th>after</th><th>change</th>'
        f"</tr>{rows}</table></details>"
        '<p class="note">The sections below describe the data as it came in (the round\'s '
        "diagnosis, before the campaign).</p></section>")


def panel_from_state(state: dict[str, Any], *, languages: Counter[str], added_languages: Counter[str],
                     origin: Callable[[dict[str, Any]], str]) -> CampaignPanel:
    """The panel from the campaign graph's final state.

    Args:
        state: The graph state (``coverage_before``, ``coverage``, ``added``, ``candidates``,
            ``stopped``).
        languages: Data rows per ``program.language``.
        added_languages: Added programs per language.
        origin: An added record's origin (``mutant`` or ``llm``).
    """
    before = {c["task"]: float(c["scov"]) for c in state.get("coverage_before", [])}
    after = {c["task"]: float(c["scov"]) for c in state.get("coverage", [])}
    tasks = [TaskDelta(task=t, before=before[t], after=after[t]) for t in sorted(before) if t in after]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    added = list(state.get("added", []))
    origins = Counter(origin(p) for p in added)
    return CampaignPanel(
        scov_before=mean([t.before for t in tasks]), scov_after=mean([t.after for t in tasks]),
        tasks=tasks, added=len(added), added_by_origin=dict(origins),
        verified_by_backend=dict(Counter(str(p.get("backend", "?")) for p in added)),
        candidates=int(state.get("candidates", 0)), languages=dict(languages),
        added_languages=dict(added_languages), stopped=str(state.get("stopped", "")))
