"""textDocument/inlayHint: the verdict after each kernel's signature (or pragma line)."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace, current_offset
from roofline_lsp.lsp.hover import prefers_plaintext
from roofline_lsp.lsp.language_server import RooflineServer, guard
from roofline_lsp.lsp.ranges import byte_range, lsp_position
from roofline_lsp.present.hover_card import kernel_card
from roofline_lsp.present.markdown import inlay_label
from roofline_lsp.syntax.positions import Encoding


def verdict_hints(
    ws: Workspace, params: lsp.InlayHintParams, enc: Encoding, plain: bool = False
) -> list[lsp.InlayHint]:
    """One hint per analysed kernel whose hint position is inside ``params.range``; its
    tooltip is the kernel's short card."""
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
                    kind=lsp.MarkupKind.PlainText if plain else lsp.MarkupKind.Markdown,
                    value=kernel_card(p.kr, a.advice, plain=plain),
                ),
            )
        )
    return out


@guard(list)
async def inlay_hints(ls: RooflineServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    # right after didOpen: answer from the first analysis rather than with nothing
    await ls.scheduler.first_analysis(params.text_document.uri)
    return verdict_hints(ls.ws, params, ls.encoding, prefers_plaintext(ls))
