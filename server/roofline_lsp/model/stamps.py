"""Which version of a file an analysis read: caches and reuse across edits compare them."""

from __future__ import annotations

from dataclasses import dataclass

# (mtime_ns, size) of a file on disk; the hash of the bytes a reader returned; None: unreadable
Version = tuple[int, int] | str | None


@dataclass(frozen=True)
class FileStamp:
    """One file an analysis read: its path and the version of it that was read."""

    path: str
    version: Version
