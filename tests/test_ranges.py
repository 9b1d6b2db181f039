"""lsp/ranges.py: LSP positions (UTF-16 / UTF-8 / UTF-32 columns) <-> byte offsets."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from roofline_lsp.engine.documents import Document
from roofline_lsp.lsp.ranges import byte_offset, byte_range, lsp_position, lsp_range

TEXT = "// ☕ 🚀\nint x;\n"


@pytest.mark.parametrize(("enc", "col"), [("utf-16", 7), ("utf-8", 11), ("utf-32", 6)])
def test_round_trip_after_non_ascii(enc: str, col: int) -> None:
    doc = Document("file:///t.cu", TEXT, 1, "cuda-cpp")
    end = len("// ☕ 🚀".encode())
    p = lsp_position(doc.lines, end, enc)  # type: ignore[arg-type]
    assert p == lsp.Position(0, col)
    assert byte_offset(doc, p, enc) == end  # type: ignore[arg-type]
    rng = lsp_range(doc.lines, 0, end, enc)  # type: ignore[arg-type]
    assert byte_range(doc, rng, enc) == (0, end)  # type: ignore[arg-type]
