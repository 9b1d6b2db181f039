"""Where analysis reads the files besides the one analysed: included headers, sibling files.

An editor's unsaved buffer must win over the disk (clangd's model: a file system view that
sees dirty buffers), so detection and the estimator take a :data:`SourceReader`, a callable
``read(path) -> bytes | None`` (the language server passes one that answers an open
document's buffer first, else the disk). Without one they read the disk.

Caches of what was derived from a file are keyed by its :data:`Version`: on the disk its
modification time and size (a ``stat``, no read), through a reader a hash of the bytes it
returned, so that a path whose buffer is open is never answered from a stale disk result.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterator

from roofline_lsp.model.stamps import FileStamp, Version

SourceReader = Callable[[str], bytes | None]
"""The bytes of a file (an open buffer's or the disk's), None when unreadable."""


# an ``#include "..."`` line (its file name): the headers a source brings in; an
# ``#include <...>`` too, local when the file is found beside the includer (a build's ``-I.``)
LOCAL_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*["<]([^">\n]+)[">]', re.M)


_VARIANT_STEM = re.compile(r"^(.+)[-_][^-_]+$")
MAX_VARIANTS = 8


def include_candidates(rel: str, including: str) -> Iterator[str]:
    """Where the file of a local ``#include "rel"`` in ``including`` may be, in the order a
    compiler given :func:`fallback_folders` as last ``-I`` looks: beside the including file,
    then in the header folders a build would name (listed only when asked for)."""
    if not including or os.path.isabs(rel) or "\0" in rel:
        return  # a buffer without a file has no folder; absolute paths are not local (nor
        # a name holding a NUL byte a file's)
    here = os.path.dirname(including)
    yield os.path.normpath(os.path.join(here, rel))
    for folder in fallback_folders(here):
        yield os.path.normpath(os.path.join(folder, rel))


# the names a project gives its shared header folder, and how far above a file one may sit
# (cuda-samples: Samples/<group>/<sample>/ includes from Common/, three levels up)
HEADER_FOLDERS = ("include", "inc", "common", "Common")
_HEADER_LEVELS = 3


def fallback_folders(folder: str) -> tuple[str, ...]:
    r"""The folders searched, last, for a local include found neither beside the file nor on
    the include path: a shared header folder (:data:`HEADER_FOLDERS`) of the file's folder
    or of an ancestor up to :data:`_HEADER_LEVELS` above it, not past a repository root (a
    folder with ``.git``), nearest first: what a build's ``-I../include`` names; then the
    variant folders (:func:`variant_folders`). Looked up on every call (a few ``stat``\ s),
    so a header folder made while the server runs is found."""
    folder = os.path.abspath(folder)
    found: list[str] = []
    base = folder
    for _ in range(_HEADER_LEVELS + 1):
        found += [d for d in (os.path.join(base, n) for n in HEADER_FOLDERS) if os.path.isdir(d)]
        parent = os.path.dirname(base)
        if parent == base or os.path.exists(os.path.join(base, ".git")):
            break
        base = parent
    return (*found, *variant_folders(folder))


MAX_USER_FOLDERS = 8


def user_folders(folder: str) -> tuple[str, ...]:
    """The folders whose files may include the files of ``folder`` (and launch what they
    define): ``folder`` itself; for a shared header folder (``inc/``, ``include/``,
    ``common/``: :data:`HEADER_FOLDERS`) or a folder in one (``include/tiny-cuda-nn/``,
    included as ``<tiny-cuda-nn/common.h>``), also the project folder above it and that
    folder's other subfolders (``src/``), whose files include it through a build's
    ``-I../inc``. At most :data:`MAX_USER_FOLDERS`."""
    own = _header_folder(os.path.abspath(folder))
    if own is None:
        return (folder,)
    parent = os.path.dirname(own)
    try:
        stamp = os.stat(parent).st_mtime_ns  # (a folder made or removed in it changes it)
    except OSError:
        stamp = 0
    return (folder, *_project_folders(own, stamp))[:MAX_USER_FOLDERS]


def _header_folder(folder: str) -> str | None:
    """``folder``, or its nearest ancestor up to :data:`_HEADER_LEVELS` above it, named as a
    shared header folder (:data:`HEADER_FOLDERS`), not past a repository root; None when
    there is none."""
    base = folder
    for _ in range(_HEADER_LEVELS + 1):
        if os.path.basename(base) in HEADER_FOLDERS:
            return base
        parent = os.path.dirname(base)
        if parent == base or os.path.exists(os.path.join(base, ".git")):
            return None
        base = parent
    return None


@functools.lru_cache(maxsize=64)
def _project_folders(own: str, stamp: int) -> tuple[str, ...]:
    """The folder above header folder ``own`` and its other subfolders, listed once per
    version (``stamp``) of that folder."""
    parent = os.path.dirname(own)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        names = []
    others = (os.path.join(parent, n) for n in names)
    return (parent, *(d for d in others if d != own and os.path.isdir(d)))


@functools.lru_cache(maxsize=256)
def variant_folders(folder: str) -> tuple[str, ...]:
    """The folders beside ``folder`` that are variants of it: the same name up to a last
    ``-`` or ``_`` part (``stencil-cuda`` for ``stencil-omp``, which often includes its
    headers from there through a build flag). Searched, in name order, for a local include
    found neither beside the file nor on the include path; none when the folder's name has
    no such part."""
    folder = os.path.abspath(folder)
    m = _VARIANT_STEM.match(os.path.basename(folder))
    if m is None:
        return ()
    stem, parent = m.group(1), os.path.dirname(folder)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return ()
    out = []
    for name in names:
        n = _VARIANT_STEM.match(name)
        cand = os.path.join(parent, name)
        if n is not None and n.group(1) == stem and cand != folder and os.path.isdir(cand):
            out.append(cand)
            if len(out) >= MAX_VARIANTS:
                break
    return tuple(out)


def not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file ("a FIFO", "a socket"...),
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, what in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def open_regular(path: str) -> int:
    """A read-only descriptor of ``path`` (symlinks followed) when it is a regular file;
    OSError otherwise, without blocking: a FIFO, a socket or a device is refused from its
    ``stat`` before it is opened (opening a FIFO waits for a writer; reading ``/dev/zero``
    never ends), and checked again on the descriptor in case the path changed in between."""
    what = not_regular(os.stat(path).st_mode)
    if what is None:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
        what = not_regular(os.fstat(fd).st_mode)
        if what is None:
            return fd
        os.close(fd)
    raise OSError(f"{what}, not a regular file")


def read_from_disk(path: str, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file ``path`` on disk (at most ``limit`` of them), None when
    unreadable or not a regular file (never blocks on a FIFO or a device)."""
    try:
        with open(open_regular(path), "rb") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError:
        return None


class SourceView:
    """A reader seen through one analysis: each path is read once and versioned once, so every
    part of the analysis sees the same bytes and the caches can key them by version.

    With ``overlay``, ``read`` answers only the files it holds (an editor's open buffers,
    versioned by content) and None for the others, which come from the disk, versioned by
    ``stat`` like a plain disk read (clangd's overlay file system)."""

    def __init__(self, read: SourceReader, *, overlay: bool = False) -> None:
        self._read = read
        self._overlay = overlay
        self._files: dict[str, tuple[bytes | None, Version]] = {}
        self._disk: dict[str, Version] = {}  # overlay: files not held, versioned by stat

    def _get(self, path: str) -> tuple[bytes | None, Version]:
        hit = self._files.get(path)
        if hit is None:
            data = self._read(path)
            if data is None and self._overlay:
                data = read_from_disk(path)
                hit = (data, self.version(path))
            else:
                version = (
                    None if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()
                )
                hit = (data, version)
            self._files[path] = hit
        return hit

    def __call__(self, path: str) -> bytes | None:
        return self._get(path)[0]

    def version(self, path: str) -> Version:
        """The hash of the bytes of ``path`` (None when unreadable); with ``overlay``, the
        ``stat`` version of a file the reader does not hold, without reading it."""
        if self._overlay and path not in self._files:
            if path not in self._disk:
                held = self._read(path)
                if held is not None:
                    digest = hashlib.blake2b(held, digest_size=16).hexdigest()
                    self._files[path] = (held, digest)
                    return digest
                self._disk[path] = file_version(path, None)
            return self._disk[path]
        return self._get(path)[1]

    def stamps(self) -> tuple[FileStamp, ...]:
        """Every file read or versioned through this view so far, with its version."""
        files = {p: v for p, (_d, v) in self._files.items()}
        return tuple(FileStamp(p, v) for p, v in {**self._disk, **files}.items())


def source_view(read: SourceReader | None) -> SourceView | None:
    """``read`` as a :class:`SourceView` (unchanged when it already is one); None for the
    disk (``read`` None or :func:`read_from_disk`), which is versioned by ``stat``."""
    if isinstance(read, SourceView):
        return read
    if read is None or read is read_from_disk:
        return None
    return SourceView(read)


def file_version(path: str, view: SourceView | None) -> Version:
    """The version of ``path`` through ``view`` (the disk's when None; None when it is not a
    readable regular file)."""
    if view is not None:
        return view.version(path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_mtime_ns, st.st_size)


def is_current(stamp: FileStamp, view: SourceView | None) -> bool:
    """Whether ``stamp`` is still the version of its file through ``view``."""
    return file_version(stamp.path, view) == stamp.version
