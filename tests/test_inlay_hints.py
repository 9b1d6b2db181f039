"""lsp/inlay_hints.py against the engine, without a client."""

from __future__ import annotations

from lsp_helpers import doc_id, open_analysed, position_of, whole
from lsprotocol import types as lsp

from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.lsp.inlay_hints import verdict_hints


def test_one_hint_per_kernel_after_the_signature() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    hints = verdict_hints(ws, lsp.InlayHintParams(doc_id(uri), whole()), "utf-16")
    assert len(hints) == 2
    first = hints[0]
    assert isinstance(first.label, str)
    assert first.label.startswith("bandwidth-bound · fp64 AI") and len(first.label) <= 43
    name = position_of(text, "scale_add(")
    sig_line = text.splitlines()[name.line]
    close = sig_line.index(")") + 1
    assert first.position == lsp.Position(name.line, len(sig_line[:close].encode("utf-16-le")) // 2)
    assert first.padding_left is True
    assert isinstance(first.tooltip, lsp.MarkupContent)
    assert first.tooltip.value.startswith("`scale_add`: **bandwidth-bound")


def test_hints_outside_the_range_are_left_out() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    line = position_of(text, "scale_add(").line
    rng = lsp.Range(lsp.Position(line, 0), lsp.Position(line + 1, 0))
    hints = verdict_hints(ws, lsp.InlayHintParams(doc_id(uri), rng), "utf-16")
    assert [h.position.line for h in hints] == [line]


def test_offload_hint_at_the_end_of_the_pragma_line() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "offload.cpp", language="cpp")
    hints = verdict_hints(ws, lsp.InlayHintParams(doc_id(uri), whole()), "utf-16")
    assert hints
    lines = text.splitlines()
    for h in hints:
        assert lines[h.position.line].lstrip().startswith("#pragma")
        assert h.position.character == len(lines[h.position.line].encode("utf-16-le")) // 2


def test_no_hints_without_an_analysis() -> None:
    ws = Workspace()
    params = lsp.InlayHintParams(doc_id("file:///nope.cu"), whole())
    assert verdict_hints(ws, params, "utf-16") == []
