"""A small OpenAI-compatible chat-completions server for tests (stdlib ``http.server`` on
127.0.0.1, a free port): canned replies, tool calls, streaming (SSE), HTTP errors, slow
replies (for timeouts) and malformed tool-call arguments.

A reply is a :class:`Reply`; the server asks ``respond(request_body)`` for each request (or
pops the next of a list). Every request body is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One canned answer.

    Attributes:
        content: The assistant text.
        tool_calls: ``(name, arguments)`` pairs; ``arguments`` is sent verbatim when it is a
            string (so a test can send malformed JSON), else JSON-encoded.
        status: HTTP status; anything but 200 sends an OpenAI-style error body.
        delay_s: Seconds to wait before answering (a timeout test sets it above the
            client's timeout).
    """

    content: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    delay_s: float = 0.0


Responder = Callable[[dict[str, Any]], Reply]


class FakeOpenAI:
    """The server; use as a context manager, ``url`` is the ``/v1`` base URL."""

    def __init__(self, replies: list[Reply] | Responder) -> None:
        self._replies = replies
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # lower-case names
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = outer._next(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": "fake server error",
                                                        "type": "server_error"}})
                    return
                if body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._json(200, _completion(body, reply))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = reply.content.split(" ")
                for i, w in enumerate(words):
                    piece = w if i == 0 else " " + w
                    self._event({"id": "c1", "object": "chat.completion.chunk",
                                 "model": body.get("model", "fake"), "created": 0,
                                 "choices": [{"index": 0, "delta": {"content": piece},
                                              "finish_reason": None}]})
                self._event({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                             "model": body.get("model", "fake"),
                             "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                self.wfile.write(b"data: [DONE]\n\n")

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if callable(self._replies):
                return self._replies(body)
            if len(self._replies) > 1:
                return self._replies.pop(0)
            return self._replies[0]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name,
                          "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(reply.tool_calls)]
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4
    done = len(reply.content) // 4
    return {"id": "cmpl-1", "object": "chat.completion", "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": done,
                      "total_tokens": prompt + done}}


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a request."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def closed_port_url() -> str:
    """A base URL nobody listens on (a port bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
