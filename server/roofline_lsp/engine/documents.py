"""Open documents: their bytes, one tree-sitter tree each, re-parsed incrementally.

Every LSP change is applied to the UTF-8 bytes (positions converted by
``syntax/positions.py``), recorded as a byte edit and given to ``tree.edit``; the tree is
re-parsed (with the old tree, so tree-sitter reuses what did not change) only when it is
read -- when an analysis takes a :meth:`Document.snapshot` -- so a burst of keystrokes costs
one parse, not one each. tree-sitter holds the GIL while it parses, so a parse is given a
time budget (:data:`PARSE_BUDGET_S`, more for a large text): when the incremental parse runs
over it (a 150 kB line pasted into a file full of ``#if`` and ``<<<``) the text is parsed
afresh, and when that runs over too the document has no tree until its next edit (the
analysis says why, once). A change that inserts more than :data:`FRESH_PARSE_BYTES` is
parsed afresh at once. The byte edits are kept so that offsets of an older snapshot (the
last analysis) can be mapped to the current text. Pure: no LSP imports; the server passes
plain (line, character) tuples.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tree_sitter import Tree

from roofline_lsp.syntax.parsing import (
    LANGUAGE_IDS,
    is_source_path,
    language_for_path,
    parse_within,
)
from roofline_lsp.syntax.positions import Encoding, LineIndex, encode, ts_point

# A file with none of these byte strings has no kernel and no launch: it is never parsed
# (``Launch``: the launch APIs, cudaLaunchCooperativeKernel too; ``Graph``: a graph's kernel
# nodes; ``Pragma``: ``_Pragma`` operators)
KERNEL_MARKERS: tuple[bytes, ...] = (
    b"__global__",
    b"pragma",
    b"Pragma",
    b"<<<",
    b"Launch",
    b"Graph",
)

Position = tuple[int, int]  # LSP (line, character) in the negotiated encoding

PARSE_BUDGET_S = 0.5  # a parse of a small text is stopped after this long...
PARSE_BUDGET_S_PER_MB = 1.0  # ...plus this long per MB of text
FRESH_PARSE_BYTES = 64 * 1024  # edits inserting more than this are parsed afresh
# A document with a longer line (generated or minified code, a paste gone wrong) is not
# analysed: detection's recovery re-parses the file once per broken kernel it finds, and
# tree-sitter holds the GIL while it parses, so such a line would starve the server.
MAX_LINE_BYTES = 64 * 1024

log = logging.getLogger("roofline_lsp.documents")


@dataclass(frozen=True)
class Change:
    """One LSP content change: ``range`` None replaces the whole text."""

    text: str
    range: tuple[Position, Position] | None = None


@dataclass(frozen=True)
class ByteEdit:
    start: int
    old_end: int
    new_end: int


@dataclass(frozen=True)
class Snapshot:
    """What one analysis works on: never mutated after it is taken."""

    uri: str
    path: str
    version: int
    source: bytes
    tree: Tree | None = field(compare=False, repr=False)
    lines: LineIndex = field(compare=False, repr=False)
    seq: int  # how many edits the document had when this was taken


def uri_to_path(uri: str) -> str:
    """A file path for ``uri`` (``file:`` URIs) or the URI itself (``untitled:`` etc.)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        path = unquote(parsed.path)
        if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
            path = path[1:]  # pragma: no cover - Windows drive letters
        return path
    return uri


class Document:
    """One open document. Mutated only by :meth:`apply`; read by taking a :meth:`snapshot`."""

    def __init__(
        self,
        uri: str,
        text: str,
        version: int = 0,
        language_id: str = "",
        max_bytes: int = 4_000_000,
    ) -> None:
        self.uri = uri
        self.path = uri_to_path(uri)
        self.language_id = language_id
        self.version = version
        self.max_bytes = max_bytes
        self.source = encode(text)
        self._lines: LineIndex | None = None
        self._tree: Tree | None = None  # the last parse, edited since when ``_stale``
        self._stale = True  # the text changed since the last parse
        self._inserted = 0  # bytes inserted since the last parse
        self.parse_problem: str | None = None  # why there is no tree (parse over budget)
        self._long_line: bool | None = None  # a line over MAX_LINE_BYTES (None: not checked)
        self._edits: list[ByteEdit] = []
        self._edit_base = 0  # sequence number of self._edits[0]

    # -- what this document is ----------------------------------------------------------------
    @property
    def analysable_language(self) -> bool:
        return self.language_id in LANGUAGE_IDS or is_source_path(self.path)

    @property
    def too_large(self) -> bool:
        return len(self.source) > self.max_bytes

    @property
    def long_line(self) -> bool:
        """Whether a line is over :data:`MAX_LINE_BYTES` (checked once per text)."""
        if self._long_line is None:
            src = self.source
            self._long_line = len(src) > MAX_LINE_BYTES and any(
                len(line) > MAX_LINE_BYTES for line in src.split(b"\n")
            )
        return self._long_line

    @property
    def may_have_kernels(self) -> bool:
        """Cheap pre-check: files without any kernel marker cost almost nothing."""
        return any(m in self.source for m in KERNEL_MARKERS)

    @property
    def wants_tree(self) -> bool:
        return (
            self.analysable_language
            and not self.too_large
            and self.may_have_kernels
            and not self.long_line
        )

    @property
    def tree(self) -> Tree | None:
        """The syntax tree of the current text (parsed now if edits are pending); None when
        the document is not analysed or its parse ran over budget."""
        if self._stale:
            self.reparse()
        return self._tree

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex.of(self.source)
        return self._lines

    @property
    def seq(self) -> int:
        """The number of byte edits applied since the document was opened."""
        return self._edit_base + len(self._edits)

    # -- changes ------------------------------------------------------------------------------
    def apply(self, changes: list[Change], version: int, encoding: Encoding = "utf-16") -> None:
        """Apply the changes of one ``didChange`` in order (the tree is re-parsed when it is
        next read)."""
        for change in changes:
            if change.range is None:
                self._replace(0, len(self.source), encode(change.text), full=True)
                continue
            (l0, c0), (l1, c1) = change.range
            lines = self.lines
            start = lines.offset_at(l0, c0, encoding)
            end = lines.offset_at(l1, c1, encoding)
            if end < start:
                start, end = end, start
            self._replace(start, end, encode(change.text))
        self.version = version

    def _replace(self, start: int, end: int, new: bytes, full: bool = False) -> None:
        old = self.source
        data = old[:start] + new + old[end:]
        edit = ByteEdit(start, end, start + len(new))
        self._stale = True
        self._long_line = None
        self._inserted += len(new)
        if self._tree is not None:
            if full or self._inserted > FRESH_PARSE_BYTES:
                self._tree = None
            else:
                self._tree.edit(
                    start_byte=start,
                    old_end_byte=end,
                    new_end_byte=edit.new_end,
                    start_point=ts_point(old, start),
                    old_end_point=ts_point(old, end),
                    new_end_point=ts_point(data, edit.new_end),
                )
        if self._lines is not None and not full:
            self._lines = self._lines.edited(start, end, data)
        else:
            self._lines = None
        self.source = data
        self._edits.append(edit)

    def reparse(self) -> None:
        """Bring the tree up to date (incrementally when there is one, within the time
        budget), or drop it when this document is not analysed (too large, no kernel
        marker, not a source language)."""
        self._stale, self._inserted, self.parse_problem = False, 0, None
        if not self.wants_tree:
            self._tree = None
            return
        budget = PARSE_BUDGET_S + PARSE_BUDGET_S_PER_MB * len(self.source) / 1e6
        language = language_for_path(self.path)
        t0 = time.perf_counter()
        tree = None
        if self._tree is not None:
            tree = parse_within(self.source, budget, language, self._tree)
            if tree is None:
                log.warning(
                    "%s: incremental parse over %.1f s: parsing afresh",
                    os.path.basename(self.path),
                    budget,
                )
        if tree is None:
            tree = parse_within(self.source, budget, language)
        self._tree = tree
        if tree is None:
            self.parse_problem = (
                f"parsing {os.path.basename(self.path)} took over "
                f"{time.perf_counter() - t0:.1f} s: not analysed until the next edit"
            )
            log.warning("%s", self.parse_problem)

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """An immutable view for analysis; the tree is a copy, safe to read in another thread
        while this document keeps being edited."""
        tree = self.tree
        tree = tree.copy() if tree is not None else None
        return Snapshot(self.uri, self.path, self.version, self.source, tree, self.lines, self.seq)

    def offset_at(self, position: Position, encoding: Encoding = "utf-16") -> int:
        return self.lines.offset_at(position[0], position[1], encoding)

    def position_at(self, offset: int, encoding: Encoding = "utf-16") -> Position:
        return self.lines.position_at(offset, encoding)

    def map_offset(self, offset: int, since_seq: int) -> int:
        """Where byte ``offset`` of the text as it was after ``since_seq`` edits is now.

        An offset inside replaced text moves to the end of the replacement when it was at the
        replaced text's end, else to its start."""
        i = max(0, since_seq - self._edit_base)
        for e in self._edits[i:]:
            if offset >= e.old_end:
                offset += e.new_end - e.old_end
            elif offset > e.start:
                offset = e.start
        return offset

    def forget_edits_before(self, seq: int) -> None:
        """Drop edits no snapshot in use needs any more (the server calls this when a newer
        analysis replaces an older one)."""
        drop = max(0, min(seq - self._edit_base, len(self._edits)))
        if drop:
            del self._edits[:drop]
            self._edit_base += drop
