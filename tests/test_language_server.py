"""lsp/language_server.py's protocol without a client: every request answered, nothing kept
per message. (Over a real pipe: tests/e2e/test_protocol_errors.py.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from roofline_lsp.lsp.language_server import position_problem
from roofline_lsp.lsp.server import create_server


class Sink:
    """A writer keeping what the server sends."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


def started() -> tuple[Any, Sink]:
    server = create_server()
    sink = Sink()
    server.protocol.set_writer(sink)
    return server.rprotocol, sink


def send(protocol: Any, msg: dict[str, Any]) -> None:
    protocol.receive(json.dumps({"jsonrpc": "2.0", **msg}).encode())


def answer(sink: Sink, rid: object) -> dict[str, Any]:
    return next(m for m in sink.sent if m.get("id") == rid and "method" not in m)


def test_position_problem() -> None:
    ok = {"textDocument": {"uri": "u"}, "position": {"line": 3, "character": 0}}
    assert position_problem(ok) is None
    for bad in (-1, 1.5, "a", 2**64, None, True):
        params = {
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": bad, "character": 1}}
        }
        assert position_problem(params) is not None, bad
    assert position_problem([1, 2]) is None  # not a position: the params' type decides


async def test_lifecycle_and_bad_params_are_answered() -> None:
    protocol, sink = started()
    hover = {"textDocument": {"uri": "file:///a.cu"}, "position": {"line": 0, "character": 0}}
    send(protocol, {"id": 1, "method": "textDocument/hover", "params": hover})
    assert answer(sink, 1)["error"]["code"] == -32002
    send(protocol, {"id": 2, "method": "initialize", "params": {"capabilities": {}}})
    await asyncio.sleep(0.05)
    assert "result" in answer(sink, 2)
    send(protocol, {"id": 3, "method": "initialize", "params": {"capabilities": {}}})
    assert answer(sink, 3)["error"]["code"] == -32600
    send(protocol, {"id": 4, "method": "textDocument/hover", "params": [1, 2]})
    assert answer(sink, 4)["error"]["code"] == -32602
    send(
        protocol,
        {
            "id": 5,
            "method": "textDocument/hover",
            "params": {**hover, "position": {"line": -1, "character": 0}},
        },
    )
    assert answer(sink, 5)["error"]["code"] == -32602
    sent = len(sink.sent)
    protocol.receive(b"{oops")  # no id to answer: logged only
    assert len(sink.sent) == sent
    send(protocol, {"id": 6, "method": "shutdown"})
    await asyncio.sleep(0.05)
    assert answer(sink, 6).get("result", "missing") is None
    send(protocol, {"id": 7, "method": "textDocument/hover", "params": hover})
    assert answer(sink, 7)["error"]["code"] == -32600


async def test_nothing_is_kept_per_notification_or_command() -> None:
    protocol, _sink = started()
    send(protocol, {"id": 1, "method": "initialize", "params": {"capabilities": {}}})
    await asyncio.sleep(0.05)
    for i in range(50):
        change = {"textDocument": {"uri": "file:///a.cu", "version": i}, "contentChanges": []}
        send(protocol, {"method": "textDocument/didChange", "params": change})
        params = {"command": "roofline.listGpus", "arguments": []}
        send(protocol, {"id": 100 + i, "method": "workspace/executeCommand", "params": params})
    await asyncio.sleep(0.1)
    assert len(protocol._request_futures) == 0
