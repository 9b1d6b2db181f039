"""textDocument/didOpen, didChange, didClose: the server's own documents (bytes + tree)."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.documents import Change
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import line_character


def changes_of(params: lsp.DidChangeTextDocumentParams) -> list[Change]:
    """The edits of a didChange, positions as (line, character) pairs."""
    changes = []
    for c in params.content_changes:
        rng = getattr(c, "range", None)
        if rng is None:
            changes.append(Change(c.text))
        else:
            changes.append(Change(c.text, (line_character(rng.start), line_character(rng.end))))
    return changes


@guard(lambda: None)
def did_open(ls: RooflineServer, params: lsp.DidOpenTextDocumentParams) -> None:
    td = params.text_document
    ls.scheduler.open(td.uri, td.text, td.version, td.language_id)


@guard(lambda: None)
def did_change(ls: RooflineServer, params: lsp.DidChangeTextDocumentParams) -> None:
    td = params.text_document
    if td.uri not in ls.ws.documents:
        return
    ls.scheduler.change(td.uri, changes_of(params), td.version, ls.encoding)


@guard(lambda: None)
def did_close(ls: RooflineServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.scheduler.close(uri)
    ls.unpublish(uri)
