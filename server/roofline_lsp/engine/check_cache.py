"""``check``'s results cache: one file's rendered verdicts reused across runs while nothing they
depend on changed.

A file's entry is keyed on what is known before analysing it (:func:`file_key`): the run's key
(:func:`run_key`: the package version and its files, the whole ``Config``, the GPU profiles as
resolved, the measured profile's bytes, the compilers' paths and versions when compiling) and the
file's path, displayed path and bytes. The entry holds the files the analysis read besides it
(headers, siblings: recorded through a :class:`~roofline_lsp.syntax.sources.SourceView` over
the disk, versioned by a hash of their bytes) and, when the file was compiled, what chose and fed
the translation unit; it is served only while every one of them is unchanged
(:class:`Dependencies`), so an edited header invalidates every file that read it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from roofline_lsp import __version__
from roofline_lsp.compiler.compile_units import local_includes, project_flags, units_for
from roofline_lsp.compiler.toolchain import (
    clang_version,
    find_offload_clang,
    locate_nvcc,
    nvcc_version,
)
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.stamps import FileStamp
from roofline_lsp.store.cache import ResultCache
from roofline_lsp.syntax.sources import SourceView, read_from_disk

NAMESPACE = "check-v1"
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_TU_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")

Dep = list[Any]  # ["f", path, version] | ["tu", folder, digest] | ["flags", path, [flags]]


def results_cache(config: Config) -> ResultCache:
    """The results cache, in the cache directory (``--cache-dir``) beside the compile cache."""
    return ResultCache(directory=config.llm.cache_dir, namespace=NAMESPACE)


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little") + p)
    return h.hexdigest()


def _file_bytes(path: str | None) -> bytes:
    if not path:
        return b"-"
    data = read_from_disk(path)
    return b"?" if data is None else hashlib.sha256(data).digest()


def _package_stamp() -> bytes:
    """A hash of the package's own files: a source checkout whose code changed must not be
    answered from the results of the old code (content, not times: a checkout or a touch
    that changes nothing keeps the cache)."""
    h = hashlib.sha256()
    for root, dirs, names in os.walk(_PACKAGE_DIR, followlinks=True):  # grammars/
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith((".py", ".toml", ".scm", ".json")):
                p = os.path.join(root, n)
                data = read_from_disk(p) or b""
                h.update(os.path.relpath(p, _PACKAGE_DIR).encode() + b"\0")
                h.update(hashlib.sha256(data).digest())
    return h.digest()


def compiler_identity(config: Config) -> str:
    """The compilers the counts mode uses, as resolved: path and version ("" for source)."""
    if config.counts == "source":
        return ""
    nvcc, why = locate_nvcc(config.nvcc)
    clang = find_offload_clang(None)  # compiler and auto both compile OpenMP regions
    return (
        f"nvcc={nvcc}:{nvcc_version(nvcc) if nvcc else why}"
        f";clang={clang}:{clang_version(clang) if clang else ''}"
    )


def run_key(config: Config) -> str:
    """What every file's results depend on in this run (see the module docstring)."""
    registry = load_registry(config.gpu_profiles)
    names = list(config.gpus)
    for ov in config.overrides:
        for field in ("gpu", "compare_gpus"):
            v = ov.get(field)
            names += [v] if isinstance(v, str) else list(v or ())
    gpus = []
    for n in names:
        try:
            gpus.append(repr(registry.get(n)))
        except Exception:
            gpus.append(f"unknown:{n}")
    return _digest(
        [
            NAMESPACE.encode(),
            __version__.encode(),
            _package_stamp(),
            repr(config).encode(),
            "\n".join(gpus).encode(),
            _file_bytes(config.gpu_profiles),
            _file_bytes(config.profile),
            compiler_identity(config).encode(),
        ]
    )


def file_key(run: str, path: str, shown: str, source: bytes) -> str:
    return _digest([run.encode(), os.path.abspath(path).encode(), shown.encode(), source])


def read_deps(reads: Iterable[FileStamp]) -> list[Dep]:
    """The files an analysis read through a content-versioned view, as dependencies."""
    return sorted((["f", s.path, s.version] for s in reads), key=lambda d: str(d[1]))


def compile_deps(path: str, view: SourceView) -> list[Dep]:
    """What a compile of ``path`` depends on besides the compiler: the candidate translation
    units in its folder and the parent (they decide which unit includes it), the project
    flags and the local includes of each unit tried."""
    deps: list[Dep] = []
    target = os.path.abspath(path)
    for folder in dict.fromkeys(
        [os.path.dirname(target), os.path.dirname(os.path.dirname(target))]
    ):
        deps.append(["tu", folder, tu_digest(folder, view)])
    for unit in units_for(target)[:3]:
        flags = list(project_flags(unit))
        deps.append(["flags", unit, flags])
        data = view(unit)
        deps.append(["f", unit, view.version(unit)])
        if data is None:
            continue
        dirs = [os.path.dirname(unit)] + [
            os.path.abspath(flags[i + 1])
            for i, f in enumerate(flags[:-1])
            if f in ("-I", "-isystem")
        ]
        for inc, _ in local_includes(unit, data, dirs):
            deps.append(["f", inc, view.version(inc)])
    return deps


def tu_digest(folder: str, view: SourceView) -> str:
    """The names and contents of the translation-unit files directly in ``folder``."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(_TU_SUFFIXES))
    except OSError:
        return "-"
    parts: list[bytes] = []
    for n in names:
        p = os.path.join(folder, n)
        parts += [n.encode(), str(view.version(p)).encode()]
    return _digest(parts)


class Dependencies:
    """Checks recorded dependencies against the disk, each file hashed once per run."""

    def __init__(self) -> None:
        self.view = SourceView(read_from_disk)
        self._tu: dict[str, str] = {}
        self._flags: dict[str, list[str]] = {}

    def current(self, deps: Sequence[Any]) -> bool:
        for d in deps:
            if not isinstance(d, list) or len(d) != 3:
                return False
            kind, where, recorded = d
            if kind == "f":
                now: Any = self.view.version(where)
            elif kind == "tu":
                if where not in self._tu:
                    self._tu[where] = tu_digest(where, self.view)
                now = self._tu[where]
            elif kind == "flags":
                if where not in self._flags:
                    self._flags[where] = list(project_flags(where))
                now = self._flags[where]
            else:
                return False
            if now != recorded:
                return False
        return True
