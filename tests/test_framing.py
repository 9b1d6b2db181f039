"""lsp/framing.py: message bodies cut from a byte stream, and what a broken frame does."""

from __future__ import annotations

import asyncio
import io
import logging

import pytest

import roofline_lsp.lsp.framing as framing
from roofline_lsp.lsp.framing import ByteFeed, frame, read_frame, read_frames


async def frames(data: bytes, chunk: int = 7) -> list[bytes]:
    """The bodies ``read_frames`` finds in ``data``, fed ``chunk`` bytes at a time."""
    feed = ByteFeed()
    for i in range(0, len(data), chunk):
        feed.feed(data[i : i + chunk])
    feed.feed(b"")
    out: list[bytes] = []
    await read_frames(feed, out.append, lambda: False)
    return out


def msg(body: bytes, length: int | None = None, extra: bytes = b"") -> bytes:
    n = len(body) if length is None else length
    return b"Content-Length: %d\r\n%s\r\n%s" % (n, extra, body)


async def test_well_formed_messages_with_other_headers() -> None:
    data = msg(b'{"a":1}') + msg(b'{"b":2}', extra=b"Content-Type: application/json\r\n")
    assert await frames(data) == [b'{"a":1}', b'{"b":2}']
    assert await frames(data, chunk=1) == [b'{"a":1}', b'{"b":2}']


async def test_a_short_length_gives_a_cut_body_then_resynchronises(caplog) -> None:  # type: ignore[no-untyped-def]
    out = await frames(msg(b'{"a":12345}', 5) + msg(b'{"b":2}'))
    assert out == [b'{"a":', b'{"b":2}']  # the cut body is the protocol's to refuse


async def test_a_length_not_a_number_skips_to_the_next_header(caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING)
    data = b"Content-Length: twelve\r\n\r\n{}" + msg(b'{"b":2}')
    assert await frames(data) == [b'{"b":2}']
    assert sum("not a number" in r.message for r in caplog.records) == 1


async def test_a_missing_length_skips_the_message(caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING)
    data = b"Content-Type: x\r\n\r\n{}\r\n" + msg(b'{"b":2}')
    assert await frames(data) == [b'{"b":2}']
    assert sum("without Content-Length" in r.message for r in caplog.records) == 1


async def test_a_huge_length_is_refused_unread(caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING)
    data = b"Content-Length: 1000000000000\r\n\r\n{}\r\n" + msg(b'{"b":2}')
    assert await frames(data) == [b'{"b":2}']
    assert sum("over the" in r.message for r in caplog.records) == 1


async def test_an_overlong_header_line_is_dropped(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(framing, "MAX_HEADER_LINE", 64)
    data = b"X-Junk: " + b"j" * 500 + b"\r\n\r\n" + msg(b'{"b":2}')
    assert await frames(data) == [b'{"b":2}']


async def test_a_long_length_takes_what_came_after_a_pause(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(framing, "BODY_WAIT_S", 0.05)
    feed = ByteFeed()
    out: list[bytes] = []
    task = asyncio.ensure_future(read_frames(feed, out.append, lambda: False))
    feed.feed(msg(b'{"a":1}', 40))  # then the client waits for an answer
    await asyncio.sleep(0.3)
    assert out == [b'{"a":1}']
    feed.feed(b"")
    await asyncio.wait_for(task, 1)


@pytest.mark.parametrize("data", [b"", b"Content-Length: 10\r\n\r\n"])
async def test_the_end_of_the_stream_ends_the_reader(data: bytes) -> None:
    assert await frames(data) == []


def test_a_client_reads_back_what_it_framed() -> None:
    stream = io.BytesIO(frame(b'{"a":1}') + b"Content-Type: x\r\n" + frame('{"é":2}'.encode()))
    assert read_frame(stream) == b'{"a":1}'
    assert read_frame(stream) == '{"é":2}'.encode()
    assert read_frame(stream) is None
