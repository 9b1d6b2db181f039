"""LSP positions and ranges <-> byte offsets, in one place.

The engine counts bytes; the client counts characters in the negotiated encoding (UTF-16
code units unless it chose UTF-8 or UTF-32). Every handler converts through these helpers,
which use the document's :class:`~roofline_lsp.syntax.positions.LineIndex`.
"""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.engine.documents import Document
from roofline_lsp.syntax.positions import Encoding, LineIndex


def line_character(p: lsp.Position) -> tuple[int, int]:
    """An LSP position as a (line, character) pair, negative values clamped to 0."""
    return (max(0, p.line), max(0, p.character))


def byte_offset(doc: Document, p: lsp.Position, enc: Encoding) -> int:
    """The byte offset of an LSP position in ``doc`` (the inverse of :func:`lsp_position`)."""
    return doc.offset_at(line_character(p), enc)


def byte_range(doc: Document, rng: lsp.Range, enc: Encoding) -> tuple[int, int]:
    """The byte offsets of an LSP range in ``doc`` (the inverse of :func:`lsp_range`)."""
    return byte_offset(doc, rng.start, enc), byte_offset(doc, rng.end, enc)


def lsp_position(lines: LineIndex, offset: int, enc: Encoding) -> lsp.Position:
    """The LSP position of the byte ``offset``."""
    return lsp.Position(*lines.position_at(offset, enc))


def lsp_range(lines: LineIndex, start: int, end: int, enc: Encoding) -> lsp.Range:
    """The LSP range of the bytes ``start..end``."""
    return lsp.Range(lsp_position(lines, start, enc), lsp_position(lines, end, enc))
