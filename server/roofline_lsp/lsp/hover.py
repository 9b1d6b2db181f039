"""textDocument/hover: the kernel's roofline card (or the launch's, on a launch site)."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace, current_offset
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import byte_offset, lsp_range
from roofline_lsp.present.markdown import hover_markdown, launch_hover_markdown
from roofline_lsp.syntax.positions import Encoding


def hover_card(ws: Workspace, params: lsp.HoverParams, enc: Encoding) -> lsp.Hover | None:
    """The hover at ``params.position``, from the document's last analysis."""
    found = ws.current(params.text_document.uri)
    if found is None:
        return None
    doc, a = found
    offset = byte_offset(doc, params.position, enc)
    hit = ws.place_at(doc, a, offset)
    if hit is None:
        return None
    place, is_launch = hit
    card = launch_hover_markdown(place.kr) if is_launch else hover_markdown(place.kr, a.advice)
    s, e = current_offset(doc, a, place.name_start), current_offset(doc, a, place.name_end)
    rng = None
    if not is_launch and s <= offset <= e:
        rng = lsp_range(doc.lines, s, e, enc)
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=card), range=rng
    )


@guard(lambda: None)
def hover(ls: RooflineServer, params: lsp.HoverParams) -> lsp.Hover | None:
    return hover_card(ls.ws, params, ls.encoding)
