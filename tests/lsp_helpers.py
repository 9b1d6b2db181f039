"""Handlers without a client: open a fixture in a Workspace, analyse it synchronously."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "lsp"


def open_analysed(
    ws: Workspace, name: str, text: str | None = None, language: str = "cuda-cpp"
) -> tuple[str, str]:
    """Open the fixture ``name`` (or ``text`` under its name), analyse and install it."""
    if text is None:
        text = (FIXTURES / name).read_text(encoding="utf-8")
    uri = (FIXTURES / name).as_uri()
    doc = ws.open_document(uri, text, 1, language)
    installed = ws.install(ws.analyse_snapshot(doc.snapshot()))
    assert installed is not None
    return uri, text


def position_of(text: str, needle: str, nth: int = 0) -> lsp.Position:
    """The LSP (UTF-16) position of the ``nth`` occurrence of ``needle``."""
    idx = -1
    for _ in range(nth + 1):
        idx = text.index(needle, idx + 1)
    line = text.count("\n", 0, idx)
    line_start = text.rfind("\n", 0, idx) + 1
    return lsp.Position(line, len(text[line_start:idx].encode("utf-16-le")) // 2)


def doc_id(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


def whole(lines: int = 10_000) -> lsp.Range:
    return lsp.Range(lsp.Position(0, 0), lsp.Position(lines, 0))
