"""Editing a parsed source as the server does: replace bytes, ``tree.edit``, re-parse."""

from __future__ import annotations

from tree_sitter import Tree

from roofline_lsp.syntax.parsing import parse
from roofline_lsp.syntax.positions import ts_point

# what random edits insert: text, line breaks, unbalanced braces, declarations, launches
SNIPPETS = ["\n", "x", "}", "{", "int q = 3;\n", "#define FOO 4\n", "/*", "k<<<1, 32>>>(p);\n"]


def edited(source: bytes, tree: Tree, start: int, end: int, new: bytes) -> tuple[bytes, Tree]:
    """``source`` with bytes start..end replaced by ``new``, re-parsed incrementally."""
    data = source[:start] + new + source[end:]
    tree.edit(
        start_byte=start,
        old_end_byte=end,
        new_end_byte=start + len(new),
        start_point=ts_point(source, start),
        old_end_point=ts_point(source, end),
        new_end_point=ts_point(data, start + len(new)),
    )
    return data, parse(data, None, tree)
