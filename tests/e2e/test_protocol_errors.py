"""Client mistakes over a real stdio pipe: each gets an answer (or a clean end) as the
specification says, one log line, and no traceback on stderr.

A raw JSON-RPC client (bytes on `roofline-lsp serve`'s stdin) so that it can send what a
client library refuses to: wrongly typed params, broken framing, lifecycle mistakes.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from roofline_lsp.lsp.framing import frame, read_frame

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lsp" / "kernels.cu"
URI = FIXTURE.as_uri()
WAIT_S = 30.0  # generous: the suite runs on a shared machine


class Raw:
    """`roofline-lsp serve` on pipes, read by a thread: answers by id, stderr kept."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "roofline_lsp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._out, daemon=True).start()
        self._err_reader = threading.Thread(target=self._err, daemon=True)
        self._err_reader.start()

    def _out(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            body = read_frame(out)
            if body is None:
                return
            msg = json.loads(body)
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "method" not in msg:
                self.answers.put(msg)

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: object) -> None:
        self.raw(frame(json.dumps(msg).encode()))

    def request(self, rid: object, method: str, params: object = None) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def answer(self, rid: object, timeout: float = WAIT_S) -> dict[str, Any]:
        """The answer with id ``rid`` (answers to other ids are dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no answer to {rid!r}; stderr: {''.join(self.stderr)}")
            try:
                msg = self.answers.get(timeout=left)
            except queue.Empty:
                continue
            if msg.get("id") == rid:
                return msg

    def initialize(self) -> None:
        self.request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert "result" in self.answer(0)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def open_fixture(self) -> None:
        item = {"uri": URI, "languageId": "cuda-cpp", "version": 1, "text": FIXTURE.read_text()}
        self.send(
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}
        )

    def ping(self, rid: object) -> dict[str, Any]:
        """A well-formed request: the reader is (again) in step with the stream."""
        self.request(rid, "workspace/executeCommand", {"command": "roofline.listGpus"})
        return self.answer(rid)

    def close(self) -> int:
        """Shut the server down; its stderr is read to the end when this returns (the log
        line of a request answered earlier may still be in the pipe until then)."""
        if self.proc.poll() is None:
            self.request("end", "shutdown")
            self.answer("end")
            self.send({"jsonrpc": "2.0", "method": "exit"})
        code = self.proc.wait(WAIT_S)
        self._err_reader.join(WAIT_S)
        return code

    def tracebacks(self) -> int:
        return sum("Traceback" in line for line in self.stderr)


@pytest.fixture
def server() -> Any:
    s = Raw()
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()


def error_code(msg: dict[str, Any]) -> int | None:
    err = msg.get("error")
    return err.get("code") if isinstance(err, dict) else None


DOC = {"uri": URI}
POS0 = {"line": 0, "character": 0}
BAD_PARAMS = {
    "hover position line a string": (
        "textDocument/hover",
        {"textDocument": DOC, "position": {"line": "a", "character": 0}},
    ),
    "hover negative position": (
        "textDocument/hover",
        {"textDocument": DOC, "position": {"line": -1, "character": -5}},
    ),
    "hover float position": (
        "textDocument/hover",
        {"textDocument": DOC, "position": {"line": 1.5, "character": 0}},
    ),
    "hover position 2^64": (
        "textDocument/hover",
        {"textDocument": DOC, "position": {"line": 2**64, "character": 0}},
    ),
    "hover params an array": ("textDocument/hover", [1, 2]),
    "hover params null": ("textDocument/hover", None),
    "inlayHint null range": ("textDocument/inlayHint", {"textDocument": DOC, "range": None}),
    "codeLens null textDocument": ("textDocument/codeLens", {"textDocument": None}),
    "codeAction string context": (
        "textDocument/codeAction",
        {"textDocument": DOC, "range": {"start": POS0, "end": POS0}, "context": "x"},
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMS))
def test_wrongly_typed_params_are_answered_invalid_params(server: Raw, case: str) -> None:
    method, params = BAD_PARAMS[case]
    server.initialize()
    server.open_fixture()
    server.request(1, method, params)
    assert error_code(server.answer(1)) == -32602
    assert "result" in server.ping(2)  # still serving
    assert server.close() == 0
    assert server.tracebacks() == 0


def test_request_before_initialize_is_server_not_initialized(server: Raw) -> None:
    server.request(1, "textDocument/hover", {"textDocument": DOC, "position": POS0})
    assert error_code(server.answer(1)) == -32002
    server.initialize()
    assert "result" in server.ping(2)
    assert server.close() == 0


def test_second_initialize_is_refused(server: Raw) -> None:
    server.initialize()
    server.request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert error_code(server.answer(1)) == -32600
    assert "result" in server.ping(2)
    assert server.close() == 0


def test_request_after_shutdown_is_invalid_request(server: Raw) -> None:
    server.initialize()
    server.request(1, "shutdown")
    assert server.answer(1).get("result", "missing") is None
    server.request(2, "textDocument/hover", {"textDocument": DOC, "position": POS0})
    assert error_code(server.answer(2)) == -32600
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(WAIT_S) == 0


def test_exit_without_shutdown_exits_1(server: Raw) -> None:
    server.initialize()
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(WAIT_S) == 1


def test_body_that_is_not_json_is_logged_and_skipped(server: Raw) -> None:
    """No id to answer (an error with a null id breaks some clients' readers): one log line."""
    server.initialize()
    server.raw(b"Content-Length: 9\r\n\r\n{not json")
    assert "result" in server.ping(1)
    assert server.close() == 0
    assert sum("not JSON" in line for line in server.stderr) == 1
    assert server.tracebacks() == 0


def framed(msg: object) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def ping_bytes(rid: int) -> bytes:
    return framed(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "workspace/executeCommand",
            "params": {"command": "roofline.listGpus"},
        }
    )


def framing_case(server: Raw, data: bytes) -> None:
    """``data`` (a broken message) then well-formed requests: one of them is answered, one
    framing line is logged, no traceback."""
    server.initialize()
    server.raw(data + ping_bytes(1))
    time.sleep(0.1)
    server.raw(ping_bytes(2))
    assert "result" in server.answer(2)
    assert server.close() == 0
    assert server.tracebacks() == 0
    assert not any("MemoryError" in line for line in server.stderr)
    assert sum("framing" in line or "not JSON" in line for line in server.stderr) >= 1


def test_content_length_too_short(server: Raw) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}).encode()
    framing_case(server, b"Content-Length: %d\r\n\r\n%s" % (len(body) - 10, body))


def test_content_length_too_long(server: Raw) -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "$/nothing"}).encode()
    framing_case(server, b"Content-Length: %d\r\n\r\n%s" % (len(body) + 50, body))


def test_content_length_too_long_then_silence_is_still_answered(server: Raw) -> None:
    """The client sends one request whose header over-counts, then waits: the server takes
    the body as it is after a short wait and answers it."""
    server.initialize()
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "shutdown"}).encode()
    server.raw(b"Content-Length: %d\r\n\r\n%s" % (len(body) + 40, body))
    assert server.answer(5).get("result", "missing") is None
    server.send({"jsonrpc": "2.0", "method": "exit"})
    assert server.proc.wait(WAIT_S) == 0


def test_content_length_not_a_number(server: Raw) -> None:
    framing_case(server, b"Content-Length: twelve\r\n\r\n{}")


def test_content_length_missing(server: Raw) -> None:
    framing_case(server, b"Content-Type: application/json\r\n\r\n{}\r\n")


def test_content_length_huge_is_refused_before_allocating(server: Raw) -> None:
    framing_case(server, b"Content-Length: 1000000000000\r\n\r\n{}\r\n")


def test_end_of_input_ends_the_server(server: Raw) -> None:
    server.initialize()
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(WAIT_S) in (0, 1)


def test_explain_without_a_kernel_is_invalid_params_without_traceback(server: Raw) -> None:
    server.initialize()
    server.open_fixture()
    lines = FIXTURE.read_text().count("\n")
    for rid, line in ((1, lines + 5), (2, -2)):
        server.request(
            rid,
            "workspace/executeCommand",
            {"command": "roofline.explainKernel", "arguments": [URI, line]},
        )
        answer = server.answer(rid)
        assert error_code(answer) == -32602, answer
        assert "line -1" not in answer["error"]["message"]
    assert server.close() == 0
    assert server.tracebacks() == 0
