"""JSON-RPC framing: ``Content-Length`` headers and bodies read from a byte stream.

pygls' reader (``pygls.io_.run_async``) sits silent after a wrong ``Content-Length``
(too short, too long, not a number, missing), allocates whatever length a header announces
(``Content-Length: 1000000000000`` ends in ``MemoryError``) and reads stdin one line per
thread hop. This reader replaces it, for stdio and TCP alike: one background thread (or the
socket) fills a :class:`ByteFeed`; :func:`read_frames` cuts it into message bodies, logging
each framing problem on one line and resynchronising on the next ``Content-Length`` header:

- a header that is not a number, or a length over :data:`MAX_BODY_BYTES`, is refused before
  anything is allocated, and the bytes up to the next header are skipped;
- a body shorter than announced (the rest never comes: the client waits for an answer) is
  taken as it is after :data:`BODY_WAIT_S` seconds without new bytes;
- a header block without ``Content-Length`` is skipped;
- a header line longer than :data:`MAX_HEADER_LINE` is dropped.

What a body means (JSON, JSON-RPC, params) is ``protocol``'s
(:class:`~roofline_lsp.lsp.language_server.RooflineProtocol`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import BinaryIO

log = logging.getLogger("roofline_lsp.lsp")

MAX_BODY_BYTES = 512 * 1024 * 1024  # a message larger than this is refused unread
MAX_HEADER_LINE = 64 * 1024  # a header line longer than this is dropped
BODY_WAIT_S = 2.0  # a body still short after this long without new bytes is taken as it is
FEED_HIGH_WATER = 32 * 1024 * 1024  # the stdin thread waits while this much is unread
_CHUNK = 1 << 16
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r?\n?$", re.IGNORECASE)


class ByteFeed:
    """Bytes from a stream, read line by line or by length on the event loop."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.eof = False
        self._more = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()

    def feed(self, data: bytes) -> None:
        """Append ``data`` (empty: end of stream)."""
        if data:
            self.buffer += data
        else:
            self.eof = True
        if len(self.buffer) >= FEED_HIGH_WATER:
            self._room.clear()
        self._more.set()

    async def put(self, data: bytes) -> None:
        """:meth:`feed`, waiting while the unread bytes are over the high-water mark."""
        await self._room.wait()
        self.feed(data)

    def _consume(self, n: int) -> bytes:
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        if len(self.buffer) < FEED_HIGH_WATER:
            self._room.set()
        return out

    async def _wait(self, timeout: float | None = None) -> bool:
        """Wait for more bytes; False on timeout."""
        self._more.clear()
        if timeout is None:
            await self._more.wait()
            return True
        try:
            await asyncio.wait_for(self._more.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def readline(self) -> tuple[bytes, bool]:
        """The next line with its ``\\n`` (b"" at the end of the stream) and whether it was
        cut: a line longer than :data:`MAX_HEADER_LINE` is returned up to that length, the
        rest skipped."""
        start = 0
        while True:
            i = self.buffer.find(b"\n", start)
            if i >= 0:
                if i + 1 > MAX_HEADER_LINE:
                    self._consume(i + 1)
                    return b"", True
                return self._consume(i + 1), False
            if len(self.buffer) > MAX_HEADER_LINE:
                await self._skip_line()
                return b"", True
            if self.eof:
                return self._consume(len(self.buffer)), False
            start = len(self.buffer)
            await self._wait()

    async def _skip_line(self) -> None:
        while True:
            i = self.buffer.find(b"\n")
            if i >= 0:
                self._consume(i + 1)
                return
            self._consume(len(self.buffer))
            if self.eof:
                return
            await self._wait()

    async def read(self, n: int) -> bytes:
        """``n`` bytes, or fewer when the stream ends or no byte comes for
        :data:`BODY_WAIT_S` seconds before they are all there."""
        while len(self.buffer) < n and not self.eof:
            if not await self._wait(BODY_WAIT_S):
                break
        return self._consume(min(n, len(self.buffer)))


def pump_file(fd: int, loop: asyncio.AbstractEventLoop, feed: ByteFeed) -> threading.Thread:
    """A daemon thread copying the file descriptor ``fd`` (stdin) into ``feed``."""

    def run() -> None:
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                chunk = b""
            try:
                asyncio.run_coroutine_threadsafe(feed.put(chunk), loop).result()
            except Exception:  # the loop is closed: the server is ending
                return
            if not chunk:
                return

    thread = threading.Thread(target=run, name="roofline-stdin", daemon=True)
    thread.start()
    return thread


async def pump_stream(reader: asyncio.StreamReader, feed: ByteFeed) -> None:
    """Copy a socket's stream into ``feed`` until it ends."""
    while True:
        try:
            chunk = await reader.read(_CHUNK)
        except (ConnectionError, OSError):
            chunk = b""
        await feed.put(chunk)
        if not chunk:
            return


async def read_frames(
    feed: ByteFeed, handle: Callable[[bytes], None], stopped: Callable[[], bool]
) -> None:
    """Cut ``feed`` into message bodies and give each to ``handle`` until the stream ends
    (or ``stopped()``). Never raises for what the client sent."""
    length: int | None = None
    in_headers = False  # a header line was read since the last body
    skipping = False  # after a framing error: until the next Content-Length header
    while not stopped():
        line, cut = await feed.readline()
        if cut:
            log.warning("framing: a header line over %d bytes was dropped", MAX_HEADER_LINE)
            length, in_headers, skipping = None, False, True
            continue
        if not line:
            return  # end of stream
        if line.strip() == b"":
            if length is None:
                if in_headers and not skipping:
                    log.warning("framing: a message without Content-Length was skipped")
                    skipping = True
                in_headers = False
                continue
            in_headers, skipping = False, False
            n, length = length, None
            body = await feed.read(n)
            if len(body) < n:
                if feed.eof and not body:
                    return
                log.warning(
                    "framing: Content-Length %d but %d bytes came (read as they are)",
                    n,
                    len(body),
                )
            handle(body)
            continue
        m = _LENGTH.search(line)
        if m is None:
            in_headers = in_headers or not skipping
            continue  # another header (Content-Type), or bytes skipped
        value = m.group(1)
        if not value.isdigit():
            log.warning(
                "framing: Content-Length %r is not a number: skipped to the next header",
                value[:40].decode("ascii", "replace"),
            )
            length, in_headers, skipping = None, False, True
            continue
        size = int(value)
        if size > MAX_BODY_BYTES:
            log.warning(
                "framing: a message of %d bytes is over the %d-byte limit: skipped to the "
                "next header",
                size,
                MAX_BODY_BYTES,
            )
            length, in_headers, skipping = None, False, True
            continue
        length, in_headers, skipping = size, True, False


# -- the client's side (the raw clients of the tests and benchmarks) ---------------------------


def frame(body: bytes) -> bytes:
    """``body`` with its ``Content-Length`` header."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next message body from a blocking byte stream (a server's stdout, read by a
    client); None at the end of the stream."""
    length = -1
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        m = _LENGTH.match(line)
        if m:
            length = int(m.group(1))
    return stream.read(length)
