"""Helpers for driving `roofline-lsp serve` through pytest-lsp's real client over stdio.

Also used by ``benchmarks/lsp_latency.py``. The client records every publishDiagnostics with
its version, answers ``window/showMessageRequest`` with a scripted choice, and counts
inlay-hint / code-lens refresh requests. :class:`RawServer` drives a server by hand, with
nothing between the ``exit`` notification and the process's end (exit tests, timing).
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "lsp"
SERVER_COMMAND = [sys.executable, "-m", "roofline_lsp", "serve"]


class RecordingClient(LanguageClient):
    """pytest-lsp's client plus what these tests need to observe."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.published: list[lsp.PublishDiagnosticsParams] = []
        self.diagnostics_event = asyncio.Event()
        self.message_request_answer: str | None = None
        self.message_requests: list[lsp.ShowMessageRequestParams] = []
        self.refreshes: dict[str, int] = {"inlayHint": 0, "codeLens": 0}


def _publish(client: RecordingClient, params: lsp.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)
    client.diagnostics_event.set()


def _message_request(
    client: RecordingClient, params: lsp.ShowMessageRequestParams
) -> lsp.MessageActionItem | None:
    client.message_requests.append(params)
    if client.message_request_answer is None:
        return None
    return lsp.MessageActionItem(title=client.message_request_answer)


def _inlay_refresh(client: RecordingClient, params: None) -> None:
    client.refreshes["inlayHint"] += 1


def _lens_refresh(client: RecordingClient, params: None) -> None:
    client.refreshes["codeLens"] += 1


def make_client() -> RecordingClient:
    client = RecordingClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _publish
    features[lsp.WINDOW_SHOW_MESSAGE_REQUEST] = _message_request
    features[lsp.WORKSPACE_INLAY_HINT_REFRESH] = _inlay_refresh
    features[lsp.WORKSPACE_CODE_LENS_REFRESH] = _lens_refresh
    register_lsp_features(client, features)
    return client


def capabilities(*, configuration: bool = True) -> lsp.ClientCapabilities:
    """VS Code's capabilities, plus what a current client has (refresh, progress, config)."""
    caps = client_capabilities("visual-studio-code")
    ws = caps.workspace or lsp.WorkspaceClientCapabilities()
    ws.configuration = configuration
    ws.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    ws.code_lens = lsp.CodeLensWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace = ws
    td = caps.text_document or lsp.TextDocumentClientCapabilities()
    td.inlay_hint = lsp.InlayHintClientCapabilities(dynamic_registration=False)
    caps.text_document = td
    window = caps.window or lsp.WindowClientCapabilities()
    window.work_done_progress = True
    window.show_message = lsp.ShowMessageRequestClientCapabilities()
    caps.window = window
    caps.general = lsp.GeneralClientCapabilities(
        position_encodings=[lsp.PositionEncodingKind.Utf16]
    )
    return caps


async def initialize(
    client: RecordingClient,
    options: Any = None,
    *,
    configuration: bool = True,
    caps: lsp.ClientCapabilities | None = None,
) -> lsp.InitializeResult:
    return await client.initialize_session(
        lsp.InitializeParams(
            capabilities=caps or capabilities(configuration=configuration),
            initialization_options=options,
            root_uri=FIXTURES.as_uri(),
        )
    )


def uri_of(name: str) -> str:
    return (FIXTURES / name).as_uri()


def open_text(
    client: LanguageClient, uri: str, text: str, language: str = "cuda-cpp", version: int = 1
) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)
        )
    )


def open_fixture(client: LanguageClient, name: str, language: str = "cuda-cpp") -> tuple[str, str]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    uri = uri_of(name)
    open_text(client, uri, text, language)
    return uri, text


def change(
    client: LanguageClient,
    uri: str,
    version: int,
    start: tuple[int, int],
    end: tuple[int, int],
    text: str,
) -> None:
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(*start), lsp.Position(*end)), text=text
                )
            ],
        )
    )


async def diagnostics_for(
    client: RecordingClient,
    uri: str,
    version: int | None = None,
    timeout: float = 15.0,
    since: int = 0,
) -> list[lsp.Diagnostic]:
    """The first diagnostics published for ``uri`` at ``version`` (any version: None) among
    the publications from number ``since`` on (``len(client.published)`` before an action)."""
    deadline = time.monotonic() + timeout
    seen = since
    while True:
        for p in client.published[seen:]:
            if p.uri == uri and (version is None or p.version == version):
                return list(p.diagnostics)
        seen = len(client.published)
        client.diagnostics_event.clear()
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no diagnostics for {uri} version {version}")
        try:
            await asyncio.wait_for(client.diagnostics_event.wait(), left)
        except TimeoutError:
            continue


def utf16_col(line: str, index: int) -> int:
    """UTF-16 column of Python string index ``index`` in ``line``."""
    return len(line[:index].encode("utf-16-le")) // 2


def position_of(text: str, needle: str, nth: int = 0) -> lsp.Position:
    """The LSP (UTF-16) position of the ``nth`` occurrence of ``needle``."""
    idx = -1
    for _ in range(nth + 1):
        idx = text.index(needle, idx + 1)
    line = text.count("\n", 0, idx)
    line_start = text.rfind("\n", 0, idx) + 1
    return lsp.Position(line, utf16_col(text[line_start:], idx - line_start))


def apply_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP text edits (UTF-16 positions) the way an editor does."""
    lines = text.split("\n")

    def offset(p: lsp.Position) -> int:
        start = sum(len(x) + 1 for x in lines[: p.line])
        line = lines[p.line] if p.line < len(lines) else ""
        units = 0
        for i, ch in enumerate(line):
            if units >= p.character:
                return start + i
            units += 2 if ord(ch) > 0xFFFF else 1
        return start + len(line)

    spans = sorted(
        ((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True
    )
    for s, e, new in spans:
        text = text[:s] + new + text[e:]
    return text


def hover_text(h: lsp.Hover | None) -> str:
    assert h is not None, "no hover"
    contents = h.contents
    assert isinstance(contents, lsp.MarkupContent), contents
    return contents.value


class RawServer:
    """A language server on stdio driven by hand (no client library between the exit
    notification and the process's end): requests the server sends are answered null."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "method" in msg and "id" in msg:  # a request of the server's: answer null
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            else:
                self.inbox.put(msg)

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 120) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait_for(lambda m: m.get("id") == rid, timeout).get("result")

    def wait_for(self, pred: Any, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            msg = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            if pred(msg):
                return msg
