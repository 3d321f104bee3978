"""The Diagnoser's LLM policy: the model looks at the gaps the tools reported, asks for the
analyses it wants through tool calls (``gap_details``), and answers with ``choose_targets``:
the gap keys to target first and its rationale.

It can only reorder: a key that names no reported gap is dropped, gaps it leaves out keep
the offline order after its choice, and any failure (transport, no ``choose_targets`` within
the turn limit, malformed tool-call arguments) falls back to the offline order with the
reason counted.
"""

from __future__ import annotations

import json
from typing import Any

from structcover.agents.diagnoser import DiagnosisPolicy, OfflineDiagnosisPolicy
from structcover.agents.llm import LLMClient, LLMReplyError
from structcover.agents.llm_prompts import render
from structcover.graphs.state import GapState

AGENT = "diagnoser"


def gap_details(key: str) -> str:
    """Everything the tools know about one gap: bounds, reasons, failures so far.

    Args:
        key: A gap key from the list, e.g. ``G3``.
    """
    raise NotImplementedError  # schema only: answered by LLMDiagnosisPolicy


def choose_targets(keys: list[str], rationale: str) -> str:
    """Choose the gaps to target first, most worth first, and say why.

    Args:
        keys: Gap keys from the list, e.g. ``["G3", "G1"]``.
        rationale: Why these gaps, in this order (two or three sentences).
    """
    raise NotImplementedError  # schema only


class LLMDiagnosisPolicy:
    """Gap ordering by the model, within what the tools reported."""

    def __init__(self, client: LLMClient, offline: DiagnosisPolicy | None = None,
                 shown: int = 24, turns: int = 3) -> None:
        self.client = client
        self.offline = offline or OfflineDiagnosisPolicy()
        self.shown = shown
        self.turns = turns
        self._cache: dict[tuple[str, ...], list[str]] = {}

    def order(self, gaps: list[GapState]) -> list[GapState]:
        """The model's choice first, then the rest in the offline order."""
        base = self.offline.order(gaps)
        open_ = [g for g in base if g["status"] in ("open", "targeted")][:self.shown]
        if not open_:
            return base
        keys = {f"G{i}": g for i, g in enumerate(open_, 1)}
        ident = tuple(f"{g['task']}|{g['bin']}|{g['failures']}" for g in open_)
        if ident not in self._cache:
            chosen = self._ask(keys)
            if chosen is None:
                return base
            self._cache[ident] = chosen
        first = [keys[k] for k in self._cache[ident]]
        ids = {id(g) for g in first}
        return first + [g for g in base if id(g) not in ids]

    def _ask(self, keys: dict[str, GapState]) -> list[str] | None:
        from langchain_core.messages import HumanMessage, ToolMessage

        listing = "\n".join(f"- {k}: {g['task']} / {g['bin']} (priority {g['priority']:.2f}, "
                            f"{g['kind']}, {g['failures']} failures)" for k, g in keys.items())
        messages: list[Any] = [HumanMessage(render("diagnoser_system", gaps=listing))]
        model = self.client.model.bind_tools([gap_details, choose_targets])
        for _ in range(self.turns):
            reply = self.client.call(AGENT, messages, _tool_calls, model=model)
            if reply is None:
                return None
            msg, calls = reply
            messages.append(msg)
            for call in calls:
                if call["name"] == "choose_targets":
                    chosen = [k for k in call["args"].get("keys", []) if k in keys]
                    if not chosen:
                        self.client.fallback(AGENT, "choose_targets named no listed gap")
                        return None
                    self.client.note(AGENT, str(call["args"].get("rationale", ""))[:500])
                    return list(dict.fromkeys(chosen))
                key = str(call["args"].get("key", ""))
                g = keys.get(key)
                body = json.dumps(dict(g) if g else {"error": f"no gap {key!r}"})
                messages.append(ToolMessage(body, tool_call_id=call["id"]))
        self.client.fallback(AGENT, f"no choose_targets call within {self.turns} turns")
        return None


def _tool_calls(reply: Any) -> tuple[Any, list[dict[str, Any]]]:
    """The reply and its tool calls.

    Raises:
        LLMReplyError: Malformed tool-call arguments, or no tool call at all.
    """
    if getattr(reply, "invalid_tool_calls", None):
        bad = reply.invalid_tool_calls[0]
        raise LLMReplyError(f"malformed tool-call arguments for {bad.get('name')!r}")
    calls = list(getattr(reply, "tool_calls", None) or [])
    if not calls:
        raise LLMReplyError("the reply made no tool call")
    return reply, calls
