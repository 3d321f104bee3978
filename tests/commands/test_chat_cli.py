"""``structcover chat`` through its real terminal loop (a pty): offline it answers "why is bin
X empty?" from memory for a never-targeted bin, a bin with failed attempts and an infeasible
bin, citing records; with --llm the Inspector's tool calls go through the fake OpenAI server
and the answer cites the records the tools returned; a failing server falls back offline."""

from __future__ import annotations

import importlib.util
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
FAKES = Path(__file__).parents[1] / "fakes"


def _load(name: str):  # type: ignore[no-untyped-def]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FAKES / f"{name}.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


es = _load("explain_state")
srv = _load("openai_server")


class Terminal:
    """A command under a pseudo-terminal: send lines, wait for text."""

    def __init__(self, args: list[str]) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     close_fds=True)
        os.close(slave)
        self.seen = ""

    def expect(self, pattern: str, timeout: float = 90.0) -> str:
        """Read until ``pattern`` (a regex) appears after what was consumed; return the text
        read up to and including it."""
        end = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.seen)
            if m:
                out, self.seen = self.seen[:m.end()], self.seen[m.end():]
                return out
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {pattern!r}; got {self.seen!r}")
            ready, _, _ = select.select([self.master], [], [], min(left, 1.0))
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:
                    chunk = b""
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(f"exited {self.proc.returncode}: {self.seen!r}")
                self.seen += chunk.decode(errors="replace").replace("\r\n", "\n")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)


def _chat(state: Path, *extra: str) -> Terminal:
    return Terminal([sys.executable, "-c", "from structcover.cli import main; main()", "chat",
                     "--state", str(state), *extra])


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return es.build(tmp_path_factory.mktemp("chat"))


def test_offline_answers_why_is_bin_empty(state: Path) -> None:
    term = _chat(state)
    try:
        assert "offline (no --llm)" in term.expect(r"\n> ")
        term.send(f"why is bin {es.FAILED} empty?")
        out = term.expect(r"Sources: [^\n]*\n")
        assert "[failed-attempts]" in out and "targeted 3 time(s)" in out and "float5" in out
        assert f"gap:saxpy|{es.full(es.FAILED)}" in out
        term.expect(r"> ")
        term.send(f"why is bin {es.INFEASIBLE} empty?")
        out = term.expect(r"Sources: [^\n]*\n")
        assert "[infeasible]" in out and es.PROOF in out
        assert f"proof:saxpy|{es.full(es.INFEASIBLE)}" in out
        term.expect(r"> ")
        term.send(f"why {es.NEVER}")
        out = term.expect(r"Sources: [^\n]*\n")
        assert "[never-targeted]" in out and "never targeted" in out
        assert re.search(r"Sources: program:[0-9a-f]{20}", out)  # the nearest programs
        term.expect(r"> ")
        term.send("why is bin reuse=smem_tilling empty?")
        out = term.expect(r"Sources: [^\n]*\n")
        assert "did you mean 'smem_tiling'" in out
        term.expect(r"> ")
        term.send("quit")
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


def _inspector_server(body: dict) -> object:
    """First turn: call explain_bin on the failed bin; after the tool result: answer."""
    if any(m.get("role") == "tool" for m in body["messages"]):
        tool = next(m for m in body["messages"] if m.get("role") == "tool")
        assert "float5" in tool["content"]
        return srv.Reply(content="It was targeted three times: a compile error, a wrong "
                                 "result and a program that landed in the float4 bin.\n"
                                 "Sources: made-up-id")
    return srv.Reply(tool_calls=[("explain_bin", {"bin": es.FAILED, "task": "saxpy"})])


def test_llm_answer_cites_the_records_its_tools_used(state: Path) -> None:
    with srv.FakeOpenAI(_inspector_server) as server:
        term = _chat(state, "--llm", server.url, "--model", "policy")
        try:
            assert "Inspector on policy" in term.expect(r"\n> ")
            term.send("why is the float2 saxpy bin empty?")
            out = term.expect(r"Sources: [^\n]*\n")
            assert "targeted three times" in out and "made-up-id" not in out
            assert f"gap:saxpy|{es.full(es.FAILED)}" in out
            term.send("quit")
            assert term.close() == 0
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
    assert any(m.get("role") == "tool" for m in server.requests[-1]["messages"])
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} >= {
        "explain_bin", "gap_history", "why_program", "list_tasks"}


def test_failing_server_falls_back_offline(state: Path) -> None:
    with srv.FakeOpenAI([srv.Reply(status=500)]) as server:
        term = _chat(state, "--llm", server.url)
        try:
            term.expect(r"\n> ")
            term.send(f"why is bin {es.INFEASIBLE} empty?")
            out = term.expect(r"Sources: [^\n]*\n")
            assert "[infeasible]" in out and "offline answer" in out
            term.send("quit")
            assert term.close() == 0
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
