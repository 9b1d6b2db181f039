"""Text positions: the one place that converts between LSP positions and byte offsets.

LSP positions are (line, character) where ``character`` counts UTF-16 code units by default
(or UTF-8 bytes / UTF-32 code points when the client and server agree on another position
encoding). tree-sitter and the analysis work on UTF-8 bytes: byte offsets and (row, byte
column) points whose rows count ``\\n`` only. LSP lines end at ``\\n``, ``\\r\\n`` or ``\\r``.

Decoding never loses data: bytes that are not valid UTF-8 decode to lone surrogates
(``surrogateescape``) and encode back to the same bytes. A lone surrogate that did not come
from such a byte (a client may send one in JSON) encodes as U+FFFD, which is one UTF-16 unit
like the surrogate it replaces, so columns stay consistent.

Pure: no LSP imports.
"""

from __future__ import annotations

import bisect
import codecs
import re
from dataclasses import dataclass
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]
ENCODINGS: tuple[str, ...] = ("utf-8", "utf-16", "utf-32")

_BREAK = re.compile(rb"\r\n|\r|\n")
_REPLACEMENT = "\ufffd".encode()


def _encode_error(exc: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):  # pragma: no cover - registered for encoding
        raise exc
    out = bytearray()
    for ch in exc.object[exc.start : exc.end]:
        code = ord(ch)
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else _REPLACEMENT
    return bytes(out), exc.end


codecs.register_error("roofline-text", _encode_error)


def decode(data: bytes) -> str:
    """Bytes as text; invalid UTF-8 bytes become lone surrogates that :func:`encode` restores."""
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    """Text as UTF-8 bytes (the inverse of :func:`decode`; other lone surrogates -> U+FFFD)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "roofline-text")


def units(text: str, encoding: Encoding = "utf-16") -> int:
    """Length of ``text`` in the code units of ``encoding``."""
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(encode(text))
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def byte_column(line: bytes, character: int, encoding: Encoding = "utf-16") -> int:
    """The byte column of LSP column ``character`` in ``line`` (the line's bytes without its
    line break). Past the end -> the line's length; inside a surrogate pair or a multi-byte
    character -> the start of that character."""
    if character <= 0:
        return 0
    if line.isascii():
        return min(character, len(line))
    if encoding == "utf-8":
        col = min(character, len(line))
        while 0 < col < len(line) and (line[col] & 0xC0) == 0x80:
            col -= 1  # not in the middle of a character
        return col
    text = decode(line)
    count = 0
    for i, ch in enumerate(text):
        width = 2 if encoding == "utf-16" and ord(ch) > 0xFFFF else 1
        if count + width > character:
            return len(encode(text[:i]))
        count += width
    return len(line)


def character_column(line: bytes, byte_col: int, encoding: Encoding = "utf-16") -> int:
    """The LSP column of byte column ``byte_col`` in ``line`` (clamped to the line)."""
    byte_col = max(0, min(byte_col, len(line)))
    if encoding == "utf-8" or line.isascii():
        return byte_col
    # not in the middle of a character: back up to its first byte
    while 0 < byte_col < len(line) and (line[byte_col] & 0xC0) == 0x80:
        byte_col -= 1
    return units(decode(line[:byte_col]), encoding)


@dataclass(frozen=True)
class LineIndex:
    """Where each LSP line starts in a byte string.

    ``starts[i]`` is the byte offset of line ``i``; built once per document version, or
    derived from the previous version with :meth:`edited` in time proportional to the edit.
    """

    data: bytes
    starts: tuple[int, ...]

    @classmethod
    def of(cls, data: bytes) -> LineIndex:
        return cls(data, (0, *(m.end() for m in _BREAK.finditer(data))))

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        """The 0-based line containing byte ``offset`` (clamped to the document)."""
        offset = max(0, min(offset, len(self.data)))
        return bisect.bisect_right(self.starts, offset) - 1

    def line_bytes(self, line: int) -> bytes:
        """The bytes of ``line`` without its line break."""
        start, end = self._bounds(line)
        return self.data[start:end]

    def _bounds(self, line: int) -> tuple[int, int]:
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.data)
        while end > start and self.data[end - 1 : end] in (b"\n", b"\r"):
            end -= 1
        return start, end

    def offset_at(self, line: int, character: int, encoding: Encoding = "utf-16") -> int:
        """Byte offset of an LSP position. A line past the end -> the end of the document; a
        character past the end of its line -> the end of that line (before the break)."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.data)
        start, end = self._bounds(line)
        return start + byte_column(self.data[start:end], character, encoding)

    def position_at(self, offset: int, encoding: Encoding = "utf-16") -> tuple[int, int]:
        """LSP (line, character) of byte ``offset`` (clamped; inside a line break -> the end
        of that line)."""
        line = self.line_of(offset)
        start, end = self._bounds(line)
        return line, character_column(self.data[start:end], offset - start, encoding)

    def edited(self, start: int, old_end: int, new_data: bytes) -> LineIndex:
        """The index of ``new_data``: this document with bytes ``[start, old_end)`` replaced.

        Re-scans only the lines around the edit: a line start before the edit's line (or 0)
        and the first line start after ``old_end`` + 1 are line starts in the new text too.
        """
        delta = len(new_data) - len(self.data)
        first = max(0, self.line_of(start) - 1)
        lo = self.starts[first]
        after = bisect.bisect_left(self.starts, old_end + 1)
        hi = self.starts[after] + delta if after < len(self.starts) else len(new_data)
        middle = [m.end() for m in _BREAK.finditer(new_data, lo, hi)]
        if after < len(self.starts):
            middle = [m for m in middle if m < hi]
        tail = tuple(s + delta for s in self.starts[after:])
        return LineIndex(new_data, (*self.starts[: first + 1], *middle, *tail))


def ts_point(data: bytes, offset: int) -> tuple[int, int]:
    """tree-sitter's (row, byte column) of byte ``offset``: rows count ``\\n`` only."""
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)
