"""textDocument/hover: on a kernel's name or pragma line, its short roofline card; on a
launch site, the launched kernel's; inside a kernel body, one line about that source line
(its share of the kernel's FLOPs, integer ops and DRAM bytes) or nothing. Markdown or plain
text as the client's ``hover.contentFormat`` prefers."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace, current_offset
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import byte_offset, lsp_range
from roofline_lsp.present.hover_card import kernel_card, line_text
from roofline_lsp.syntax.positions import Encoding


def hover_card(
    ws: Workspace, params: lsp.HoverParams, enc: Encoding, plain: bool = False
) -> lsp.Hover | None:
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
    kind = lsp.MarkupKind.PlainText if plain else lsp.MarkupKind.Markdown
    if is_launch:
        card = kernel_card(place.kr, a.advice, plain=plain, launch=True)
        return lsp.Hover(contents=lsp.MarkupContent(kind=kind, value=card))
    header_end = current_offset(doc, a, place.hint_at)
    if offset <= header_end or doc.lines.line_of(offset) == doc.lines.line_of(header_end):
        card = kernel_card(place.kr, a.advice, plain=plain)
        s, e = current_offset(doc, a, place.name_start), current_offset(doc, a, place.name_end)
        rng = lsp_range(doc.lines, s, e, enc) if s <= offset <= e else None
        return lsp.Hover(contents=lsp.MarkupContent(kind=kind, value=card), range=rng)
    # inside the body: the line of the analysed snapshot this offset maps back to
    if a.seq != doc.seq:
        return None  # edited since: the per-line counts are of another text (next analysis)
    line = a.lines.line_of(offset) + 1
    share = ws.line_share(a, place, line)
    if share is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=kind, value=line_text(share)))


def prefers_plaintext(ls: RooflineServer) -> bool:
    """Whether the client's ``hover.contentFormat`` puts plain text first (or lacks
    Markdown): Eglot without markdown-mode, some terminal clients."""
    try:
        hover = ls.client_capabilities.text_document.hover  # type: ignore[union-attr]
        formats = list(hover.content_format or [])  # type: ignore[union-attr]
    except Exception:
        return False
    if not formats:
        return False
    return formats[0] == lsp.MarkupKind.PlainText or lsp.MarkupKind.Markdown not in formats


@guard(lambda: None)
async def hover(ls: RooflineServer, params: lsp.HoverParams) -> lsp.Hover | None:
    await ls.scheduler.first_analysis(params.text_document.uri)
    return hover_card(ls.ws, params, ls.encoding, prefers_plaintext(ls))
