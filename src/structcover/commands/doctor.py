"""``structcover doctor``: what is present, and how to get what would make the tool stronger."""

from __future__ import annotations

import typer

from structcover.commands._output import print_json, print_table
from structcover.config import load_settings
from structcover.doctor import run_checks


def doctor(
    llm: str | None = typer.Option(None, "--llm", help="OpenAI-compatible base URL to probe."),
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Check for a host C++ compiler, the sandbox, nvcc, NVRTC, a GPU, NVML, an LLM endpoint
    and its client library, Ray, and the memory store."""
    settings = load_settings()
    checks = run_checks(llm_base_url=llm or settings.llm.base_url, state_dir=settings.state_dir)
    if as_json:
        print_json(checks)
    else:
        print_table("structcover doctor", ["", "part", "found", "how to get it"],
                    [["ok" if c.ok else "--", c.name, c.detail, c.how_to_get] for c in checks])
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the doctor command."""
    app.command("doctor")(doctor)
