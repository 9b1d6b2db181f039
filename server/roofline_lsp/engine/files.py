"""Finding and reading source files for the CLI: bad input becomes a one-line reason."""

from __future__ import annotations

import os
from collections.abc import Iterator

from roofline_lsp.syntax.parsing import SOURCE_EXTENSIONS

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
    """``(bytes, None)`` or ``(None, reason)`` for a file that is too large, binary or
    unreadable. Invalid UTF-8 is fine: the parser works on bytes."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            return None, (
                f"skipped: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:g} MB limit "
                "(--max-file-bytes)"
            )
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        return None, f"cannot read: {e.strerror or e}"
    if b"\0" in data[:65536]:
        return None, "skipped: binary file"
    return data, None
