"""Open documents: their bytes, one tree-sitter tree each, re-parsed incrementally.

Every LSP change is applied to the UTF-8 bytes (positions converted by
``syntax/positions.py``), recorded as a byte edit, given to ``tree.edit`` and, once all the
changes of a notification are in,
the tree is re-parsed with the old tree so tree-sitter reuses what did not change. The byte
edits are kept so that offsets of an older snapshot (the last analysis) can be mapped to the
current text. Pure: no LSP imports; the server passes plain (line, character) tuples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from tree_sitter import Tree

from roofline_lsp.syntax.parsing import LANGUAGE_IDS, is_source_path, language_for_path, parse
from roofline_lsp.syntax.positions import Encoding, LineIndex, encode, ts_point

# A file with none of these byte strings has no kernel and no launch: it is never parsed.
KERNEL_MARKERS: tuple[bytes, ...] = (b"__global__", b"pragma", b"<<<", b"LaunchKernel")

Position = tuple[int, int]  # LSP (line, character) in the negotiated encoding


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
        self.tree: Tree | None = None
        self._edits: list[ByteEdit] = []
        self._edit_base = 0  # sequence number of self._edits[0]
        self.reparse()

    # -- what this document is ----------------------------------------------------------------
    @property
    def analysable_language(self) -> bool:
        return self.language_id in LANGUAGE_IDS or is_source_path(self.path)

    @property
    def too_large(self) -> bool:
        return len(self.source) > self.max_bytes

    @property
    def may_have_kernels(self) -> bool:
        """Cheap pre-check: files without any kernel marker cost almost nothing."""
        return any(m in self.source for m in KERNEL_MARKERS)

    @property
    def wants_tree(self) -> bool:
        return self.analysable_language and not self.too_large and self.may_have_kernels

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
        """Apply the changes of one ``didChange`` in order, then re-parse incrementally."""
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
        self.reparse()

    def _replace(self, start: int, end: int, new: bytes, full: bool = False) -> None:
        old = self.source
        data = old[:start] + new + old[end:]
        edit = ByteEdit(start, end, start + len(new))
        if self.tree is not None:
            if full:
                self.tree = None
            else:
                self.tree.edit(
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
        """Bring the tree up to date (incrementally when there is one), or drop it when this
        document is not analysed (too large, no kernel marker, not a source language)."""
        if not self.wants_tree:
            self.tree = None
            return
        self.tree = parse(self.source, language_for_path(self.path), self.tree)

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """An immutable view for analysis; the tree is a copy, safe to read in another thread
        while this document keeps being edited."""
        tree = self.tree.copy() if self.tree is not None else None
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
