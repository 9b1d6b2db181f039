"""Helpers for driving `roofline-lsp serve` through pytest-lsp's real client over stdio.

Also used by ``benchmarks/lsp_latency.py``. The client records every publishDiagnostics with
its version, answers ``window/showMessageRequest`` with a scripted choice, and counts
inlay-hint / code-lens refresh requests.
"""

from __future__ import annotations

import asyncio
import sys
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
