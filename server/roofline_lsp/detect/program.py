"""The other source files of a kernel's folder: where its launch site, the callers of its
host function or separately compiled device functions (``-rdc``) often are.

Files are read once per folder state (names, sizes, mtimes) and parsed lazily, only when
their text mentions the name looked for.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.detect.kernels import detect
from roofline_lsp.model.kernel import Detection, Function
from roofline_lsp.syntax.parsing import SOURCE_EXTENSIONS, parse

MAX_SIBLINGS = 24
MAX_SIBLING_BYTES = 1_000_000


@dataclass(frozen=True)
class Unit:
    """One parsed source file: its detection and tree root."""

    path: str
    detection: Detection
    root: Node


def _stamp(folder: str) -> tuple[tuple[str, int, int], ...]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    out = []
    for n in names:
        if os.path.splitext(n)[1].lower() not in SOURCE_EXTENSIONS:
            continue
        full = os.path.join(folder, n)
        try:
            st = os.stat(full)
        except OSError:
            continue
        if st.st_size <= MAX_SIBLING_BYTES:
            out.append((full, st.st_mtime_ns, st.st_size))
        if len(out) >= MAX_SIBLINGS:
            break
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _sources(stamp: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, bytes], ...]:
    out = []
    for full, _m, _s in stamp:
        try:
            with open(full, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" not in data[:4096]:
            out.append((full, data))
    return tuple(out)


@functools.lru_cache(maxsize=128)
def _unit(full: str, mtime: int, size: int) -> Unit | None:
    try:
        with open(full, "rb") as f:
            src = f.read()
    except OSError:
        return None
    tree = parse(src)
    return Unit(full, detect(src, full, tree), tree.root_node)


_FOLDER_CACHE: dict[str, tuple[float, tuple[tuple[str, int, int], ...]]] = {}


def _folder_stamp(folder: str) -> tuple[tuple[str, int, int], ...]:
    try:
        mtime = os.stat(folder).st_mtime
    except OSError:
        return ()
    hit = _FOLDER_CACHE.get(folder)
    if hit is not None and hit[0] == mtime:
        return hit[1]
    stamp = _stamp(folder)
    if len(_FOLDER_CACHE) > 256:
        _FOLDER_CACHE.clear()
    _FOLDER_CACHE[folder] = (mtime, stamp)
    return stamp


def units_mentioning(path: str, pattern: re.Pattern[bytes]) -> Iterator[Unit]:
    """Parsed sibling files of ``path`` whose text matches ``pattern``."""
    folder = os.path.dirname(path)
    if not folder:
        return
    stamp = _folder_stamp(folder)
    own = os.path.abspath(path)
    by_name = {s[0]: s for s in stamp}
    for full, data in _sources(stamp):
        if os.path.abspath(full) == own or not pattern.search(data):
            continue
        _f, mtime, size = by_name[full]
        u = _unit(full, mtime, size)
        if u is not None:
            yield u


_DEFINITION = re.compile(
    rb"\b([A-Za-z_]\w*)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*"
    rb"(?:const\s*|noexcept\s*|__attribute__\s*\(\([^()]*\)\)\s*)*\{"
)


@functools.lru_cache(maxsize=64)
def _defined_names(stamp: tuple[tuple[str, int, int], ...]) -> dict[str, str]:
    """Function names that look defined in each sibling file: name -> first file."""
    out: dict[str, str] = {}
    for full, data in _sources(stamp):
        for m in _DEFINITION.finditer(data):
            out.setdefault(m.group(1).decode("utf-8", "replace"), full)
    return out


def defined_in_siblings(path: str, name: str) -> Unit | None:
    """The parsed sibling file of ``path`` that defines function ``name``, if any."""
    folder = os.path.dirname(path)
    if not folder:
        return None
    stamp = _folder_stamp(folder)
    full = _defined_names(stamp).get(name)
    if full is None or os.path.abspath(full) == os.path.abspath(path):
        return None
    for f, mtime, size in stamp:
        if f == full:
            return _unit(f, mtime, size)
    return None


class FunctionTable:
    """Callable functions by name: the file's own, then definitions in sibling files."""

    def __init__(self, detection: Detection, exclude: str = "") -> None:
        self.own = detection.functions
        self.path = detection.file
        self.exclude = exclude
        self.extra: dict[str, Node | None] = {}

    def get(self, name: str) -> Node | None:
        if name == self.exclude:
            return None
        f = self.own.get(name)
        if f is not None:
            return f.node
        if name in self.extra:
            return self.extra[name]
        found: Node | None = None
        u = defined_in_siblings(self.path, name)
        if u is not None:
            fn: Function | None = u.detection.functions.get(name)
            if fn is not None and fn.node is not None:
                found = fn.node
        self.extra[name] = found
        return found
