"""textDocument/inlayHint: the verdict after each kernel's signature (or pragma line)."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace, current_offset
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import byte_range, lsp_position
from roofline_lsp.present.markdown import hover_markdown, inlay_label
from roofline_lsp.syntax.positions import Encoding


def verdict_hints(ws: Workspace, params: lsp.InlayHintParams, enc: Encoding) -> list[lsp.InlayHint]:
    """One hint per analysed kernel whose hint position is inside ``params.range``."""
    found = ws.current(params.text_document.uri)
    if found is None:
        return []
    doc, a = found
    lo, hi = byte_range(doc, params.range, enc)
    out = []
    for p in a.places:
        at = current_offset(doc, a, p.hint_at)
        if not lo <= at <= hi:
            continue
        out.append(
            lsp.InlayHint(
                position=lsp_position(doc.lines, at, enc),
                label=inlay_label(p.kr.verdict),
                padding_left=True,
                tooltip=lsp.MarkupContent(
                    kind=lsp.MarkupKind.Markdown, value=hover_markdown(p.kr, a.advice)
                ),
            )
        )
    return out


@guard(list)
def inlay_hints(ls: RooflineServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    return verdict_hints(ls.ws, params, ls.encoding)
