"""The real ``ChatOpenAI`` client (through ``agents.llm``) against the fake OpenAI-compatible
server: replies with usage, tool calls, streaming, a 500, a timeout, malformed tool-call
arguments, an over-long reply and a dead server, none of which may raise."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from structcover.agents.llm import MAX_REPLY_CHARS, LLMClient, LLMConfig, fallback_lines
from structcover.agents.llm_diagnoser import _tool_calls
from structcover.agents.llm_synthesizer import extract_cuda


def _load_server():  # type: ignore[no-untyped-def]
    if "openai_server" not in sys.modules:
        path = Path(__file__).parents[1] / "fakes" / "openai_server.py"
        spec = importlib.util.spec_from_file_location("openai_server", path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules["openai_server"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["openai_server"]


srv = _load_server()
CODE = "```cuda\n__global__ void k(float* y) { y[0] = 1.f; }\n```"


def _client(url: str, timeout: float = 5.0) -> LLMClient:
    return LLMClient.connect(LLMConfig(base_url=url, model="policy", timeout_s=timeout,
                                       max_retries=0))


def _ask(client: LLMClient, parse=extract_cuda):  # type: ignore[no-untyped-def]
    from langchain_core.messages import HumanMessage

    return client.call("synthesizer", [HumanMessage("write it")], parse)


def test_reply_parsed_with_usage_and_latency() -> None:
    with srv.FakeOpenAI([srv.Reply(content="here:\n" + CODE)]) as server:
        client = _client(server.url)
        out = _ask(client)
    assert out is not None and out.startswith("__global__ void k")
    u = client.summary()["agents"]["synthesizer"]
    assert u["calls"] == 1 and u["ok"] == 1 and u["fallbacks"] == 0
    assert u["input_tokens"] > 0 and u["output_tokens"] > 0 and u["latency_s"] > 0
    assert server.requests[0]["model"] == "policy"


def test_tool_calls_and_malformed_arguments() -> None:
    good = srv.Reply(tool_calls=[("choose_targets", {"keys": ["G2"], "rationale": "r"})])
    bad = srv.Reply(tool_calls=[("choose_targets", '{"keys": ["G2", ')])
    with srv.FakeOpenAI([good, bad]) as server:
        client = _client(server.url)
        first = _ask(client, parse=_tool_calls)
        second = _ask(client, parse=_tool_calls)
    assert first is not None and first[1][0]["args"] == {"keys": ["G2"], "rationale": "r"}
    assert second is None
    reasons = client.summary()["agents"]["synthesizer"]["reasons"]
    assert any("malformed tool-call arguments" in r for r in reasons)


def test_streaming_reply() -> None:
    from langchain_core.messages import HumanMessage

    text = "a streamed answer in several chunks"
    with srv.FakeOpenAI([srv.Reply(content=text)]) as server:
        chunks = list(_client(server.url).model.stream([HumanMessage("hi")]))
        assert server.requests[0]["stream"] is True
    assert len(chunks) >= len(text.split()) and "".join(c.content for c in chunks) == text


def test_500_timeout_overlong_and_no_code_fall_back() -> None:
    # Transport failures are not consecutive here, so the breaker stays closed.
    replies = [srv.Reply(status=500), srv.Reply(content="x" * (MAX_REPLY_CHARS + 1)),
               srv.Reply(content=CODE, delay_s=2.0), srv.Reply(content="no code"),
               srv.Reply(content=CODE)]
    with srv.FakeOpenAI(replies) as server:
        client = _client(server.url, timeout=0.5)
        outs = [_ask(client) for _ in range(5)]
    assert outs[:4] == [None] * 4 and outs[4] is not None
    reasons = client.summary()["agents"]["synthesizer"]["reasons"]
    assert set(reasons) == {"HTTP 500", "timeout", "unusable reply: over-long reply "
                            f"({MAX_REPLY_CHARS + 1} > {MAX_REPLY_CHARS} chars)",
                            "unusable reply: no ```cuda code block in the reply"}
    assert not client.disabled


def test_dead_server_trips_the_breaker_quickly() -> None:
    client = _client(srv.closed_port_url())
    start = time.monotonic()
    outs = [_ask(client) for _ in range(5)]
    assert outs == [None] * 5 and time.monotonic() - start < 10
    s = client.summary()
    assert s["agents"]["synthesizer"]["calls"] == 2  # then switched off, no more requests
    assert "connection failed" in s["disabled"]
    lines = fallback_lines(s)
    assert any("switched off" in ln for ln in lines)
    assert any("5 of 5 decisions fell back" in ln for ln in lines)


def test_bad_url_is_refused() -> None:
    from structcover.agents.llm import resolve_config
    from structcover.config import Settings

    with pytest.raises(ValueError, match="expected an http"):
        resolve_config("localhost:8000", settings=Settings())
    assert resolve_config(None, settings=Settings()) is None


def test_settings_file_and_key_from_the_environment(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from structcover.agents.llm import resolve_config
    from structcover.config import load_settings

    with srv.FakeOpenAI([srv.Reply(content=CODE)]) as server:
        cfg = tmp_path / "settings.yaml"
        cfg.write_text(f"llm:\n  base_url: {server.url}\n  model: from-file\n"
                       "  timeout_s: 5\n  max_retries: 0\n")
        monkeypatch.setenv("STRUCTCOVER_CONFIG", str(cfg))
        monkeypatch.setenv("STRUCTCOVER_LLM_API_KEY", "sk-test-123")
        config = resolve_config(None, settings=load_settings())
        assert config is not None and config.model == "from-file"
        assert _ask(LLMClient.connect(config)) is not None
        assert server.headers[0]["authorization"] == "Bearer sk-test-123"
        assert server.requests[0]["model"] == "from-file"
        # the command line wins over the file
        assert resolve_config("http://h:1/v1", "cli", settings=load_settings()).model == "cli"
    cfg.write_text("llm:\n  api_key: sk-in-a-file\n")
    with pytest.raises(ValueError, match="must come from the environment"):
        load_settings()
