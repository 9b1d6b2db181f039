"""A scriptable OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

Real HTTP (``http.server`` in a thread), so the real ``openai`` client talks to it::

    server = ChatServer().start()          # or the ``chat_server`` fixture (tests/conftest.py)
    server.script(
        Reply(status=429, headers={"Retry-After": "0"}),
        Reply(content=answer("compute", confidence=0.8)),
    )
    ... LlmConfig(base_url=server.base_url, ...) ...
    assert len(server.requests) == 2
    server.stop()

Each POST to ``.../chat/completions`` consumes the next scripted :class:`Reply`; when the
script is empty, ``server.responder(request)`` decides (default: HTTP 500 "no scripted
reply", so a test that sends more requests than it expects fails visibly). Every request is
recorded as a :class:`Request` (headers, parsed JSON body, the prompt text, and whether the
client hung up while the reply was delayed).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted response.

    ``content`` becomes ``choices[0].message.content`` of a well-formed completion; ``body``
    (str/bytes/dict) replaces the whole response body instead (error payloads, garbage);
    ``delay`` seconds pass before anything is sent (interrupted by ``stop()``).
    """

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: str | bytes | dict[str, Any] | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    finish_reason: str = "stop"


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    json: Any
    received_at: float
    disconnected: bool = False  # the client closed the connection during the reply's delay
    answered: bool = False  # a response was written completely
    finished_at: float | None = None  # when the reply started or the client left

    @property
    def messages(self) -> list[dict[str, Any]]:
        if isinstance(self.json, dict) and isinstance(self.json.get("messages"), list):
            return self.json["messages"]
        return []

    @property
    def prompt(self) -> str:
        """All message contents joined: what the model was shown."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)

    @property
    def user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


def answer(
    bound: str = "compute",
    confidence: float | None = 0.9,
    arithmetic_intensity: float | None = None,
    rationale: str = "scripted answer",
    suggestions: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> str:
    """The JSON text of a well-formed answer (message content)."""
    doc: dict[str, Any] = {"bound": bound, "rationale": rationale}
    if confidence is not None:
        doc["confidence"] = confidence
    doc["arithmetic_intensity"] = arithmetic_intensity
    doc["suggestions"] = suggestions or []
    doc.update(extra)
    return json.dumps(doc)


def completion_body(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _no_script(request: Request) -> Reply:
    return Reply(status=500, body={"error": {"message": "no scripted reply", "type": "test"}})


class ChatServer:
    def __init__(self, responder: Callable[[Request], Reply] | None = None) -> None:
        self.responder: Callable[[Request], Reply] = responder or _no_script
        self.requests: list[Request] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> ChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "test-model"}]}, {})
                else:
                    self._send(404, {"error": {"message": "not found"}}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    doc = json.loads(body) if body else None
                except ValueError:
                    doc = None
                req = Request(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    json=doc,
                    received_at=time.monotonic(),
                )
                with server._lock:
                    server.requests.append(req)
                    reply = server._script.popleft() if server._script else None
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}}, {})
                    return
                if reply is None:
                    reply = server.responder(req)
                if reply.delay > 0 and server._wait(self.connection, reply.delay):
                    req.disconnected = True
                    req.finished_at = time.monotonic()
                    self.close_connection = True
                    return
                if server._stopping.is_set():
                    self.close_connection = True
                    return
                model = doc.get("model", "test-model") if isinstance(doc, dict) else "test-model"
                payload: Any = (
                    reply.body if reply.body is not None else completion_body(reply, model)
                )
                req.finished_at = time.monotonic()  # before the client can see the reply
                with contextlib.suppress(OSError):
                    self._send(reply.status, payload, reply.headers)
                    req.answered = True

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                if isinstance(payload, dict | list):
                    data = json.dumps(payload).encode()
                    ctype = "application/json"
                else:
                    data = payload.encode() if isinstance(payload, str) else payload
                    ctype = "application/json"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up is not a test failure

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting ------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``) to give the client."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply | str) -> ChatServer:
        """Queue replies (a str is shorthand for ``Reply(content=...)``), consumed in order."""
        with self._lock:
            for r in replies:
                self._script.append(r if isinstance(r, Reply) else Reply(content=r))
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._script)

    def chat_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def max_concurrent(self) -> int:
        """The largest number of chat requests the server was handling at the same time."""
        events = []
        for r in self.chat_requests():
            events.append((r.received_at, 1))
            events.append((r.finished_at if r.finished_at is not None else float("inf"), -1))
        peak = cur = 0
        for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
            cur += delta
            peak = max(peak, cur)
        return peak

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._script.clear()

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        """Block (in a test thread, not an event loop) until ``n`` requests arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= n:
                    return True
            time.sleep(0.01)
        return False

    # -- internals ------------------------------------------------------------------------
    def _wait(self, conn: socket.socket, delay: float) -> bool:
        """Sleep ``delay`` seconds; True as soon as the client closes the connection."""
        deadline = time.monotonic() + delay
        while not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                readable, _, _ = select.select([conn], [], [], min(left, 0.02))
                if readable and conn.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except (OSError, ValueError):
                return True
        return False


async def await_requests(server: ChatServer, n: int, timeout: float = 5.0) -> bool:
    """``wait_for_requests`` for async tests: polls without blocking the event loop."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(server.requests) >= n:
            return True
        await asyncio.sleep(0.01)
    return False
