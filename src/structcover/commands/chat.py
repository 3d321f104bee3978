"""``structcover chat --state DIR [--llm URL]``: ask the Inspector about a campaign state
(why is a bin empty, what was tried, why is a program fast); every answer cites the records
it used. Without --llm it answers offline from a small command vocabulary."""

from __future__ import annotations

from pathlib import Path

import typer

from structcover.commands._output import fail


def chat(
    state: Path = typer.Option(..., "--state", help="Campaign state folder."),
    llm: str | None = typer.Option(None, "--llm", help="OpenAI-compatible endpoint (e.g. "
                                   "http://127.0.0.1:8000/v1 of `vllm serve`); offline if "
                                   "none (key from STRUCTCOVER_LLM_API_KEY/OPENAI_API_KEY)."),
    model: str | None = typer.Option(None, "--model", help="Model name served at --llm."),
) -> None:
    """Conversational inspection of STATE: ask until `quit` (or end of input)."""
    from structcover.agents.inspector import HELP, Inspector
    from structcover.agents.llm import LLMClient, resolve_config
    from structcover.tools.explain.state import StateError, StateView

    try:
        config = resolve_config(llm, model)
        view = StateView.open(state)
    except (StateError, ValueError) as exc:
        fail(str(exc))
    try:
        try:
            client = LLMClient.connect(config) if config is not None else None
        except ImportError as exc:
            fail(f"--llm needs langchain-openai ({exc}); pip install 'structcover[agents]'")
        inspector = Inspector(view, client)
        if client is None or config is None:
            print("offline (no --llm): answering from the command vocabulary.\n" + HELP,
                  flush=True)
        else:
            print(f"Inspector on {config.model} at {config.base_url}; `quit` leaves.",
                  flush=True)
        while True:
            try:
                question = input("> ")
            except (EOFError, KeyboardInterrupt):
                print(flush=True)
                break
            if question.strip().lower() in ("quit", "exit", "q"):
                break
            if not question.strip():
                continue
            print(inspector.ask(question).render(), flush=True)
    finally:
        view.close()


def register(app: typer.Typer) -> None:
    """Add the chat command."""
    app.command("chat")(chat)
