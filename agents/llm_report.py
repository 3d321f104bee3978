"""The LLM part of a campaign's outputs: ``llm_usage.json`` (endpoint, per-agent calls,
tokens, latency, fallbacks with reasons, rationales) and a section appended to the round's
HTML report, so a reader of the report sees how much the model did and why it fell back."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from structcover.agents.llm import fallback_lines


def section_html(summary: dict[str, Any]) -> str:
    """The report section for an LLM summary (escaped)."""
    rows = "".join(
        f"<tr><td>{html.escape(a)}</td><td>{u['calls']}</td><td>{u['ok']}</td>"
        f"<td>{u['fallbacks']}</td><td>{u['input_tokens']}</td><td>{u['output_tokens']}</td>"
        f"<td>{u['latency_s']:.2f}</td><td>{html.escape('; '.join(f'{r} x{n}' for r, n in sorted(u['reasons'].items())))}</td></tr>"  # noqa: E501
        for a, u in summary.get("agents", {}).items())
    lines = "".join(f"<li>{html.escape(x)}</li>" for x in fallback_lines(summary))
    why = "".join(f"<li>{html.escape(a)}: {html.escape(r)}</li>"
                  for a, rs in summary.get("rationales", {}).items() for r in rs)
    return (f'<section id="llm"><h2>LLM policies</h2><p>model '
            f'{html.escape(str(summary.get("model")))} at '
            f'{html.escape(str(summary.get("base_url")))}</p>'
            "<table><tr><th>agent</th><th>calls</th><th>used</th><th>fell back</th>"
            "<th>input tokens</th><th>output tokens</th><th>latency s</th><th>reasons</th>"
            f"</tr>{rows}</table>"
            + (f"<ul>{lines}</ul>" if lines else "")
            + (f"<h3>Rationales</h3><ul>{why}</ul>" if why else "") + "</section>")


def export_llm(summary: dict[str, Any], out: Path, report: Path | None) -> dict[str, str]:
    """Write ``llm_usage.json`` under ``out`` and append the section to ``report``."""
    from structcover.tools.data.atomic import write_text

    files = {"llm_usage": str(write_text(json.dumps(summary, indent=2, sort_keys=True),
                                         Path(out) / "llm_usage.json"))}
    if report is not None and Path(report).is_file():
        text = Path(report).read_text()
        at = text.rfind("</body>")
        section = section_html(summary)
        text = text[:at] + section + text[at:] if at >= 0 else text + section
        write_text(text, Path(report))
    return files
