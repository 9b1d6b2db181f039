"""LSP positions <-> byte offsets, with non-ASCII text, astral-plane characters, every line
break style and invalid UTF-8."""

from __future__ import annotations

import random

import pytest

from roofline_lsp.syntax.positions import (
    LineIndex,
    byte_column,
    character_column,
    decode,
    encode,
    ts_point,
    units,
)

# "é" is 2 bytes / 1 UTF-16 unit, "温" 3 bytes / 1 unit, "🚀" 4 bytes / 2 units (surrogate pair)
LINE = "x = é温🚀 + y;"


def test_units_per_encoding() -> None:
    assert units("é温🚀", "utf-16") == 4
    assert units("é温🚀", "utf-8") == 2 + 3 + 4
    assert units("é温🚀", "utf-32") == 3
    assert units("plain", "utf-16") == 5


@pytest.mark.parametrize(
    ("char", "expected_byte"),
    [
        (0, 0),
        (4, 4),  # before é
        (5, 6),  # after é (2 bytes)
        (6, 9),  # after 温 (3 bytes)
        (7, 9),  # inside the surrogate pair of 🚀 -> start of the character
        (8, 13),  # after 🚀 (4 bytes, 2 units)
        (9, 14),
        (500, len(encode(LINE))),  # past the end of the line -> its end
    ],
)
def test_byte_column_utf16(char: int, expected_byte: int) -> None:
    assert byte_column(encode(LINE), char, "utf-16") == expected_byte


def test_columns_round_trip_every_encoding() -> None:
    line = encode(LINE)
    starts = [len(encode(LINE[:i])) for i in range(len(LINE) + 1)]
    for enc in ("utf-8", "utf-16", "utf-32"):
        for b in starts:
            c = character_column(line, b, enc)  # type: ignore[arg-type]
            assert byte_column(line, c, enc) == b  # type: ignore[arg-type]
    assert character_column(line, starts[-1], "utf-16") == units(LINE)
    assert character_column(line, 11, "utf-16") == 6  # middle of 🚀 -> its start


def test_utf8_columns_snap_to_character_start() -> None:
    line = encode("é!")
    assert byte_column(line, 1, "utf-8") == 0
    assert byte_column(line, 2, "utf-8") == 2


def test_line_index_break_styles() -> None:
    data = encode("a\r\nbé\rc\n🚀d\n")
    idx = LineIndex.of(data)
    assert idx.line_count == 5  # a, bé, c, 🚀d, ""
    assert idx.line_bytes(1) == encode("bé")
    assert idx.offset_at(3, 2) == data.index(b"d")
    assert idx.position_at(data.index(b"d")) == (3, 2)
    assert idx.position_at(data.index(b"d"), "utf-32") == (3, 1)
    assert idx.offset_at(99, 0) == len(data)  # past the last line -> end of the document
    assert idx.offset_at(0, 99) == 1  # past the end of a line -> before its break
    assert idx.position_at(2) == (0, 1)  # inside "\r\n" -> end of the line
    assert idx.offset_at(-1, 0) == 0


def test_invalid_utf8_round_trips_and_counts_one_unit_per_byte() -> None:
    data = b"int x\xff\xfe = 1; // \xc3\n__global__ void k() {}\n"
    text = decode(data)
    assert encode(text) == data
    idx = LineIndex.of(data)
    assert idx.offset_at(0, 7) == data.index(b" =")
    assert idx.position_at(data.index(b" =")) == (0, 7)


def test_foreign_lone_surrogate_encodes_as_one_replacement() -> None:
    # A client may send a lone high surrogate; it must not break encoding or columns.
    text = "a\ud800b"
    data = encode(text)
    assert data == "a\ufffdb".encode()
    assert LineIndex.of(data).position_at(data.index(b"b")) == (0, 2)


def test_edited_index_matches_full_rebuild() -> None:
    rng = random.Random(7)
    pieces = ["a", "é", "🚀", "\n", "\r\n", "\r", "xy", "温"]
    data = encode("".join(rng.choice(pieces) for _ in range(200)))
    idx = LineIndex.of(data)
    for _ in range(400):
        start = rng.randrange(len(data) + 1)
        end = min(len(data), start + rng.randrange(12))
        new = encode("".join(rng.choice(pieces) for _ in range(rng.randrange(5))))
        data2 = data[:start] + new + data[end:]
        idx = idx.edited(start, end, data2)
        assert idx.starts == LineIndex.of(data2).starts, (start, end, new)
        data = data2


def test_ts_point_counts_newlines_only() -> None:
    data = encode("ab\ncé\r\nd")
    assert ts_point(data, data.index(b"d")) == (2, 0)
    assert ts_point(data, data.index(b"\r")) == (1, 3)
