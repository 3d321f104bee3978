"""LLM access for the agents: one factory for langchain-openai's ``ChatOpenAI`` against any
OpenAI-compatible endpoint (``vllm serve`` of the policy checkpoint, or a hosted model), and
the bookkeeping every LLM policy shares: token usage, latency, fallbacks with their reasons.

Every LLM policy calls the model through :meth:`LLMClient.call`, which never raises: a
timeout, a dead server, a 5xx, a reply the policy cannot use (``LLMReplyError``) comes back
as ``None`` with the reason counted, and the policy falls back to its offline twin. After
``breaker`` consecutive transport failures (connection refused, timeouts) the client stops
calling for the rest of the run: a dead server would otherwise cost every target its retries
and back-off.

The key comes from the environment only (``STRUCTCOVER_LLM_API_KEY`` or ``OPENAI_API_KEY``);
URL, model, timeout and retries from the settings file (``llm:`` in the YAML that
``structcover.config.load_settings`` reads) or the command line.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: Longest reply any policy accepts (characters); longer ones are refused as over-long.
MAX_REPLY_CHARS = 60_000


class LLMReplyError(ValueError):
    """A reply the policy cannot use (no code block, malformed tool call, over-long)."""


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to reach the model."""

    base_url: str
    model: str = "default"
    timeout_s: float = 120.0
    max_retries: int = 2
    max_tokens: int = 4096
    temperature: float = 0.2
    breaker: int = 2


def resolve_config(url: str | None, model: str | None = None, *,
                   settings: Any = None) -> LLMConfig | None:
    """The endpoint from the command line, else the settings file; None when neither names
    one (the campaign then runs offline).

    Raises:
        ValueError: The URL is not http(s).
    """
    if settings is None:
        from structcover.config import load_settings

        settings = load_settings()
    s = settings.llm
    base = url or s.base_url
    if not base:
        return None
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"--llm {base!r}: expected an http(s) URL such as "
                         "http://127.0.0.1:8000/v1")
    return LLMConfig(base_url=base.rstrip("/"), model=model or s.model,
                     timeout_s=float(s.timeout_s), max_retries=int(s.max_retries))


def api_key() -> str:
    """The key from the environment; vLLM without ``--api-key`` accepts any value."""
    from structcover.config import load_settings

    key = load_settings().llm_api_key
    return key.get_secret_value() if key is not None else "EMPTY"


def make_chat_model(config: LLMConfig, **kwargs: Any) -> Any:
    """A ``ChatOpenAI`` for the endpoint (retries with exponential back-off are the OpenAI
    client's own, ``max_retries`` of them)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=config.base_url, api_key=api_key(),
                      model=config.model, timeout=config.timeout_s,
                      max_retries=config.max_retries, max_tokens=config.max_tokens,
                      temperature=config.temperature, **kwargs)


@dataclass
class AgentUsage:
    """One agent's LLM use over a run."""

    calls: int = 0
    ok: int = 0
    fallbacks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    reasons: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {"calls": self.calls, "ok": self.ok, "fallbacks": self.fallbacks,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "latency_s": round(self.latency_s, 3), "reasons": dict(self.reasons)}


@dataclass
class LLMClient:
    """A chat model plus per-agent usage, fallbacks and a circuit breaker (thread-safe: the
    campaign runs targets in parallel)."""

    model: Any
    config: LLMConfig
    usage: dict[str, AgentUsage] = field(default_factory=dict)
    disabled: str = ""
    notes: dict[str, list[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _transport_failures: int = 0

    @classmethod
    def connect(cls, config: LLMConfig) -> LLMClient:
        """A client for ``config`` (no request is made yet)."""
        return cls(make_chat_model(config), config)

    def agent(self, name: str) -> AgentUsage:
        """The usage record of agent ``name``."""
        with self._lock:
            return self.usage.setdefault(name, AgentUsage())

    def fallback(self, agent: str, reason: str) -> None:
        """Count one fallback to the offline policy."""
        with self._lock:
            u = self.usage.setdefault(agent, AgentUsage())
            u.fallbacks += 1
            u.reasons[reason] += 1

    def note(self, agent: str, text: str) -> None:
        """Keep one rationale the agent's model wrote (the summary shows the last few)."""
        with self._lock:
            self.notes.setdefault(agent, []).append(text)

    def call(self, agent: str, messages: list[Any], parse: Callable[[Any], T], *,
             model: Any = None) -> T | None:
        """Send ``messages``; ``parse`` turns the reply into what the policy needs (raising
        :class:`LLMReplyError` when it cannot). None (and a counted fallback) on any failure.
        """
        if self.disabled:
            self.fallback(agent, f"LLM disabled: {self.disabled}")
            return None
        u = self.agent(agent)
        start = time.monotonic()
        try:
            reply = (model or self.model).invoke(messages)
        except Exception as exc:  # noqa: BLE001 - any transport error means: go offline
            self._record(u, start, None)
            reason = _transport_reason(exc)
            self._transport_failure(reason)
            self.fallback(agent, reason)
            return None
        self._record(u, start, reply)
        with self._lock:
            self._transport_failures = 0
        try:
            text = reply.content if isinstance(reply.content, str) else str(reply.content)
            if len(text) > MAX_REPLY_CHARS:
                raise LLMReplyError(f"over-long reply ({len(text)} > {MAX_REPLY_CHARS} chars)")
            out = parse(reply)
        except (LLMReplyError, ValueError, KeyError, TypeError) as exc:
            self.fallback(agent, f"unusable reply: {str(exc)[:120]}")
            return None
        with self._lock:
            u.ok += 1
        return out

    def summary(self) -> dict[str, Any]:
        """Endpoint, model and per-agent usage as plain JSON."""
        with self._lock:
            return {"base_url": self.config.base_url, "model": self.config.model,
                    "disabled": self.disabled,
                    "agents": {k: v.as_dict() for k, v in sorted(self.usage.items())},
                    "rationales": {k: v[-3:] for k, v in sorted(self.notes.items())}}

    def _record(self, u: AgentUsage, start: float, reply: Any) -> None:
        meta = getattr(reply, "usage_metadata", None) or {}
        with self._lock:
            u.calls += 1
            u.latency_s += time.monotonic() - start
            u.input_tokens += int(meta.get("input_tokens", 0) or 0)
            u.output_tokens += int(meta.get("output_tokens", 0) or 0)

    def _transport_failure(self, reason: str) -> None:
        with self._lock:
            self._transport_failures += 1
            if self._transport_failures >= self.config.breaker and not self.disabled:
                self.disabled = (f"{self._transport_failures} consecutive failures, last: "
                                 f"{reason}")


def _transport_reason(exc: Exception) -> str:
    """A short, stable reason for a failed request (the class of failure, then detail)."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if "Timeout" in name:
        return "timeout"
    if "Connection" in name:
        return f"connection failed ({str(exc)[:80]})"
    if status is not None:
        return f"HTTP {status}"
    return f"{name}: {str(exc)[:80]}"


def fallback_lines(summary: dict[str, Any]) -> list[str]:
    """One summary line per agent that fell back, with counts and reasons."""
    out = []
    if summary.get("disabled"):
        out.append(f"LLM at {summary['base_url']} switched off: {summary['disabled']}")
    for agent, u in summary.get("agents", {}).items():
        if u["fallbacks"]:
            why = "; ".join(f"{r} x{n}" for r, n in sorted(u["reasons"].items()))
            out.append(f"{agent}: {u['fallbacks']} of {u['fallbacks'] + u['ok']} decisions "
                       f"fell back to the offline policy ({why})")
    return out
