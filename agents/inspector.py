"""The Inspector: conversational inspection of a campaign state folder.

With a model it runs a tool loop over the read-only tools of
``tools.explain.inspect`` (the model picks tools, reads their JSON, answers); offline, or
whenever the model fails, it answers from a small command vocabulary with the same tools.
Either way an answer carries the record ids it used (``sources``), collected from the tools
it called, so a citation never depends on the model remembering to give one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from structcover.agents.llm import LLMClient, LLMReplyError
from structcover.agents.llm_prompts import render
from structcover.tools.explain.inspect import inspector_tools, run_tool
from structcover.tools.explain.state import StateView

AGENT = "inspector"
HELP = """commands (offline vocabulary):
  why is bin BIN empty?      evidence for an empty or thin bin (also: why BIN, explain BIN)
  explain BIN for TASK       the same for one task
  program ID                 why a program is predicted fast or slow
  tasks                      tasks in memory
  axes                       the archive's axes and levels (how to write BIN)
  help                       this text;  quit  leaves"""
_WHY_BIN = re.compile(r"^(?:why\s+is\s+(?:bin\s+)?|why\s+(?:bin\s+)?|explain\s+(?:bin\s+)?)"
                      r"(?P<bin>[^?]+?)(?:\s+(?:empty|thin|so thin))?(?:\s+for\s+(?P<task>\S+))?"
                      r"\s*\??$", re.IGNORECASE)
_PROGRAM = re.compile(r"^(?:why\s+)?(?:is\s+)?program\s+(?P<id>[0-9a-f]+)", re.IGNORECASE)


@dataclass
class Answer:
    """One reply: the text, the records it used, and whether the model wrote it."""

    text: str
    sources: list[str] = field(default_factory=list)
    offline: bool = True
    note: str = ""

    def render(self) -> str:
        """Text, an offline note when it applies, and the ``Sources:`` line."""
        out = [self.text.rstrip()]
        if self.note:
            out.append(f"({self.note})")
        out.append("Sources: " + (", ".join(self.sources) if self.sources else "(none)"))
        return "\n".join(out)


class Inspector:
    """Answers questions about one state folder."""

    def __init__(self, view: StateView, client: LLMClient | None = None, turns: int = 5) -> None:
        self.view = view
        self.client = client
        self.turns = turns
        self.tools = inspector_tools(view)
        self.history: list[Any] = []

    def ask(self, question: str) -> Answer:
        """Answer ``question`` (with the model when there is one, else offline)."""
        if self.client is None:
            return self.offline(question)
        answer = self._with_model(question)
        if answer is not None:
            return answer
        off = self.offline(question)
        why = self.client.disabled or "the model gave no usable answer"
        off.note = f"offline answer: {why}"
        return off

    def offline(self, question: str) -> Answer:
        """The command vocabulary."""
        q = question.strip()
        low = q.lower()
        if low in ("help", "?", ""):
            return Answer(HELP)
        if low == "tasks":
            return self._tool_answer("list_tasks", {}, lambda d: "tasks: " + ", ".join(
                f"{t} ({n} programs)" for t, n in d["tasks"].items()) or "memory holds none")
        if low == "axes":
            return self._tool_answer("list_axes", {}, lambda d: "\n".join(
                f"{a}: {' | '.join(v)}" for a, v in d["axes"].items()))
        m = _PROGRAM.match(q)
        if m:
            return self._tool_answer("why_program", {"program": m.group("id")},
                                     lambda d: d["summary"])
        m = _WHY_BIN.match(q)
        if m:
            args = {"bin": m.group("bin").strip().strip("'\""), "task": m.group("task") or ""}
            return self._tool_answer("explain_bin", args, _explain_text)
        return Answer(f"I did not understand {q!r} offline.\n{HELP}")

    def _tool_answer(self, name: str, args: dict[str, Any], fmt: Any) -> Answer:
        text, sources = run_tool(self.tools, name, args)
        data = json.loads(text)
        if "error" in data:
            return Answer(f"error: {data['error']}", sources)
        return Answer(fmt(data), sources)

    def _with_model(self, question: str) -> Answer | None:
        from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

        assert self.client is not None
        if not self.history:
            self.history = [SystemMessage(render("inspector_system"))]
        messages = [*self.history, HumanMessage(question)]
        model = self.client.model.bind_tools(self.tools)
        sources: list[str] = []
        for _ in range(self.turns):
            reply = self.client.call(AGENT, messages, _reply, model=model)
            if reply is None:
                return None
            messages.append(reply)
            if not reply.tool_calls:
                self.history = messages
                text = str(reply.content)
                # The model's own "Sources:" line is replaced by the records really used.
                text = re.split(r"(?im)^\s*sources:", text)[0].rstrip()
                return Answer(text, list(dict.fromkeys(sources)), offline=False)
            for call in reply.tool_calls:
                out, used = run_tool(self.tools, call["name"], dict(call["args"]))
                sources += used
                messages.append(ToolMessage(out, tool_call_id=call["id"]))
        self.client.fallback(AGENT, f"no answer within {self.turns} tool turns")
        return None


def _reply(reply: Any) -> Any:
    if getattr(reply, "invalid_tool_calls", None):
        raise LLMReplyError("malformed tool-call arguments for "
                            f"{reply.invalid_tool_calls[0].get('name')!r}")
    if not reply.tool_calls and not str(reply.content).strip():
        raise LLMReplyError("empty reply")
    return reply


def _explain_text(d: dict[str, Any]) -> str:
    if not d["tasks"]:
        return (f"{d['query']}: memory knows no task, so nothing was ever targeted "
                f"({d['bins']} archive bins)")
    lines = [f"{d['query']} ({d['bins']} archive bin(s)):"]
    for t in d["tasks"]:
        lines.append(f"- [{t['verdict']}] {t['summary']}")
        for e in t["examples"]:
            where = f", landed in {e['landed_bin']}" if e["landed_bin"] else ""
            lines.append(f"    {e['stage']}: {e['reason'][:140]} "
                         f"(candidate {e['candidate_id'][:12]}{where})")
    return "\n".join(lines)
