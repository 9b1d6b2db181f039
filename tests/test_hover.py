"""lsp/hover.py against the engine, without a client."""

from __future__ import annotations

from lsp_helpers import doc_id, open_analysed, position_of
from lsprotocol import types as lsp

from roofline_lsp.engine.documents import Change
from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.lsp.hover import hover_card


def _text(h: lsp.Hover | None) -> str:
    assert h is not None and isinstance(h.contents, lsp.MarkupContent)
    return h.contents.value


def test_hover_on_name_has_a_utf16_range() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    name = position_of(text, "scale_add(")
    h = hover_card(ws, lsp.HoverParams(doc_id(uri), name), "utf-16")
    card = _text(h)
    assert "`scale_add`" in card and "bandwidth-bound" in card and "H100" in card
    assert h is not None and h.range == lsp.Range(
        name, lsp.Position(name.line, name.character + len("scale_add"))
    )


def test_hover_in_body_is_one_line_about_that_line() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    at = position_of(text, "y[i] = a * (x[i]")
    body = _text(hover_card(ws, lsp.HoverParams(doc_id(uri), at), "utf-16"))
    # the line that loads x and y and stores y moves every DRAM byte of scale_add
    assert body.strip() == body.strip().splitlines()[0], body
    assert body.startswith(f"line {at.line + 1}: 100% of DRAM bytes"), body
    assert "FLOPs" in body and "integer ops" in body
    # the thread-index line moves no DRAM byte: its share is said, not the card
    idx = position_of(text, "int i = blockIdx.x")
    line = _text(hover_card(ws, lsp.HoverParams(doc_id(uri), idx), "utf-16"))
    assert line.startswith(f"line {idx.line + 1}: ") and "0% of DRAM bytes" in line, line
    assert "bandwidth-bound" not in body + line


def test_hover_on_launch_and_outside() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    launch = hover_card(
        ws, lsp.HoverParams(doc_id(uri), position_of(text, "square_all<<<")), "utf-16"
    )
    card = _text(launch)
    assert card.startswith("`square_all`: **") and "line 11" in card, card
    assert launch is not None and launch.range is None
    sync = position_of(text, "cudaDeviceSynchronize")
    assert hover_card(ws, lsp.HoverParams(doc_id(uri), sync), "utf-16") is None


def test_card_fits_and_plaintext_has_no_markdown() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    name = position_of(text, "scale_add(")
    for plain in (False, True):
        h = hover_card(ws, lsp.HoverParams(doc_id(uri), name), "utf-16", plain)
        card = _text(h)
        lines = card.rstrip("\n").split("\n")
        assert len(lines) <= 12 and max(map(len, lines)) <= 100, card
        assert "bandwidth-bound" in lines[0] and "scale_add" in lines[0]
        assert h is not None and isinstance(h.contents, lsp.MarkupContent)
        if plain:
            assert h.contents.kind == lsp.MarkupKind.PlainText
            assert not any(m in card for m in ("**", "`", "|", "---")), card
            # the AI table as aligned columns: every row's ridge ends in the same column
            rows = [ln for ln in lines if ln.startswith("  ")]
            end = rows[0].index("(ops/byte)") + len("(ops/byte)")
            assert len(rows) >= 3 and all(r[end - 1] != " " and r[end] == " " for r in rows)
        else:
            assert h.contents.kind == lsp.MarkupKind.Markdown and "| precision |" in card


def test_hover_utf8_columns_differ_after_an_emoji() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    line = text.splitlines()[position_of(text, "scale_add(").line]
    assert "🚀" in line  # the emoji: 2 UTF-16 units, 4 bytes
    col8 = len(line[: line.index("scale_add(")].encode())
    p = lsp.Position(position_of(text, "scale_add(").line, col8)
    h = hover_card(ws, lsp.HoverParams(doc_id(uri), p), "utf-8")
    assert h is not None and h.range is not None and h.range.start == p


def test_hover_follows_edits_made_after_the_analysis() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    doc = ws.documents[uri]
    doc.apply([Change("\n\n\n", ((0, 0), (0, 0)))], 2)  # three lines before everything
    name = position_of(text, "scale_add(")
    moved = lsp.Position(name.line + 3, name.character)
    h = hover_card(ws, lsp.HoverParams(doc_id(uri), moved), "utf-16")
    assert "`scale_add`" in _text(h) and h is not None and h.range is not None
    assert h.range.start == moved


def test_no_hover_for_unknown_or_kernel_free_documents() -> None:
    ws = Workspace()
    assert (
        hover_card(ws, lsp.HoverParams(doc_id("file:///nope.cu"), lsp.Position(0, 0)), "utf-16")
        is None
    )
    uri, _ = open_analysed(ws, "no_kernels.cpp", language="cpp")
    assert hover_card(ws, lsp.HoverParams(doc_id(uri), lsp.Position(0, 0)), "utf-16") is None
