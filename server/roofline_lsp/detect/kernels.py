"""Kernel detection: CUDA/HIP ``__global__`` functions, OpenMP and OpenACC offload regions.

Pure analysis: knows nothing of LSP. Works on a tree-sitter tree (see ``parsing.py``) and the
bytes it was parsed from; ``detect`` walks one file with a :class:`Detector` and follows its
local ``#include "..."`` headers (read from disk, cached by path and modification time).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import replace

from tree_sitter import Node, Tree

from roofline_lsp.detect.detector import MAX_INCLUDE_DEPTH, Detector
from roofline_lsp.detect.pragmas import is_pragma
from roofline_lsp.model.kernel import Detection, DetectMemo
from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.parsing import language_for_path, parse, top_level_captures

MAX_INCLUDE_BYTES = 2_000_000

_including = threading.local()  # headers being read on this thread (include cycles)


@functools.lru_cache(maxsize=2048)
def _header_cached(path: str, mtime_ns: int, size: int) -> Detection | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INCLUDE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_INCLUDE_BYTES or b"\0" in data[:8192]:
        return None
    return _detect(data, path, None, 1)


def _header_definitions(path: str, depth: int) -> Detection | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    busy: set[str] = _including.__dict__.setdefault("paths", set())
    if depth >= MAX_INCLUDE_DEPTH or path in busy:
        return None
    busy.add(path)
    try:
        return _header_cached(path, st.st_mtime_ns, st.st_size)
    finally:
        busy.discard(path)


def detect(
    source: bytes, path: str, tree: Tree | None = None, previous: Detection | None = None
) -> Detection:
    """Every kernel, launch site, data region and callable function of one file.

    ``tree`` is a tree already parsed from ``source`` (the server keeps one per document);
    local headers (``#include "x.h"``) are read from disk relative to ``path``.
    ``previous`` is the detection of an earlier version of the same document: what did not
    change is found again from its memo instead of re-walked (the same result, faster).
    """
    return _detect(source, path, tree, 0, previous.memo if previous is not None else None)


def _detect(
    source: bytes, path: str, tree: Tree | None, depth: int, old: DetectMemo | None = None
) -> Detection:
    if tree is None:
        tree = parse(source, language_for_path(path))
    d = Detector(source, path, tree, _header_definitions, depth, old)
    root = tree.root_node
    caps, d.memo.captures = top_level_captures(
        ("cuda-kernels", "cuda-definitions"), root, source, old.captures if old else None
    )
    d.definitions(caps)
    d.pragmas([p for p in caps.get("pragma", []) if is_pragma(p)])
    for fn in caps.get("function", []):
        d.function(fn)
    d.recover_macros()
    if root.has_error:
        d.recover()
    for call in caps.get("launch", []):
        d.launch(call, "chevron")
    for call in _api_calls(source, root):
        fname = text(call.child_by_field_name("function"))
        d.launch(call, "cudaLaunchKernel" if fname != "hipLaunchKernelGGL" else fname)
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
        launches=tuple(d.launches),
        data_regions=tuple(d.data_regions),
        source=source,
        callers={k: tuple(v) for k, v in callers.items()},
        memo=d.memo,
    )


_LAUNCH_API = re.compile(rb"\b(hipLaunchKernelGGL|cudaLaunchKernel|hipLaunchKernel)\s*\(")


def _api_calls(source: bytes, root: Node) -> list[Node]:
    """``hipLaunchKernelGGL(...)``/``cudaLaunchKernel(...)`` calls, found by their name's
    text first (a query predicate over every call is far slower)."""
    calls: list[Node] = []
    if b"LaunchKernel" not in source:
        return calls
    for m in _LAUNCH_API.finditer(source):
        node = root.descendant_for_byte_range(m.start(1), m.end(1))
        if node is not None and node.type == "identifier":
            call = node.parent
            if call is not None and call.type == "call_expression":
                calls.append(call)
    return calls
