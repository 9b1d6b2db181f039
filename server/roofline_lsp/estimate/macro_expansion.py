"""Macro expansion for the counter: substitution of a function-like macro's arguments,
parsing of the expansion (an expression or statements) and loop-header macros
(``KERNEL_LOOP(i, n) { body }``)."""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.macro_substitution import substitute_macro
from roofline_lsp.syntax.parsing import parse

_LOOP_MACRO_CACHE: dict[str, Node | None] = {}


def loop_macro(
    stmt: Node, nxt: Node, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> Node | None:
    """``KERNEL_LOOP(i, n) { body }``: a call of a macro that expands to a loop header,
    which the parser sees as a statement without ``;`` followed by the body. Returns the
    re-parsed loop (rows aligned with the source) or None."""
    raw = text(stmt).rstrip()
    if raw.endswith(";") or not stmt.named_children:
        return None
    call = stmt.named_children[0]
    if call.type != "call_expression":
        return None
    name = text(call.child_by_field_name("function"))
    m = macros.get(name)
    if m is None or m[0] is None:
        return None
    body = m[1].replace("\\\n", " ").strip()
    if not body.startswith(("for", "while")):
        return None
    args_node = call.child_by_field_name("arguments")
    args = [text(a) for a in (args_node.named_children if args_node else [])]
    expanded = substitute_macro(body, m[0], args).replace("\n", " ")
    row = stmt.start_point.row
    gap = nxt.start_point.row - stmt.end_point.row
    src = (
        "\n" * row
        + "void __m__(){"
        + expanded
        + "\n" * gap
        + " " * nxt.start_point.column
        + text(nxt)
        + "}"
    )
    if src in _LOOP_MACRO_CACHE:
        return _LOOP_MACRO_CACHE[src]
    tree = parse(src.encode())
    fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
    b = fn.child_by_field_name("body") if fn is not None else None
    loop = b.named_children[0] if b is not None and b.named_children else None
    if loop is not None and loop.type not in ("for_statement", "while_statement"):
        loop = None
    if len(_LOOP_MACRO_CACHE) > 1024:
        _LOOP_MACRO_CACHE.clear()
    _LOOP_MACRO_CACHE[src] = loop
    return loop


_MACRO_CACHE: dict[tuple[str, bool], Node | None] = {}


_TYPEOF = re.compile(r"\b(?:__typeof__|__typeof|typeof)\s*\([^()]*\)")


def macro_tree(body: str, expression: bool) -> Node | None:
    """Parse a macro expansion: an expression (``(x)*(x)``) or statements."""
    key = (body, expression)
    if key in _MACRO_CACHE:
        return _MACRO_CACHE[key]
    node: Node | None = None
    # ``__typeof__(x) _x = (x);`` in a statement expression: the grammar has no typeof
    body = _TYPEOF.sub("auto", body)
    if len(body) < 4000 and body.strip():
        if expression:
            src = ("void __m__(void) { __r__ = (" + body + "); }").encode()
        else:
            src = ("void __m__(void) { " + body + " ; }").encode()
        tree = parse(src)
        fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
        bodyn = fn.child_by_field_name("body") if fn is not None else None
        if bodyn is not None and not bodyn.has_error:
            if expression:
                st = bodyn.named_children[0] if bodyn.named_children else None
                e = st.named_children[0] if st is not None and st.named_children else None
                r = e.child_by_field_name("right") if e is not None else None
                node = r
            else:
                node = bodyn
    if len(_MACRO_CACHE) > 4096:
        _MACRO_CACHE.clear()
    _MACRO_CACHE[key] = node
    return node


def call_tree(
    params: tuple[str, ...], body: str, args: list[Node], expression: bool
) -> Node | None:
    """The parse of a function-like macro's expansion for the call arguments ``args``."""
    return macro_tree(substitute_macro(body, params, [text(a) for a in args]), expression)
