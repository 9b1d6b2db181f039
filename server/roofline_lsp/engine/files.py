"""Finding and reading source files for the CLI: bad input becomes a one-line reason."""

from __future__ import annotations

import os
from collections.abc import Iterator

from roofline_lsp.syntax.parsing import SOURCE_EXTENSIONS
from roofline_lsp.syntax.sources import open_regular

SKIP_DIRS = frozenset({".git", "node_modules", "build", "__pycache__", ".venv", "cache"})


class InputError(ValueError):
    """A path the user named cannot be used (missing, unreadable)."""


def collect_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """The source files under ``paths`` (recursing into directories, sorted) and the
    problems found (missing paths raise InputError)."""
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(_walk(p))
        elif os.path.isfile(p):
            files.append(p)
        elif os.path.exists(p):
            raise InputError(f"{p}: not a regular file or directory")
        else:
            raise InputError(f"{p}: no such file or directory")
    seen: set[str] = set()
    unique = []
    for f in files:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, []


def _walk(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith(SOURCE_EXTENSIONS):
                yield os.path.join(dirpath, name)


def read_source(path: str, max_bytes: int) -> tuple[bytes | None, str | None]:
    """``(bytes, None)`` or ``(None, reason)`` for a file that is not a regular file (a FIFO,
    a socket, a device: refused without opening it, never a hang), too large, binary or
    unreadable. Invalid UTF-8 is read: the parser works on bytes (see :func:`utf8_note`)."""
    try:
        fd = open_regular(path)
        with open(fd, "rb") as f:
            size = os.fstat(fd).st_size
            if size > max_bytes:
                return None, (
                    f"skipped: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:g} MB limit "
                    "(--max-file-bytes)"
                )
            data = f.read(max_bytes + 1)
    except OSError as e:  # strerror: the system's reason; else open_regular's own words
        return None, f"cannot read: {e.strerror}" if e.strerror else f"skipped: {e}"
    if len(data) > max_bytes:  # grew while read
        return None, f"skipped: over the {max_bytes / 1e6:g} MB limit (--max-file-bytes)"
    if b"\0" in data[:65536]:
        return None, "skipped: binary file"
    return data, None


def utf8_note(source: bytes) -> str | None:
    """A one-line note when ``source`` is not valid UTF-8 (where the first bad byte is): the
    file is still analysed, its bad bytes shown as U+FFFD."""
    try:
        source.decode("utf-8")
    except UnicodeDecodeError as e:
        line = source.count(b"\n", 0, e.start) + 1
        return (
            f"note: not valid UTF-8 (byte 0x{source[e.start]:02x} on line {line}); "
            "analysed with invalid bytes replaced"
        )
    return None
