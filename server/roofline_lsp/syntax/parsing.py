"""tree-sitter parsing: one CUDA/C++ grammar for every supported file, and the query files.

The CUDA grammar (tree-sitter-cuda) is a superset of the C++ one, so ``.cu``, ``.hip``,
``.cpp`` and ``.c`` files all parse with it; HIP and OpenMP sources are C++ with pragmas.
"""

from __future__ import annotations

import bisect
import functools
import os
import time
from importlib import resources

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Point, Query, QueryCursor, Range, Tree

from roofline_lsp.model.kernel import CaptureMemo

SOURCE_EXTENSIONS: tuple[str, ...] = (
    ".cu",
    ".cuh",
    ".cpp",
    ".cc",
    ".cxx",
    ".c",
    ".h",
    ".hpp",
    ".hip",
    ".inc",
)
# LSP language ids we analyse
LANGUAGE_IDS: frozenset[str] = frozenset({"cuda", "cuda-cpp", "cpp", "c", "hip"})


@functools.cache
def cuda_language() -> Language:
    return Language(tree_sitter_cuda.language())


def language_for_path(path: str) -> Language:
    """The grammar for a file. Every supported extension uses the CUDA grammar."""
    return cuda_language()


def is_source_path(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in SOURCE_EXTENSIONS


def new_parser(language: Language | None = None) -> Parser:
    return Parser(language or cuda_language())


def parse(source: bytes, language: Language | None = None, old_tree: Tree | None = None) -> Tree:
    """Parse ``source``; with ``old_tree`` (already ``edit``-ed) the parse is incremental."""
    parser = new_parser(language)
    if old_tree is not None:
        return parser.parse(source, old_tree)
    return parser.parse(source)


def parse_range(source: bytes, start: int, end: int, language: Language | None = None) -> Tree:
    """:func:`parse` of bytes ``start:end`` of ``source`` alone (the rest unread, so the cost
    is the range's), its nodes at their offsets and points in ``source``."""
    parser = new_parser(language)

    def point(at: int) -> Point:
        return Point(source.count(b"\n", 0, at), at - (source.rfind(b"\n", 0, at) + 1))

    parser.included_ranges = [Range(point(start), point(end), start, end)]
    return parser.parse(source)


def parse_within(
    source: bytes,
    budget_s: float,
    language: Language | None = None,
    old_tree: Tree | None = None,
) -> Tree | None:
    """:func:`parse` given about ``budget_s`` seconds: None when tree-sitter is still at it
    then (it holds the GIL while it parses, so an unbounded parse would freeze every other
    thread). The deadline is checked by tree-sitter's progress callback, which it calls as
    it advances through the text: a parse stuck in error recovery on one spot may run over
    the budget before it is stopped."""
    parser = new_parser(language)
    deadline = time.monotonic() + budget_s

    def read(offset: int, _point: Point) -> bytes:
        return source[offset : offset + _READ_CHUNK]

    def progress(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        if old_tree is None:
            return parser.parse(read, progress_callback=progress)
        return parser.parse(read, old_tree, progress_callback=progress)
    except ValueError:  # "Parsing failed": cancelled by the callback
        return None


_READ_CHUNK = 1 << 16


@functools.cache
def query(*names: str) -> Query:
    """Load ``grammars/<name>.scm`` files (shipped inside the package) as one compiled query.

    Several files make one query so that the tree is walked once: a query's cost is mostly
    the walk (~25 ms for a 5,000-line file), whatever its number of patterns.
    """
    grammars = resources.files("roofline_lsp.syntax").joinpath("grammars")
    text = "\n".join(grammars.joinpath(f"{n}.scm").read_text("utf-8") for n in names)
    return Query(cuda_language(), text)


def captures(names: str | tuple[str, ...], node: Node) -> dict[str, list[Node]]:
    """Run the query (or queries) ``names`` on ``node``: capture name -> nodes in document
    order."""
    q = query(names) if isinstance(names, str) else query(*names)
    result = QueryCursor(q).captures(node)
    return {k: sorted(v, key=lambda n: n.start_byte) for k, v in result.items()}


def top_level_captures(
    names: tuple[str, ...], root: Node, source: bytes, memo: CaptureMemo | None = None
) -> tuple[dict[str, list[Node]], CaptureMemo]:
    """:func:`captures` of ``names`` on a whole file, walking only the top-level nodes whose
    text is not in ``memo`` (what the previous call returned): the captures of an unchanged
    function are found again by their offsets, so an edit costs a walk of the nodes it
    touched, not of the file. Nodes with parse errors are always walked (error recovery
    may differ for the same text). Returns the captures and the memo for the next call."""
    children = root.children
    out: dict[str, list[Node]] = {}
    new_memo: CaptureMemo = {}
    walk: list[int] = []  # indices of the children to walk
    for i, child in enumerate(children):
        key = (root.type, child.type, source[child.start_byte : child.end_byte])
        hit = memo.get(key) if memo and not child.has_error else None
        found = _relocate(child, hit) if hit is not None else None
        if hit is None or found is None:
            walk.append(i)
            continue
        new_memo[key] = hit
        for cap, node in found:
            out.setdefault(cap, []).append(node)
    starts = [c.start_byte for c in children]
    caught: dict[int, list[tuple[str, Node]]] = {i: [] for i in walk}
    for first, last in _runs(walk):
        lo, hi = starts[first], children[last].end_byte
        cursor = QueryCursor(query(*names))
        if len(walk) < len(children):
            cursor.set_byte_range(lo, hi)
        for cap, nodes in cursor.captures(root).items():
            for node in nodes:
                if lo <= node.start_byte and node.end_byte <= hi:
                    i = bisect.bisect_right(starts, node.start_byte, first, last + 1) - 1
                    caught[i].append((cap, node))
    for i, caps in caught.items():
        child = children[i]
        for cap, node in caps:
            out.setdefault(cap, []).append(node)
        s, e = child.start_byte, child.end_byte
        if not child.has_error and all(n.end_byte <= e for _, n in caps):
            new_memo[(root.type, child.type, source[s:e])] = tuple(
                (cap, n.start_byte - s, n.end_byte - s, n.type) for cap, n in caps
            )
    return {k: sorted(v, key=lambda n: n.start_byte) for k, v in out.items()}, new_memo


def _relocate(
    child: Node, entries: tuple[tuple[str, int, int, str], ...]
) -> list[tuple[str, Node]] | None:
    """The nodes of ``entries`` inside ``child`` (None when one is not there)."""
    base = child.start_byte
    found = []
    for cap, s, e, type_ in entries:
        node: Node | None = child.descendant_for_byte_range(base + s, base + e)
        while node is not None and node.type != type_:
            node = node.parent
        if node is None or node.start_byte != base + s or node.end_byte != base + e:
            return None
        found.append((cap, node))
    return found


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive indices as (first, last) pairs."""
    runs: list[tuple[int, int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs
