"""Kernel detection: CUDA/HIP ``__global__`` functions, OpenMP and OpenACC offload regions.

Pure analysis: knows nothing of LSP. Works on a tree-sitter tree (see ``parsing.py``) and the
bytes it was parsed from; ``detect`` walks one file with a :class:`Detector` and follows its
local ``#include "..."`` headers, read through a ``sources.SourceReader`` (the disk by
default) and cached by path and version (modification time and size on disk, a hash of the
bytes through a reader), each entry valid while the headers it included in turn are current.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace

from tree_sitter import Node, Tree

from roofline_lsp.detect.detector import LAUNCH_API, MAX_INCLUDE_DEPTH, Detector, api_launch_form
from roofline_lsp.detect.pragmas import is_pragma, pragma_text
from roofline_lsp.model.kernel import Detection, DetectMemo
from roofline_lsp.model.stamps import FileStamp, Version
from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.parsing import language_for_path, parse, top_level_captures
from roofline_lsp.syntax.sources import (
    SourceReader,
    SourceView,
    file_version,
    is_current,
    read_from_disk,
    source_view,
)

MAX_INCLUDE_BYTES = 2_000_000
MAX_HEADERS = 2048

_including = threading.local()  # headers being read on this thread (include cycles, reads)


@dataclass(frozen=True)
class _Header:
    """What detection found in one version of a header, and every header it read in turn
    (with their versions: the entry is valid while they are current)."""

    detection: Detection | None
    reads: tuple[FileStamp, ...]


# (header path, its version) -> what detection found in it
_HEADERS: dict[tuple[str, Version], _Header] = {}
_HEADERS_LOCK = threading.Lock()


def clear_header_cache() -> None:
    """Forget every header detected (benchmarks measure a cold start with it)."""
    with _HEADERS_LOCK:
        _HEADERS.clear()


def _noted() -> list[list[FileStamp]]:
    """The stack of the files read by the detections in progress on this thread."""
    stack: list[list[FileStamp]] = _including.__dict__.setdefault("reads", [])
    return stack


def _note(reads: tuple[FileStamp, ...]) -> None:
    stack = _noted()
    if stack:
        stack[-1].extend(reads)


def _read_header(path: str, view: SourceView | None) -> Detection | None:
    data = read_from_disk(path, MAX_INCLUDE_BYTES + 1) if view is None else view(path)
    if data is None or len(data) > MAX_INCLUDE_BYTES or b"\0" in data[:8192]:
        return None
    return _detect(data, path, None, 1, None, view)


def _header_definitions(path: str, depth: int, view: SourceView | None) -> Detection | None:
    busy: set[str] = _including.__dict__.setdefault("paths", set())
    if depth >= MAX_INCLUDE_DEPTH or path in busy:
        return None
    version = file_version(path, view)
    _note((FileStamp(path, version),))
    if version is None:
        return None
    entry = _HEADERS.get((path, version))
    if entry is None or not all(is_current(s, view) for s in entry.reads):
        busy.add(path)
        stack = _noted()
        stack.append([])
        try:
            detection = _read_header(path, view)
        finally:
            busy.discard(path)
            reads = stack.pop()
        entry = _Header(detection, tuple(dict.fromkeys(reads)))
        with _HEADERS_LOCK:
            if len(_HEADERS) >= MAX_HEADERS:
                del _HEADERS[next(iter(_HEADERS))]
            _HEADERS[(path, version)] = entry
    _note(entry.reads)
    return entry.detection


# what detection needs to find a kernel in a file: ``__global__``, a pragma (a ``_Pragma``
# operator too), or a local ``#include "..."`` (a header's macro may stand for ``__global__``
# or a pragma, or the header be a kernel)
_KERNEL_MARKS = re.compile(rb'__global__|[pP]ragma|include\s*"')


def may_hold_kernels(source: bytes) -> bool:
    """False when :func:`detect` cannot find a kernel in ``source`` whatever its context:
    ``check`` then skips the parse (a quarter of a typical tree's bytes are such headers
    and host files)."""
    return _KERNEL_MARKS.search(source) is not None


def detect(
    source: bytes,
    path: str,
    tree: Tree | None = None,
    previous: Detection | None = None,
    *,
    read: SourceReader | None = None,
) -> Detection:
    """Every kernel, launch site, data region and callable function of one file.

    ``tree`` is a tree already parsed from ``source`` (the server keeps one per document);
    local headers (``#include "x.h"``) are read relative to ``path`` through ``read`` (an
    open buffer's unsaved bytes first, say), from disk without it.
    ``previous`` is the detection of an earlier version of the same document: what did not
    change is found again from its memo instead of re-walked (the same result, faster).
    """
    return detect_with_reads(source, path, tree, previous, read=read)[0]


def detect_with_reads(
    source: bytes,
    path: str,
    tree: Tree | None = None,
    previous: Detection | None = None,
    *,
    read: SourceReader | None = None,
) -> tuple[Detection, tuple[FileStamp, ...]]:
    """:func:`detect`, and the headers it read (each once, with the version read: a
    verdict of the file may change when one of them is no longer current)."""
    stack = _noted()
    stack.append([])
    try:
        detection = _detect(
            source,
            path,
            tree,
            0,
            previous.memo if previous is not None else None,
            source_view(read),
        )
    finally:
        reads = stack.pop()
    return detection, tuple(dict.fromkeys(reads))


def _detect(
    source: bytes,
    path: str,
    tree: Tree | None,
    depth: int,
    old: DetectMemo | None,
    view: SourceView | None,
) -> Detection:
    if tree is None:
        tree = parse(source, language_for_path(path))

    def include(header: str, header_depth: int) -> Detection | None:
        return _header_definitions(header, header_depth, view)

    d = Detector(source, path, tree, include, depth, old)
    root = tree.root_node
    caps, d.memo.captures = top_level_captures(
        ("cuda-kernels", "cuda-definitions"), root, source, old.captures if old else None
    )
    d.definitions(caps)
    pragma_lines = [(p, pragma_text(p)) for p in caps.get("pragma", []) if is_pragma(p)]
    d.pragmas(pragma_lines + d.pragma_operators(root))
    for fn in caps.get("function", []):
        d.function(fn)
    d.recover_macros()
    if root.has_error:
        d.recover()
    for call in caps.get("launch", []):
        d.launch(call, "chevron")
    d.macro_launches(root)
    d.helper_launches(root)
    for call in _api_calls(source, root):
        form = api_launch_form(text(call.child_by_field_name("function")))
        if form is not None:
            d.launch(call, form)
    kernels = sorted(d.kernels, key=lambda k: k.span.start_byte)
    kernels = [replace(k, callees=d.callees(k.body)) for k in kernels]
    callers: dict[str, list[str]] = {}
    for func in d.functions.values():
        body = func.node.child_by_field_name("body") if func.file == path else None
        for name in set(d.calls_in(body)) if body is not None else ():
            callers.setdefault(name, []).append(func.name)
    return Detection(
        file=path,
        kernels=tuple(kernels),
        functions=d.functions,
        macros=d.macros,
        constants=d.constants,
        constant_types=d.constant_types,
        # in the order they appear (chevrons, launching macros and the launch APIs are found
        # apart): the first launch of a kernel is the one a profiler sees first
        launches=tuple(sorted(d.launches, key=lambda s: (s.file != path, s.span.start_byte))),
        data_regions=tuple(d.data_regions),
        source=source,
        callers={k: tuple(v) for k, v in callers.items()},
        memo=d.memo,
    )


def _api_calls(source: bytes, root: Node) -> list[Node]:
    """``hipLaunchKernelGGL(...)``/``cudaLaunchKernel(...)`` calls (with explicit template
    arguments too: ``cudaLaunchKernelEx<float *>(...)``), found by their name's text first
    (a query predicate over every call is far slower)."""
    calls: list[Node] = []
    if b"Launch" not in source and b"Graph" not in source:  # (cudaLaunchKernel, ...)
        return calls
    for m in LAUNCH_API.finditer(source):
        node = root.descendant_for_byte_range(m.start(1), m.end(1))
        if node is None or node.type != "identifier":
            continue
        call = node.parent
        if call is not None and call.type == "template_function":
            call = call.parent
        if call is not None and call.type == "call_expression":
            calls.append(call)
    return calls
