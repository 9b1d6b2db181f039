"""The other source files of a kernel's folder: where its launch site, the callers of its
host function or separately compiled device functions (``-rdc``) often are.

Files are listed on disk; their text is read through a ``sources.SourceReader`` when one is
given (an open buffer's unsaved bytes first), else from disk once per folder state (names,
sizes, mtimes). They are parsed lazily, only when their text mentions the name looked for,
and the parses are cached by path and version (see ``sources``).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node, Tree

from roofline_lsp.detect.kernels import detect_with_reads
from roofline_lsp.model.kernel import Detection, Function
from roofline_lsp.model.stamps import FileStamp, Version
from roofline_lsp.syntax.parsing import SOURCE_EXTENSIONS, parse
from roofline_lsp.syntax.sources import (
    SourceReader,
    SourceView,
    file_version,
    include_candidates,
    is_current,
    read_from_disk,
    source_view,
    user_folders,
)

MAX_SIBLINGS = 24
MAX_SIBLING_BYTES = 1_000_000


@dataclass(frozen=True)
class Unit:
    """One parsed source file: its detection and tree root."""

    path: str
    detection: Detection
    root: Node
    tree: Tree | None = field(default=None, compare=False, repr=False)


def _listing(folder: str) -> tuple[str, ...]:
    """The source files of ``folder`` by name."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    sources = (n for n in names if os.path.splitext(n)[1].lower() in SOURCE_EXTENSIONS)
    return tuple(os.path.join(folder, n) for n in sources)


def _stamp(files: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for full in files:
        try:
            st = os.stat(full)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_SIBLING_BYTES:  # no FIFO, device
            out.append((full, st.st_mtime_ns, st.st_size))
        if len(out) >= MAX_SIBLINGS:
            break
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _sources(stamp: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, bytes], ...]:
    out = []
    for full, _m, _s in stamp:
        data = read_from_disk(full)
        if data is not None and b"\0" not in data[:4096]:
            out.append((full, data))
    return tuple(out)


MAX_UNITS = 128

# (sibling path, its version) -> its parse, and the headers its detection read
_UNITS: dict[tuple[str, Version], tuple[Unit, tuple[FileStamp, ...]]] = {}


def _unit(full: str, version: Version, src: bytes, view: SourceView | None) -> Unit:
    """The parse of one version of a sibling file (cached while the headers it includes are
    current too)."""
    hit = _UNITS.get((full, version))
    if hit is not None and all(is_current(s, view) for s in hit[1]):
        return hit[0]
    tree = parse(src)
    detection, reads = detect_with_reads(src, full, tree, read=view)
    unit = Unit(full, detection, tree.root_node, tree)
    if len(_UNITS) >= MAX_UNITS:
        _UNITS.pop(next(iter(_UNITS)), None)
    _UNITS[(full, version)] = (unit, reads)
    return unit


def unit_of(path: str, source: bytes, view: SourceView | None) -> Unit | None:
    """The parse and detection of ``path`` made earlier (as another file's sibling, or by
    :func:`remember_unit`) when they were of these very bytes, as ``view`` sees the file,
    and the headers its detection read are current: a folder's files are analysed one by
    one, and each is a sibling of the others."""
    if view is None:
        return None
    hit = _UNITS.get((path, view.version(path)))
    if hit is None or hit[0].detection.source != source:
        return None
    return hit[0] if all(is_current(s, view) for s in hit[1]) else None


def remember_unit(unit: Unit, reads: tuple[FileStamp, ...], view: SourceView | None) -> None:
    """Keep the parse of a file analysed for its siblings, when ``view`` sees the same bytes
    (not an editor's unsaved buffer that differs from them)."""
    if view is None or view(unit.path) != unit.detection.source:
        return
    if len(_UNITS) >= MAX_UNITS:
        _UNITS.pop(next(iter(_UNITS)), None)
    _UNITS[(unit.path, view.version(unit.path))] = (unit, reads)


# folder -> its modification time and its source files (the listing changes with the
# folder's time; a file's content does not, so each file's version is read every time)
_FOLDER_CACHE: dict[str, tuple[int, tuple[str, ...]]] = {}


def _folder_stamp(folder: str, near: str) -> tuple[tuple[str, int, int], ...]:
    """The versions of ``folder``'s source files that are ``near``'s siblings: all of them
    up to ``MAX_SIBLINGS``; in a larger folder those whose names are closest to ``near``'s
    (``stencil-cuda.cu`` for ``stencil_cuda.hpp``, which it includes), then by name."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return ()
    hit = _FOLDER_CACHE.get(folder)
    if hit is None or hit[0] != mtime:
        if len(_FOLDER_CACHE) > 256:
            _FOLDER_CACHE.clear()
        hit = _FOLDER_CACHE[folder] = (mtime, _listing(folder))
    files = hit[1]
    if len(files) > MAX_SIBLINGS:
        files = _nearest_first(files, _stem(near))
    return tuple(sorted(_stamp(files)))


@functools.lru_cache(maxsize=256)  # (asked on every sibling search of the file)
def _nearest_first(files: tuple[str, ...], stem: str) -> tuple[str, ...]:
    """``files`` (by name), those whose stems share the longest start with ``stem`` first
    (a stable sort: by name among names as close)."""
    return tuple(sorted(files, key=lambda f: -_shared_prefix(_stem(f), stem)))


def _stem(path: str) -> str:
    """A file's name without its extension, its separators alike (``stencil_cuda``,
    ``stencil-cuda`` and ``stencil.cuda`` are one)."""
    return re.sub(r"[-_.\s]+", " ", os.path.splitext(os.path.basename(path))[0].lower())


def _shared_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


# a sibling file: its path, the version read and its bytes
_Sibling = tuple[str, Version, bytes]


def _siblings(folder: str, view: SourceView | None, near: str) -> tuple[_Sibling, ...]:
    """The source files of ``folder`` (listed on disk) that are ``near``'s siblings
    (:func:`_folder_stamp`), read through ``view``."""
    stamp = _folder_stamp(folder, near)
    if view is None:
        versions = {full: (mtime, size) for full, mtime, size in stamp}
        return tuple((full, versions[full], data) for full, data in _sources(stamp))
    disk = dict(_sources(stamp))  # bytes of the files left to the disk, cached by stat
    out = []
    for full, _m, _s in stamp:
        version = view.version(full)
        # a content hash: the view's reader holds the file (an open buffer); else the disk's
        data = view(full) if isinstance(version, str) else disk.get(full)
        if data is not None and b"\0" not in data[:4096]:
            out.append((full, version, data))
    return tuple(out)


def _folder(path: str) -> str:
    """The folder of ``path``'s siblings: "" for a buffer with no file (``untitled:1``); a
    bare file name given on a command line is in the working directory."""
    folder = os.path.dirname(path)
    return folder or ("." if os.path.isfile(path) else "")


def _folders(path: str) -> tuple[str, ...]:
    """The folders whose files may use what ``path`` defines (:func:`user_folders`: for a
    header in a shared header folder, its project's folders too); none for a buffer with no
    file."""
    folder = _folder(path)
    return user_folders(folder) if folder else ()


def sibling_stamps(path: str, read: SourceReader | None = None) -> tuple[FileStamp, ...]:
    """The versions of the other source files of ``path``'s folder read through ``read``:
    what :func:`units_mentioning` and :func:`defined_in_siblings` looked at (the files of
    its project's folders, for a file in a shared header folder: :func:`_folders`)."""
    view = source_view(read)
    return tuple(
        FileStamp(full, v)
        for folder in _folders(path)
        for full, v, _d in _siblings(folder, view, path)
    )


def units_mentioning(
    path: str, pattern: re.Pattern[bytes], read: SourceReader | None = None
) -> Iterator[Unit]:
    """Parsed sibling files of ``path`` whose text (read through ``read``, else from disk)
    matches ``pattern``; for a header in a shared header folder, the files of its project's
    folders too (:func:`_folders`)."""
    view = source_view(read)
    own = os.path.abspath(path)
    for folder in _folders(path):
        for full, version, data in _siblings(folder, view, path):
            if os.path.abspath(full) == own or not pattern.search(data):
                continue
            yield _unit(full, version, data, view)


def units_including(
    path: str, read: SourceReader | None = None
) -> Iterator[tuple[Unit, tuple[int, ...]]]:
    """Parsed sibling files of ``path`` that ``#include`` it (``#include "kernels.cu"``,
    a header included inside a function body), each with the bytes where they do."""
    name = os.path.basename(path)
    if not name:
        return
    pattern = re.compile(rb'#\s*include\s*"(?:[^"]*/)?' + re.escape(name.encode()) + rb'"')
    for u in units_mentioning(path, pattern, read):
        yield u, tuple(m.start() for m in pattern.finditer(u.detection.source))


_DEFINITION = re.compile(
    rb"\b([A-Za-z_]\w*)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*"
    rb"(?:const\s*|noexcept\s*|__attribute__\s*\(\([^()]*\)\)\s*)*\{"
)


MAX_NAME_TABLES = 64

# the siblings' paths and versions -> function name -> the first file that looks to define it
_NAMES: dict[tuple[tuple[str, Version], ...], dict[str, str]] = {}


def _defined_names(files: tuple[_Sibling, ...]) -> dict[str, str]:
    """Function names that look defined in each sibling file: name -> first file."""
    key = tuple((full, version) for full, version, _d in files)
    out = _NAMES.get(key)
    if out is None:
        out = {}
        for full, _v, data in files:
            for m in _DEFINITION.finditer(data):
                out.setdefault(m.group(1).decode("utf-8", "replace"), full)
        if len(_NAMES) >= MAX_NAME_TABLES:
            _NAMES.pop(next(iter(_NAMES)), None)
        _NAMES[key] = out
    return out


def defined_in_siblings(path: str, name: str, read: SourceReader | None = None) -> Unit | None:
    """The parsed sibling file of ``path`` (read through ``read``, else from disk) that
    defines function ``name``, if any."""
    folder = _folder(path)
    if not folder:
        return None
    view = source_view(read)
    files = _siblings(folder, view, path)
    full = _defined_names(files).get(name)
    if full is None or os.path.abspath(full) == os.path.abspath(path):
        return None
    for f, version, data in files:
        if f == full:
            return _unit(f, version, data, view)
    return None


class FunctionTable:
    """Callable functions by name: the file's own, then definitions in sibling files.
    ``macros`` (name -> parameters, body), when given, gains the macros of each sibling file
    a function is taken from, where the kernel's file has none of that name: the function's
    body uses its own file's (``#define NUM_TERMS 35`` above it)."""

    def __init__(
        self,
        detection: Detection,
        exclude: str = "",
        read: SourceReader | None = None,
        macros: dict[str, tuple[tuple[str, ...] | None, str]] | None = None,
    ) -> None:
        self.own = detection.functions
        self.path = detection.file
        self.exclude = exclude
        self.view = source_view(read)
        self.macros = macros
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
        u = defined_in_siblings(self.path, name, self.view)
        if u is not None:
            fn: Function | None = u.detection.functions.get(name)
            if fn is not None and fn.node is not None:
                found = fn.node
                if self.macros is not None:
                    for m in u.detection.macros.values():
                        self.macros.setdefault(m.name, (m.params, m.body))
        self.extra[name] = found
        return found


# (header path, its version) -> its parse
_INCLUDED: dict[tuple[str, Version], Tree] = {}


def included_body(
    rel: str, including: str, read: SourceReader | None = None
) -> tuple[str, Node] | None:
    """The parse of a header included inside a function body (``#include "body.h"`` in a
    kernel or an offload region, a common way to share one body between programs): its path,
    relative to the including file, and its root, whose children are the statements."""
    view = source_view(read)
    for full in include_candidates(rel, including):
        version = file_version(full, view)
        if version is not None:
            break
    else:
        return None
    tree = _INCLUDED.get((full, version))
    if tree is None:
        data = view(full) if view is not None else read_from_disk(full)
        if data is None or len(data) > MAX_SIBLING_BYTES or b"\0" in data[:4096]:
            return None
        tree = parse(data)
        if len(_INCLUDED) >= MAX_UNITS:
            _INCLUDED.pop(next(iter(_INCLUDED)), None)
        _INCLUDED[(full, version)] = tree
    return full, tree.root_node
