"""Macro expansion for the counter: substitution of a function-like macro's arguments,
parsing of the expansion (an expression or statements), loop-header macros
(``KERNEL_LOOP(i, n) { body }``), statement macros the parser cannot take as a call
(``REP16(x = x * y + z; y = y * x + z;)``, expanded in full as the preprocessor would) and
``_Pragma`` operators standing as statements (``UNROLL for (...)``)."""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.detect.pragmas import pragma_lines, pragma_operator
from roofline_lsp.detect.textscan import skip_blank, statement_end
from roofline_lsp.syntax.cexpr import split_args
from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.macro_substitution import substitute_macro
from roofline_lsp.syntax.parsing import parse


def _loop_header(
    raw: str, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> tuple[int, tuple[str, ...], str] | None:
    """A call of a function-like macro that expands to a loop header at the start of
    ``raw``: where its name ends, its parameters and its header's text; else None."""
    first = _NAME.match(raw)
    m = macros.get(first.group(0)) if first is not None else None
    if first is None or m is None or m[0] is None:
        return None
    header = m[1].replace("\\\n", " ").strip()
    return (first.end(), m[0], header) if header.startswith(("for", "while")) else None


# the nodes a loop-header macro's statement parses as (``loop_macro``)
LOOP_MACRO_STATEMENTS = ("expression_statement", "function_definition", "ERROR")


def loop_macro(
    stmt: Node, nxt: Node | None, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> tuple[Node, bool] | None:
    """``KERNEL_LOOP(i, n) { body }``: a call of a macro that expands to a loop header. The
    parser sees a statement without ``;`` followed by the body ``nxt``; or, when the
    arguments are all names (``CUDA_KERNEL_LOOP(index, n) { ... }``), a function
    definition nested in the block, the call its declarator; or, for a body of one
    statement (``FOR_ALL(i, n) y[i] = 0;``), one broken statement holding both. Returns the
    re-parsed loop (rows aligned with the source) and whether it took ``nxt`` as its body;
    None for any other statement."""
    raw = text(stmt).rstrip()
    found = _loop_header(raw, macros)
    if found is None:
        return None
    name_end, params, header = found
    j = _past_space(raw, name_end)
    close = _closing(raw, j) if raw[j : j + 1] == "(" else None
    if close is None:
        return None
    rest = raw[close:].strip()
    if rest == ";":
        return None  # a call: ``LOOP(i, n);``
    if rest:  # the body follows the call in the same node
        gap, column, body = raw[:close].count("\n"), 0, raw[close:]
    elif nxt is not None and stmt.type == "expression_statement":
        gap = nxt.start_point.row - stmt.end_point.row
        column, body = nxt.start_point.column, text(nxt)
    else:
        return None  # a header with no body after it
    if _loop_header(body.lstrip(), macros) is not None:
        # a loop macro's body that is another (``LOOP(i, n) LOOP(j, n) a[i][j] = 0;``):
        # expanded in full, as the preprocessor would
        body = expand_text(body, macros) or body
    expanded = substitute_macro(header, params, split_args(raw[j + 1 : close - 1]))
    row = stmt.start_point.row
    src = (
        "\n" * row
        + "void __m__(){"
        + expanded.replace("\n", " ")
        + "\n" * gap
        + " " * column
        + body
        + "}"
    )
    kids = _reparsed(src)
    loop = kids[0] if kids and kids[0].type in ("for_statement", "while_statement") else None
    return (loop, not rest) if loop is not None else None


def pragma_statement(
    stmt: Node, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> tuple[str, Node | None, int] | None:
    """A ``_Pragma`` operator standing as a statement: written out (``_Pragma("unroll")``),
    through a function-like macro (``PRAGMA(unroll 4)``) or an object-like one (``UNROLL``
    with ``#define UNROLL _Pragma("unroll")``). Returns its directive (``unroll 4``), and
    for an object-like macro, which the parser takes with the code after it for a
    declaration (``UNROLL for (int k = 0;``), the statement after it parsed again (rows
    aligned with the source) and the byte where that statement ends; None for any other
    statement."""
    if stmt.type == "declaration":
        head = stmt.child_by_field_name("type")
    elif stmt.type in ("expression_statement", "ERROR") and stmt.named_children:
        head = stmt.named_children[0]
        head = head.child_by_field_name("function") or head
    else:
        return None
    if head is None or head.type not in ("identifier", "type_identifier"):
        return None
    name = text(head)
    if name != "_Pragma" and name not in macros:
        return None  # (cheaply: most statements start with no macro)
    if stmt.type != "declaration":
        directive = pragma_operator(text(stmt), macros)
        return (directive, None, stmt.end_byte) if directive is not None else None
    directive = pragma_operator(name, macros)
    block = stmt.parent
    if directive is None or block is None or block.text is None:
        return None
    raw, base = block.text, block.start_byte
    start = skip_blank(raw, head.end_byte - base)
    end = statement_end(raw, start)
    row = head.start_point.row + raw[head.end_byte - base : start].count(b"\n")
    if end is None or row < 2:
        return None
    column = start - (raw.rfind(b"\n", 0, start) + 1)
    body = raw[start:end].decode("utf-8", "replace")
    src = "\n" * (row - 2) + "void __m__(){\n#pragma " + directive + "\n"
    src += " " * column + body + "\n}"
    kids = _reparsed(src)
    after = kids[1] if len(kids) == 2 and not kids[1].has_error else None
    return (directive, after, base + end) if after is not None else None


def _reparsed(src: str) -> tuple[Node, ...]:
    """The statements of ``void __m__(){ ... }``, the text a macro's use was rewritten to
    (its rows aligned with the source's), parsed once per text."""
    if src not in _REPARSED:
        tree = parse(src.encode())
        fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
        b = fn.child_by_field_name("body") if fn is not None else None
        if len(_REPARSED) > 1024:
            _REPARSED.clear()
        _REPARSED[src] = tuple(b.named_children) if b is not None else ()
    return _REPARSED[src]


_REPARSED: dict[str, tuple[Node, ...]] = {}
_MACRO_CACHE: dict[tuple[str, bool], Node | None] = {}


_TYPEOF = re.compile(r"\b(?:__typeof__|__typeof|typeof)\s*\([^()]*\)")


def macro_tree(body: str, expression: bool, limit: int = 4000) -> Node | None:
    """Parse a macro expansion of fewer than ``limit`` characters: an expression
    (``(x)*(x)``) or statements."""
    key = (body, expression)
    if key in _MACRO_CACHE:
        return _MACRO_CACHE[key]
    node: Node | None = None
    # ``__typeof__(x) _x = (x);`` in a statement expression: the grammar has no typeof
    body = _TYPEOF.sub("auto", body)
    if len(body) < limit and body.strip():
        if expression:
            src = ("void __m__(void) { __r__ = (" + body + "); }").encode()
        else:
            # ``_Pragma("unroll")`` in a macro is the directive ``#pragma unroll``
            body = pragma_lines(body)
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


# the longest full expansion of a statement macro taken (``REP256(...)`` of a few statements)
EXPANSION_LIMIT = 200_000
EXPANSION_DEPTH = 64  # ... and the deepest nest of macro calls (a hostile file's 10,000)
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def _past_space(s: str, i: int) -> int:
    """The index of the first character at or after ``i`` that is not white space."""
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def _closing(s: str, start: int) -> int | None:
    """The index after the parenthesis that closes the one at ``start`` (string and
    character literals skipped), or None."""
    depth = 0
    i = start
    while i < len(s):
        c = s[i]
        if c in "\"'":
            j = i + 1
            while j < len(s) and s[j] != c:
                j += 2 if s[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def expand_text(
    s: str,
    macros: dict[str, tuple[tuple[str, ...] | None, str]],
    painted: frozenset[str] = frozenset(),
    depth: int = 0,
) -> str | None:
    """``s`` with every call of a function-like macro, and every object-like macro that
    stands for statements (``#define MAD x = x * y + z;``), replaced by its expansion,
    rescanned with the macro itself left alone (``#define REP4(S) REP2(S) REP2(S)``); None
    when a call is not closed, the text outgrows ``EXPANSION_LIMIT`` or the calls nest deeper
    than ``EXPANSION_DEPTH``."""
    if depth > EXPANSION_DEPTH:
        return None
    out: list[str] = []
    size = 0
    i = 0
    while True:
        m = _NAME.search(s, i)
        if m is None:
            out.append(s[i:])
            break
        name = m.group(0)
        d = macros.get(name)
        j = _past_space(s, m.end())
        if d is not None and d[0] is None and name not in painted and _statements(name, macros):
            body, end = d[1].replace("\\\n", " "), m.end()
        elif d is not None and d[0] is not None and name not in painted and s[j : j + 1] == "(":
            close = _closing(s, j)
            if close is None:
                return None
            # the arguments (split at top-level commas; a ``;`` splits nothing: ``REP2(a = b;
            # c = d;)`` has one) expand first (``REP4(REP2(x))``), then the result without it
            args = [
                expand_text(a, macros, painted, depth + 1) for a in split_args(s[j + 1 : close - 1])
            ]
            if any(a is None for a in args):
                return None
            body = substitute_macro(d[1], d[0], [a or "" for a in args])
            end = close
        else:
            out.append(s[i : m.end()])
            i = m.end()
            continue
        inner = expand_text(body, macros, painted | {name}, depth + 1)
        if inner is None:
            return None
        out += [s[i : m.start()], " ", inner, " "]
        size += end - i + len(inner)
        if size > EXPANSION_LIMIT:
            return None
        i = end
    return "".join(out)


def _statements(
    name: str,
    macros: dict[str, tuple[tuple[str, ...] | None, str]],
    seen: frozenset[str] = frozenset(),
) -> bool:
    """Whether object-like macro ``name`` stands for statements: its body holds a ``;``, or
    names another that does (``#define MAD16 MAD4 MAD4 MAD4 MAD4``)."""
    d = macros.get(name)
    if d is None or d[0] is not None or name in seen or len(seen) > EXPANSION_DEPTH:
        return False
    return ";" in d[1] or any(_statements(n, macros, seen | {name}) for n in _NAME.findall(d[1]))


# the nodes a statement made of macros parses as: an expression statement, a broken one, or
# a name alone before a block's ``}`` (``{ MAD4; MAD4 }``: the parser takes the last as a
# type and adds the missing ``;``)
MACRO_STATEMENTS = ("expression_statement", "ERROR", "type_identifier", "identifier")


def statement_macro(
    stmt: Node, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> tuple[str, Node, int] | None:
    """A statement made of macros the parser cannot take as written: a function-like macro
    whose argument holds statements (``REP16(x = x * y + z; y = y * x + z;)``, which the
    parser ends at the first ``;``) or whose expansion calls other statement macros
    (``#define REP4(S) REP2(S) REP2(S)``), or object-like macros standing for statements
    (``MAD16`` or ``MAD MAD MAD`` with ``#define MAD x = x * y + z;``). Returns the first
    macro's name, the parse of the full expansion and the byte where the statement (with its
    ``;``) ends; None for any other statement, which the walker takes as it is."""
    block = stmt.parent
    if stmt.type not in MACRO_STATEMENTS or block is None:
        return None
    lead = _NAME.match(text(stmt))
    d = macros.get(lead.group(0)) if lead is not None else None
    if lead is None or d is None or d[0] is None and not _statements(lead.group(0), macros):
        return None  # (before reading the block: most statements start with no macro)
    # a statement that parsed whole holds its macro call; a broken one may not (the call
    # runs past the ``;`` the parser stopped at): then the block's text is read
    host = block if stmt.type == "ERROR" or stmt.has_error else stmt
    raw = text(host)
    base = host.start_byte
    if len(raw.encode()) != host.end_byte - base:
        return None  # offsets in characters would not be bytes
    start, end = stmt.start_byte - base, stmt.end_byte - base
    first = _NAME.match(raw, start)
    if first is None or first.group(0) != lead.group(0):
        return None
    name = first.group(0)
    if d[0] is not None:
        j = _past_space(raw, first.end())
        close = _closing(raw, j) if raw[j : j + 1] == "(" else None
        if close is None:
            return None
        one = substitute_macro(d[1], d[0], split_args(raw[j + 1 : close - 1]))
        whole = stmt.type == "expression_statement" and close <= end and not stmt.has_error
        if whole and macro_tree(one, expression=False) is not None:
            return None  # the walker expands it from the call
        end = max(end, close)
    full = expand_text(raw[start:end], macros)
    tree = macro_tree(full, False, EXPANSION_LIMIT) if full is not None else None
    if tree is None:
        return None
    k = _past_space(raw, end)
    if k < len(raw) and raw[k] == ";" and not raw[start:end].rstrip().endswith(";"):
        end = k + 1
    return name, tree, base + end
