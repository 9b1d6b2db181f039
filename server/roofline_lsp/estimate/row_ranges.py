"""Loops over one row of a compressed layout: the offsets array of a CSR matrix, a graph's
adjacency or a cell's item list bounds them, ``for (k = ptr[r]; k < ptr[r + 1]; k++)``
(also through locals, ``int beg = ptr[r], end = ptr[r + 1]``, and as ``j < ptr[r + 1] -
ptr[r]``).

Each row's count is data, but their sum is not: the rows split the items, so over the rows
a loop runs ``items / rows`` trips on average, with ``rows`` one less than the offsets'
length and ``items`` the length of what the loop variable indexes (``cols[k]``,
``vals[k]``). :func:`row_range` finds the offsets array and the arrays indexed by the loop
variable; the walker turns their allocated lengths into the average.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.syntax.expr import (
    LoopHeader,
    binary_operands,
    subscript_index,
    text,
    unparenthesized,
)

__all__ = ["RowRange", "row_range"]


@dataclass(frozen=True)
class RowRange:
    offsets: Node  # the offsets array (``ptr`` of ``ptr[r]``)
    items: tuple[Node, ...]  # the arrays the loop variable indexes (``cols``, ``vals``)


def row_range(hdr: LoopHeader, loop: Node) -> RowRange | None:
    """The offsets and item arrays of a loop over ``[ptr[e], ptr[e + 1])`` with step 1, or
    None for any other loop."""
    if hdr.var is None or hdr.step is not None or hdr.step_op != "+" or hdr.bound is None:
        return None
    if hdr.bound_op not in ("<", "!="):
        return None
    bound = _resolved(hdr.bound, loop)
    offsets: Node | None = None
    if hdr.start is not None and (start := _resolved(hdr.start, loop)) is not None:
        offsets = _consecutive(start, bound)
    difference = binary_operands(bound, ("-",)) if offsets is None and bound is not None else None
    if difference is not None and hdr.start is not None and text(hdr.start).strip() == "0":
        # ``j < ptr[r + 1] - ptr[r]`` from 0
        left, right = (_resolved(side, loop) for side in difference)
        offsets = _consecutive(right, left)
    if offsets is None:
        return None
    body = loop.child_by_field_name("body")
    items = tuple(_indexed_by(body, hdr.var)) if body is not None else ()
    return RowRange(offsets, items) if items else None


def _plain(node: Node | None) -> Node | None:
    """Without parentheses and casts."""
    while node is not None:
        node = unparenthesized(node)
        if node.type == "cast_expression":
            node = node.child_by_field_name("value")
            continue
        return node
    return None


def _resolved(node: Node | None, loop: Node) -> Node | None:
    """``node``, or the value a local named by it was last given before ``loop`` in the
    blocks around it (``int end = ptr[r + 1];``)."""
    node = _plain(node)
    if node is None or node.type != "identifier":
        return node
    name = text(node)
    child, block = loop, loop.parent
    while block is not None and block.type not in ("function_definition", "lambda_expression"):
        if block.type == "compound_statement":
            before = [c for c in block.named_children if c.end_byte <= child.start_byte]
            for stmt in reversed(before):
                found = _value_given(stmt, name)
                if found is not None:
                    return _plain(found)
        child, block = block, block.parent
    return node


def _value_given(stmt: Node, name: str) -> Node | None:
    if stmt.type == "declaration":
        for d in stmt.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator")
            if d.type == "init_declarator" and inner is not None and text(inner) == name:
                return d.child_by_field_name("value")
    elif stmt.type == "expression_statement" and stmt.named_children:
        e = stmt.named_children[0]
        left = e.child_by_field_name("left") if e.type == "assignment_expression" else None
        op = e.child_by_field_name("operator")
        if left is not None and op is not None and op.type == "=" and text(left) == name:
            return e.child_by_field_name("right")
    return None


def _consecutive(first: Node | None, second: Node | None) -> Node | None:
    """The array of ``first = a[e]`` and ``second = a[e + 1]``, else None."""
    if first is None or second is None:
        return None
    if first.type != "subscript_expression" or second.type != "subscript_expression":
        return None
    a, b = first.child_by_field_name("argument"), second.child_by_field_name("argument")
    if a is None or b is None or text(a) != text(b):
        return None
    i, j = _index(first), _index(second)
    if not i or not j:
        return None
    return a if j in (f"{i}+1", f"1+{i}", f"({i})+1") else None


def _index(sub: Node) -> str:
    """The index of ``a[e]`` as text without spaces (``r+1``)."""
    return text(subscript_index(sub)).replace(" ", "")


def _indexed_by(body: Node, var: str) -> list[Node]:
    """The arrays ``body`` subscripts with ``var`` or an offset plus it (``cols[k]``,
    ``vals[beg + m]``), first use first."""
    out: list[Node] = []
    seen: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        index = _index(n) if n.type == "subscript_expression" else ""
        if index == var or index.endswith(f"+{var}") or index.startswith(f"{var}+"):
            arr = n.child_by_field_name("argument")
            if arr is not None and text(arr) not in seen:
                seen.add(text(arr))
                out.append(arr)
        stack.extend(reversed(n.named_children))
    return out
