"""Macro expansion for the counter: substitution of a function-like macro's arguments,
parsing of the expansion (an expression or statements) and loop-header macros
(``KERNEL_LOOP(i, n) { body }``)."""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.parsing import parse


def substitute_macro(body: str, params: tuple[str, ...], args: list[str]) -> str:
    body = body.replace("\\\n", " ")
    if not params:
        return body
    mapping = {}
    for i, p in enumerate(params):
        if p == "...":
            mapping["__VA_ARGS__"] = ", ".join(args[i:])
        elif i < len(args):
            mapping[p] = args[i]
    if not mapping:
        return body
    # ``((x)*(n)+(y))`` with variables for x, n, y: ``(n)+(y)`` parses as a cast of ``+(y)``
    # to a type ``n``, so a parameter's parentheses go when its argument is a plain name or
    # number (not a type: ``((T)(v))`` stays a cast), unless they are a call's
    # (``static_cast<float>(x)``, ``f(x)``, ``a[i](x)``)
    bare = "|".join(re.escape(p) for p, a in mapping.items() if _plain_value(a))
    if bare:

        def unwrap(m: re.Match[str]) -> str:
            before = body[: m.start()].rstrip()
            if before and (before[-1].isalnum() or before[-1] in "_>])"):
                return m.group(0)
            return f" {m.group(1)} "

        body = re.sub(r"\(\s*(" + bare + r")\s*\)", unwrap, body)
    pattern = re.compile(r"#?\b(" + "|".join(re.escape(p) for p in mapping) + r")\b")

    def rep(m: re.Match[str]) -> str:
        if m.group(0).startswith("#"):
            return '""'
        return mapping[m.group(1)]  # literal, as the preprocessor does

    return pattern.sub(rep, body).replace("##", "")


_TYPE_WORD = re.compile(
    r"(?:unsigned|signed|float|double|int|long|short|char|bool|void|size_t|half|__half|"
    r"u?int\d+_t|(?:u?int|float|double|u?char|u?short|u?long)\d)"
)


def _plain_value(arg: str) -> bool:
    """A macro argument that is a name or a number, and no type; or a name followed by
    subscripts and members (``a[k]``, ``p[i].x``, ``q->v[j]``): a postfix expression binds
    tighter than any operator around it, and in parentheses ``(a[i]) - (a[k])`` parses as a
    cast of ``-(a[k])`` to an array type ``a[i]``."""
    a = arg.strip()
    if re.fullmatch(r"[A-Za-z_]\w*|\d[\w.]*", a):
        return not _TYPE_WORD.fullmatch(a)
    m = re.match(r"[A-Za-z_]\w*", a)
    return m is not None and not _TYPE_WORD.fullmatch(m.group(0)) and _postfix_only(a[m.end() :])


def _postfix_only(rest: str) -> bool:
    """Whether ``rest`` is nothing but ``[...]`` subscripts (brackets balanced) and ``.f`` /
    ``->f`` members."""
    i = 0
    while i < len(rest):
        if rest[i].isspace():
            i += 1
        elif rest[i] == "[":
            depth = 0
            for j in range(i, len(rest)):
                depth += {"[": 1, "]": -1}.get(rest[j], 0)
                if depth == 0:
                    break
            if depth != 0:
                return False
            i = j + 1
        elif (m := re.match(r"(?:\.|->)\s*[A-Za-z_]\w*", rest[i:])) is not None:
            i += m.end()
        else:
            return False
    return bool(rest.strip())


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


def macro_tree(body: str, expression: bool) -> Node | None:
    """Parse a macro expansion: an expression (``(x)*(x)``) or statements."""
    key = (body, expression)
    if key in _MACRO_CACHE:
        return _MACRO_CACHE[key]
    node: Node | None = None
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
