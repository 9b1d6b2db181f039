"""Tree-sitter queries the advice rules share: walking a subtree, names, calls, enclosing
loops and parents, and which names a kernel body may write.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from roofline_lsp.syntax.expr import text

SPECIAL_FUNCTIONS = frozenset(
    (  # noqa: SIM905
        "sin cos tan asin acos atan atan2 sinh cosh tanh exp exp2 exp10 expm1 log log2 log10 "
        "log1p pow sqrt cbrt erf erfc tgamma lgamma fmod hypot sincos sinf cosf tanf asinf "
        "acosf atanf atan2f sinhf coshf tanhf expf exp2f exp10f expm1f logf log2f log10f log1pf "
        "powf sqrtf cbrtf erff erfcf fmodf hypotf sincosf"
    ).split()
)
LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def walk(node: Node) -> Iterator[Node]:
    """All descendants of ``node`` (itself included) in document order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def identifiers(node: Node) -> set[str]:
    """Every identifier named in ``node``."""
    return {text(n) for n in walk(node) if n.type == "identifier"}


def root_identifier(node: Node | None) -> str | None:
    """``a`` for ``a``, ``a[i]``, ``a[i][j]``, ``*a``, ``a->x``, ``(a)``."""
    while node is not None:
        if node.type == "identifier":
            return text(node)
        if node.type in ("subscript_expression", "field_expression", "pointer_expression"):
            node = node.child_by_field_name("argument")
        elif node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        else:
            return None
    return None


def call_name(call: Node) -> str:
    """The called function's name without its namespace (``std::pow`` -> ``pow``)."""
    fn = call.child_by_field_name("function")
    name = text(fn)
    return name.rsplit("::", 1)[-1]


def call_args(call: Node) -> list[Node]:
    """The argument nodes of a call, comments left out."""
    args = call.child_by_field_name("arguments")
    return [a for a in (args.named_children if args else []) if a.type != "comment"]


def enclosing_loop(node: Node, stop: Node) -> Node | None:
    """The innermost loop around ``node`` inside ``stop`` (None when there is none)."""
    p = node.parent
    while p is not None and p != stop:
        if p.type in LOOPS:
            return p
        p = p.parent
    if stop.type in LOOPS:
        return stop
    return None


def first_line_span(source: bytes, node: Node) -> tuple[int, int]:
    """The node's span cut to its first line (diagnostics on the exact line)."""
    end = source.find(b"\n", node.start_byte, node.end_byte)
    return node.start_byte, (node.end_byte if end < 0 else end)


def declarator_name(d: Node | None) -> str | None:
    """The identifier a nested declarator declares: ``p`` for ``*p``, ``a[4]``, ``p = 0``."""
    while d is not None:
        if d.type == "identifier":
            return text(d)
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            ids = [c for c in d.named_children if c.type == "identifier"]
            return text(ids[0]) if ids else None
        d = nxt
    return None


def operator_text(node: Node) -> str:
    """The operator of a binary or assignment expression (``*``, ``+=``)."""
    op = node.child_by_field_name("operator")
    return text(op)


def parents(node: Node) -> Iterator[Node]:
    """The ancestors of ``node``, innermost first."""
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def is_pure(node: Node) -> bool:
    """No call, assignment or increment inside: safe to evaluate twice."""
    return not any(
        n.type in ("call_expression", "assignment_expression", "update_expression")
        for n in walk(node)
    )


def is_inner_subscript(n: Node) -> bool:
    """``a[i]`` inside ``a[i][j]``: only the outer one is checked."""
    return (
        n.parent is not None
        and n.parent.type == "subscript_expression"
        and (n.parent.child_by_field_name("argument") == n)
    )


def is_plain_assignment_target(n: Node) -> bool:
    """``n`` is the left side of a plain ``=`` (written, not read)."""
    p = n.parent
    if p is None:
        return False
    if p.type == "assignment_expression" and p.child_by_field_name("left") == n:
        return operator_text(p) == "="
    return False


def written_names(body: Node) -> set[str]:
    """Names whose memory the body may write: assigned, incremented, passed by address or
    passed bare to a call (conservative)."""
    out: set[str] = set()
    for n in walk(body):
        if n.type == "assignment_expression":
            name = root_identifier(n.child_by_field_name("left"))
            if name:
                out.add(name)
        elif n.type == "update_expression" or (
            n.type == "pointer_expression" and text(n).startswith("&")
        ):
            name = root_identifier(n.child_by_field_name("argument"))
            if name:
                out.add(name)
        elif n.type == "call_expression":
            fname = call_name(n)
            for a in call_args(n):
                if a.type == "identifier" and fname not in SPECIAL_FUNCTIONS:
                    out.add(text(a))
                elif fname.startswith("atomic") and a is call_args(n)[0]:
                    name = root_identifier(a)
                    if name:
                        out.add(name)
    return out


def line_starts(source: bytes) -> list[int]:
    """The byte offset where each line of ``source`` starts."""
    starts = [0]
    starts.extend(m.end() for m in re.finditer(rb"\n", source))
    return starts
