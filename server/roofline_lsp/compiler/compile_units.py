"""What to compile and with which flags: the project's ``-I/-D/-U/-isystem/-std`` flags (from a
``compile_commands.json`` or ``compile_flags.txt``), the local ``#include "..."`` files of a
source (they go into the compile cache key), and the translation unit to compile for a header
or a ``kernels.cu`` that only compiles inside ``main.cu`` (:func:`translation_unit_for`,
:func:`includers_of`)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from roofline_lsp.syntax.sources import (
    LOCAL_INCLUDE,
    fallback_folders,
    read_from_disk,
    user_folders,
)

__all__ = [
    "includers_of",
    "local_includes",
    "project_flags",
    "translation_unit_for",
    "units_for",
]

_KEEP_JOINED = ("-I", "-D", "-U", "-isystem", "-std=", "--std=", "-std", "--include-path=")


def _filter_flags(args: Sequence[str], base: str) -> list[str]:
    """Keep ``-I -D -U -isystem -std`` flags (joined or separate), include paths made absolute
    against ``base``; everything else (outputs, optimisation, arch, warnings) is dropped."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-I", "-isystem", "--include-path", "-D", "-U", "--define-macro"):
            if nxt is not None:
                flag = {"--include-path": "-I", "--define-macro": "-D"}.get(a, a)
                val = nxt
                if flag in ("-I", "-isystem"):
                    val = os.path.normpath(os.path.join(base, val))
                out += [flag, val]
            i += 2
            continue
        if a.startswith("--include-path="):
            out += ["-I", os.path.normpath(os.path.join(base, a.split("=", 1)[1]))]
        elif a.startswith("-isystem") and len(a) > len("-isystem"):
            out += ["-isystem", os.path.normpath(os.path.join(base, a[len("-isystem") :]))]
        elif a.startswith("-I") and len(a) > 2:
            out += ["-I", os.path.normpath(os.path.join(base, a[2:]))]
        elif (a.startswith("-D") or a.startswith("-U")) and len(a) > 2:
            out.append(a)
        elif a.startswith(("-std=", "--std=")):
            std = a.split("=", 1)[1].replace("gnu++", "c++")
            if std.startswith("c++"):
                out.append(f"-std={std}")
        i += 1
    return out


def project_flags(path: str, stop: str | None = None) -> tuple[str, ...]:
    """``-I/-D/-U/-isystem/-std`` flags for ``path`` from the nearest ``compile_commands.json``
    (its entry for the file, else one for a file in the same folder) or ``compile_flags.txt``
    found walking up from the file's folder (to ``stop`` or the filesystem root)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    stop_at = os.path.abspath(stop) if stop else None
    while True:
        for build in ("", "build"):
            cc = os.path.join(folder, build, "compile_commands.json")
            if os.path.isfile(cc):
                flags = _from_compile_commands(cc, target)
                if flags is not None:
                    return tuple(flags)
        cf = os.path.join(folder, "compile_flags.txt")
        if os.path.isfile(cf):
            try:
                lines = Path(cf).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            return tuple(_filter_flags([ln.strip() for ln in lines if ln.strip()], folder))
        parent = os.path.dirname(folder)
        if parent == folder or (stop_at and folder == stop_at):
            return ()
        folder = parent


def _from_compile_commands(cc: str, target: str) -> list[str] | None:
    try:
        entries = json.loads(Path(cc).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(entries, list):
        return None
    same_dir: list[str] | None = None
    for e in entries:
        if not isinstance(e, dict):
            continue
        directory = str(e.get("directory", os.path.dirname(cc)))
        file = os.path.normpath(os.path.join(directory, str(e.get("file", ""))))
        if "arguments" in e and isinstance(e["arguments"], list):
            args = [str(a) for a in e["arguments"]]
        else:
            try:
                args = shlex.split(str(e.get("command", "")))
            except ValueError:
                continue
        if file == target:
            return _filter_flags(args, directory)
        if same_dir is None and os.path.dirname(file) == os.path.dirname(target):
            same_dir = _filter_flags(args, directory)
    return same_dir


def local_includes(
    path: str, source: bytes, include_dirs: Sequence[str] = (), limit: int = 256
) -> list[tuple[str, bytes]]:
    """The ``#include "..."`` files reachable from ``source`` (transitively, up to ``limit``),
    resolved against the including file's folder then ``include_dirs``: ``(path, content)``."""
    seen: dict[str, bytes] = {}
    todo: list[tuple[str, bytes]] = [(os.path.abspath(path), source)]
    while todo and len(seen) < limit:
        cur, text = todo.pop()
        for m in LOCAL_INCLUDE.finditer(text):
            name = m.group(1).decode("utf-8", "replace")
            for d in (os.path.dirname(cur), *include_dirs):
                cand = os.path.normpath(os.path.join(d, name))
                if cand in seen:
                    break
                if os.path.isfile(cand):
                    data = read_from_disk(cand)  # a regular file only: never a FIFO
                    if data is None:
                        break
                    seen[cand] = data
                    todo.append((cand, data))
                    break
    return sorted(seen.items())


_TU_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".cuh", ".inc", ".inl", ".tpp")


def includers_of(path: str, max_files: int = 200) -> list[str]:
    """Source files (``.cu`` first) in the file's folder or its parent (a shared header
    folder's: its project's folders, :func:`user_folders`) whose local includes reach
    ``path`` (searched for in its folder too, as a build's ``-I../inc`` would), top-level
    ones first (files that no other candidate includes)."""
    target = os.path.abspath(path)
    here = os.path.dirname(target)
    folders = [*user_folders(here), os.path.dirname(here)]
    cands: list[str] = []
    for folder in dict.fromkeys(folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for suffix in _TU_SUFFIXES:
            cands += [os.path.join(folder, n) for n in names if n.endswith(suffix)]
    reach: dict[str, set[str]] = {}
    for cand in cands[:max_files]:
        if cand == target:
            continue
        data = read_from_disk(cand)  # a regular file only: never a FIFO
        if data is None or b"include" not in data:
            continue
        # (``<proj/defs.h>`` on a build's ``-I../include``: the header folders it would name)
        dirs = (here, *fallback_folders(os.path.dirname(cand)))
        incs = {p for p, _ in local_includes(cand, data, dirs)}
        if target in incs:
            reach[cand] = incs
    top = [c for c in reach if not any(c in other for o, other in reach.items() if o != c)]
    rest = [c for c in reach if c not in top]

    def rank(c: str) -> tuple[int, int, str]:
        return (0 if c.endswith(".cu") else 1, 0 if "main" in os.path.basename(c) else 1, c)

    return sorted(top, key=rank) + sorted(rest, key=rank)


def translation_unit_for(path: str) -> str | None:
    """The file to compile for the kernels of ``path``: the top-level source file that
    includes it (a ``kernels.cu`` or header pulled into ``main.cu`` does not compile alone),
    else ``path`` itself when it is a source file, else None (a header nobody includes)."""
    found = includers_of(path)
    if found:
        return found[0]
    if path.endswith(_TU_SUFFIXES):
        return os.path.abspath(path)
    return None


def units_for(path: str) -> list[str]:
    """The translation units to try for ``path``: the files including it (see
    :func:`includers_of`), else ``path`` itself when it is a source file."""
    target = os.path.abspath(path)
    units = includers_of(target)
    if target.endswith(_TU_SUFFIXES) and not units:
        return [target]
    return units
