"""Numeric evaluation of C/C++ expressions on the tree-sitter AST, and loop trip counts.

``value(node, lookup)`` folds an expression to a number when every name in it is known
(``lookup(name) -> float | None``); ``trip_count`` reads a ``for`` header
(``for (int i = a; i < b; i += s)``, ``s >>= 1``, ``s *= 2``...). Nothing is executed.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.syntax.carith import (
    MATH_FUNCTIONS,
    TREE_DIALECT,
    binary,
    cast,
    parse_literal,
    unary,
)
from roofline_lsp.syntax.datatypes import parse_type
from roofline_lsp.syntax.parsing import parse

Lookup = Callable[[str], "float | None"]
NAME = re.compile(r"[A-Za-z_]\w*")  # an identifier (``fullmatch``: a plain name)

_BUILTIN_FIELDS = ("blockDim", "gridDim")


def text(node: Node | None) -> str:
    t = node.text if node is not None else None  # (each read of Node.text copies the bytes)
    return t.decode("utf-8", "replace") if t is not None else ""


def unparenthesized(node: Node) -> Node:
    """``node`` without the parentheses around it: ``((a * b))`` -> ``a * b``."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def subscript_index(subscript: Node) -> Node | None:
    """The index expression of ``a[i]`` (``i``); of ``a[i, j]``, the whole list."""
    index = subscript.child_by_field_name("indices") or subscript.child_by_field_name("index")
    if index is None:
        index = next((c for c in subscript.children if c.type == "subscript_argument_list"), None)
    if index is not None and index.type == "subscript_argument_list":
        named = [c for c in index.named_children if c.type != "comment"]
        return named[0] if len(named) == 1 else index
    return index


def binary_operands(node: Node, ops: Collection[str]) -> tuple[Node, Node] | None:
    """``left op right`` with ``op`` one of ``ops``: ``(left, right)``; None for any other
    node."""
    if node.type != "binary_expression":
        return None
    op = node.child_by_field_name("operator")
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if op is None or op.type not in ops or left is None or right is None:
        return None
    return left, right


def identifiers(node: Node, objects: bool = False) -> list[str]:
    """The variable names ``node`` reads (not called functions, fields or types); with
    ``objects``, the objects of its member accesses too (``params`` of ``params.n``)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            parent = n.parent
            called = (
                parent is not None
                and parent.type == "call_expression"
                and parent.child_by_field_name("function") == n
            )
            if not called:
                out.append(text(n))
        elif n.type == "field_expression" and objects:
            stack.extend(c for c in [n.child_by_field_name("argument")] if c is not None)
        elif n.type not in (
            "field_identifier",
            "type_identifier",
            "string_literal",
            "field_expression",
        ):
            stack.extend(n.named_children)  # (a struct's field: no hint names it)
    return out


def literal(node: Node) -> float | None:
    """The value of a ``number_literal`` (``1e-3f``, ``0x10``, ``1'000``, ``256u``)."""
    v = parse_literal(text(node), TREE_DIALECT, floating=True)
    return float(v) if v is not None else None


def is_float_literal(node: Node) -> str | None:
    """``"f32"``/``"f64"`` for a floating literal, None for an integer one."""
    raw = text(node).lower()
    if raw.startswith("0x"):
        return None
    if "." in raw or "e" in raw:
        return "f32" if raw.endswith("f") else "f64"
    if raw.endswith("f"):
        return "f32"
    return None


_FUNCS: dict[str, Callable[..., float]] = {
    **MATH_FUNCTIONS,
    "fmin": min,
    "fmax": max,
    "fminf": min,
    "fmaxf": max,
    "fabs": abs,
    "pow": pow,
    "powf": pow,
}


def value(node: Node | None, lookup: Lookup, depth: int = 0) -> float | None:
    """The number an expression folds to, or None."""
    if node is None or depth > 40:
        return None
    t = node.type
    try:
        if t == "number_literal":
            return literal(node)
        if t == "identifier":
            return lookup(text(node))
        if t == "parenthesized_expression":
            inner = node.named_children
            return value(inner[-1], lookup, depth + 1) if inner else None
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            a = value(node.child_by_field_name("left"), lookup, depth + 1)
            if a is None:
                return None
            b = value(node.child_by_field_name("right"), lookup, depth + 1)
            if b is None:
                return None
            o = op.type if op is not None else ""
            return _binop(o, a, b, node)
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            a = value(node.child_by_field_name("argument"), lookup, depth + 1)
            if a is None or op is None:
                return None
            r = unary(op.type, a)
            return r if r is None or op.type in ("-", "+") else float(r)
        if t == "conditional_expression":
            c = value(node.child_by_field_name("condition"), lookup, depth + 1)
            if c is None:
                return None
            branch = node.child_by_field_name("consequence" if c else "alternative")
            return value(branch, lookup, depth + 1)
        if t == "cast_expression":
            v = value(node.child_by_field_name("value"), lookup, depth + 1)
            ty = parse_type(text(node.child_by_field_name("type")))
            if v is not None and ty.kind == "int":
                return float(cast(v, integer=True))
            return v
        if t == "sizeof_expression":
            tn = node.child_by_field_name("type")
            if tn is None or "[" in text(tn):
                return None
            if "*" in text(tn):
                return 8.0
            ty = parse_type(text(tn))
            return float(ty.size) if ty.kind != "unknown" else None  # a struct: the walk's
        if t == "field_expression":
            arg = text(node.child_by_field_name("argument"))
            field = text(node.child_by_field_name("field"))
            return lookup(f"{arg}.{field}")
        if t == "qualified_identifier":
            return lookup(text(node).rsplit("::", 1)[-1])
        if t == "call_expression":
            fn = text(node.child_by_field_name("function"))
            fn = fn.rsplit("::", 1)[-1]
            args_node = node.child_by_field_name("arguments")
            args = [
                value(a, lookup, depth + 1) for a in (args_node.named_children if args_node else [])
            ]
            if any(a is None for a in args):
                return None
            vals = [a for a in args if a is not None]
            if fn in ("int", "unsigned", "size_t", "long") and len(vals) == 1:
                return float(cast(vals[0], integer=True))
            if fn in ("float", "double") and len(vals) == 1:
                return vals[0]
            f = _FUNCS.get(fn)
            if f is None or not vals:
                return None
            return float(f(*vals))
        if t in ("true", "false"):
            return float(t == "true")
    except (ValueError, OverflowError, ZeroDivisionError, TypeError):
        return None
    return None


def _binop(op: str, a: float, b: float, node: Node) -> float | None:
    # integer division when both operands are whole and neither is a floating literal
    integer = op == "/" and a == int(a) and b == int(b) and not _has_float(node)
    r = binary(op, a, b, integer, TREE_DIALECT)
    return r if r is None or op in ("+", "-", "*") else float(r)


def _has_float(node: Node) -> bool:
    return any(c.type == "number_literal" and is_float_literal(c) for c in node.named_children)


# a comparison read from the other side (``n > i`` is ``i < n``)
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
# the test a loop continues on, from the one its leading ``if (...) break;`` exits on
_NEGATED = {">=": "<", ">": "<=", "<": ">=", "<=": ">", "==": "!="}


@dataclass(frozen=True)
class LoopHeader:
    """What a ``for`` header says: the loop variable, its start, bound and step."""

    var: str | None
    start: Node | None
    bound: Node | None
    bound_op: str  # "<", "<=", ">", ">=", "!="
    step: Node | None  # None: +/-1
    step_op: str  # "+", "-", "*", "/", "<<", ">>"
    pre_step: bool = False  # the step comes before the test: ``while (k >>= 1)``, ``--k``
    # the step of a second counter the bound is, moving the other way (``i < j`` with
    # ``i++, j--``): the gap closes by both steps a trip
    closing: Node | None = None


def condition_expr(stmt: Node) -> Node | None:
    """The expression a ``while``/``do``/``if`` statement tests, without its clause and
    parentheses (None for a declaration: ``while (int x = f())``)."""
    cond = stmt.child_by_field_name("condition")
    if cond is None:
        return None
    c = cond.child_by_field_name("value") if cond.type == "condition_clause" else cond
    while c is not None and c.type == "parenthesized_expression" and c.named_children:
        c = c.named_children[0]
    return c


# warp votes whose last argument is each lane's test: a loop on ``__any_sync(mask, v < n)``
# runs, for the warp, until no lane's test holds (as long as its longest lane's loop)
_VOTES = frozenset(["__any_sync", "__all_sync", "__ballot_sync", "__any", "__all", "__ballot"])


def lane_test(c: Node | None) -> Node | None:
    """The lane's own test inside a warp vote (``v < n`` in ``__any_sync(~0, v < n)``), else
    ``c`` itself."""
    if c is None or c.type != "call_expression":
        return c
    fn = c.child_by_field_name("function")
    args = c.child_by_field_name("arguments")
    if fn is None or args is None or text(fn) not in _VOTES or not args.named_children:
        return c
    return unparenthesized(args.named_children[-1])


def test_target(c: Node | None) -> Node | None:
    """The plain name a loop test sets before testing it (``v >>= 1``, ``v = v / 2``,
    ``--k``; not ``k--``, which tests first), else None."""
    if c is None:
        return None
    if c.type == "assignment_expression":
        t = c.child_by_field_name("left")
    elif c.type == "update_expression" and text(c).lstrip().startswith(("++", "--")):
        t = c.child_by_field_name("argument")
    else:
        return None
    return t if t is not None and t.type == "identifier" else None


def detached_body(node: Node) -> list[Node]:
    """A loop or ``if`` whose statement starts with a ``#pragma`` line (``for (...)`` then
    ``#pragma unroll`` then ``for (...) s;``): tree-sitter ends it there with an empty body
    and puts the pragmas and the statement after them next to it. Those siblings, in order
    (empty when it has its body)."""
    body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
    if body is None or body.end_byte > body.start_byte:
        return []
    out: list[Node] = []
    nxt = node.next_named_sibling
    while nxt is not None and nxt.type in ("preproc_call", "comment"):
        out.append(nxt)
        nxt = nxt.next_named_sibling
    if nxt is None or not any(n.type == "preproc_call" for n in out):
        return []
    return [*out, nxt]


def macro_loop_body(stmt: Node) -> Node | None:
    """``KERNEL_LOOP(i, n) { body }``, a macro call expanding to a loop header: the parser
    sees a statement without ``;`` and the block after it. That block, else None."""
    if stmt.type != "expression_statement" or text(stmt).rstrip().endswith(";"):
        return None
    if not stmt.named_children or stmt.named_children[0].type != "call_expression":
        return None
    nxt = stmt.next_named_sibling
    return nxt if nxt is not None and nxt.type == "compound_statement" else None


def nested_definition(node: Node) -> bool:
    """A function definition inside a block, which C and C++ do not have: the parser's take
    on ``CUDA_KERNEL_LOOP(index, n) { body }``, a loop-header macro called with names (its
    call read as a declarator, its body as the function's)."""
    parent = node.parent
    in_block = parent is not None and parent.type == "compound_statement"
    return node.type == "function_definition" and in_block


def while_header(node: Node) -> LoopHeader | None:
    """``while (i < n) { ...; i += s; }``: a counted ``while``/``do`` loop (the variable
    updated by a top-level statement of the body); the start is the variable's value."""
    body = node.child_by_field_name("body")
    if node.child_by_field_name("condition") is None or body is None:
        return None
    c = lane_test(condition_expr(node))
    countdown = _countdown(c)
    if countdown is not None:
        # while (k--): k trips, the test counting down to zero
        return LoopHeader(countdown, None, None, ">", None, "-")
    stepped = step_of(c) if test_target(c) is not None and c is not None else None
    if stepped is not None and c is not None:
        halved = c.type == "assignment_expression" and stepped[2] in (">>", "/")
        if halved or (c.type == "update_expression" and stepped[2] == "-"):
            # while (k >>= 1), while (k /= 2), while (--k): stepped, then tested against zero
            return LoopHeader(stepped[0], None, None, ">", stepped[1], stepped[2], pre_step=True)
    down_to = _countdown_to(c)
    if down_to is not None:
        # while (k-- > b): k - b trips
        return LoopHeader(down_to[0], None, down_to[1], ">", None, "-")
    if c is not None and c.type == "binary_expression":
        left = c.child_by_field_name("left")
        right = c.child_by_field_name("right")
        op = c.child_by_field_name("operator")
        target = test_target(left)
        stepped_left = step_of(left) if target is not None and left is not None else None
        o = op.type if op is not None else ""
        if stepped_left is not None and right is not None and o in ("<", "<=", ">", ">=", "!="):
            # while (--y >= 0), do { ... } while (++i < n): stepped, then compared
            var, step, step_op = stepped_left
            return LoopHeader(var, None, right, o, step, step_op, pre_step=True)
    if c is not None and c.type == "identifier":
        # while (k) { ...; k >>= 1; }: halved down to zero
        h = body_update(body, text(c))
        if h is not None and h[1] in (">>", "/"):
            return LoopHeader(text(c), None, None, ">", h[0], h[1])
        return None
    negated = c is not None and always_true(c)
    if negated:
        # while (true) { if (i >= n) break; ...; i++; }: the exit test opens the body
        c = exit_test(body)
    if c is None or c.type != "binary_expression":
        return None
    op = c.child_by_field_name("operator")
    o = op.type if op is not None else ""
    if negated:
        o = _NEGATED.get(o, "")
    if o not in ("<", "<=", ">", ">=", "!="):
        return None
    left = c.child_by_field_name("left")
    right = c.child_by_field_name("right")
    if left is None or right is None:
        return None
    flipped = FLIPPED[o]
    for var_node, bound, bound_op in ((left, right, o), (right, left, flipped)):
        # the side the body steps is the counter (``while (i < n)``, ``if (m <= t) break;``)
        h = body_update(body, text(var_node)) if var_node.type == "identifier" else None
        if h is not None:
            # while (lo < hi) { ...; lo++; hi--; }: the other side steps the other way
            other = body_update(body, text(bound)) if bound.type == "identifier" else None
            closing = _closing(h[1], other)
            return LoopHeader(text(var_node), None, bound, bound_op, h[0], h[1], closing=closing)
    return None


def _countdown_to(c: Node | None) -> tuple[str, Node] | None:
    """``k-- > b``: the counter tested before it steps down, and the bound, else None."""
    if c is None or c.type != "binary_expression":
        return None
    op = c.child_by_field_name("operator")
    right = c.child_by_field_name("right")
    counter = _countdown(c.child_by_field_name("left"))
    if counter is None or op is None or op.type != ">" or right is None:
        return None
    return counter, right


def _countdown(node: Node | None) -> str | None:
    """The variable of a post-decrement ``k--`` (the test sees k, the body k - 1)."""
    if node is None or node.type != "update_expression":
        return None
    arg = node.child_by_field_name("argument")
    if arg is None or arg.type != "identifier" or not text(node).rstrip().endswith("--"):
        return None
    return text(arg)


def body_update(body: Node, var: str) -> tuple[Node | None, str] | None:
    """The step of ``var`` by a top-level statement of a loop body."""
    stmts = body.named_children if body.type == "compound_statement" else [body]
    for st in stmts:
        if st.type != "expression_statement" or not st.named_children:
            continue
        h = _update(st.named_children[0], var)
        if h is not None:
            return h
    return None


def _update(u: Node, var: str) -> tuple[Node | None, str] | None:
    """The step and operator of ``u`` when it steps ``var`` (see :func:`step_of`)."""
    step = step_of(u)
    return (step[1], step[2]) if step is not None and step[0] == var else None


def loop_header(node: Node) -> LoopHeader | None:
    """Read ``for (init; cond; update)``; None when it is not a counted loop."""
    init = node.child_by_field_name("initializer")
    cond = node.child_by_field_name("condition")
    update = node.child_by_field_name("update")
    var: str | None = None
    start: Node | None = None
    declared: dict[str, Node | None] = {}  # for (int idx = t, i = 0; ...; ++i): every one
    if init is not None:
        if init.type == "declaration":
            for d in init.children_by_field_name("declarator"):
                if d.type == "init_declarator":
                    name = declared_name(d)  # (``p`` of ``float *p = a``)
                    declared[name] = d.child_by_field_name("value")
                    if var is None:
                        var, start = name, declared[name]
        elif init.type == "assignment_expression":
            var = text(init.child_by_field_name("left"))
            start = init.child_by_field_name("right")
        elif init.type == "comma_expression":
            left = init.child_by_field_name("left")
            if left is not None and left.type == "assignment_expression":
                var = text(left.child_by_field_name("left"))
                start = left.child_by_field_name("right")
    if update is None and var is not None and _countdown(cond) == var:
        return LoopHeader(var, start, None, ">", None, "-")  # for (int i = m; i--; )
    down_to = _countdown_to(cond)
    if update is None and var is not None and down_to is not None and down_to[0] == var:
        return LoopHeader(var, start, down_to[1], ">", None, "-")  # for (j = m; j-- > 0; )
    if update is None:
        # for (int r = 0; r < m;) { ...; r += 3; }: the body steps the counter
        body = node.child_by_field_name("body")
        if var is None and cond is not None and cond.type == "binary_expression":
            left = cond.child_by_field_name("left")
            var = text(left) if left is not None and left.type == "identifier" else None
        stepped = body_update(body, var) if body is not None and var is not None else None
        if stepped is None or var is None:
            return None
        parsed: tuple[str, Node | None, str] | None = (var, stepped[0], stepped[1])
    else:
        parsed = _header_update(update, text(cond) if cond is not None else "", declared, var)
    if parsed is None:
        return None
    uvar, step, step_op = parsed
    if var is None:
        var = uvar
    elif var != uvar:
        if uvar not in declared:
            return None
        var, start = uvar, declared[uvar]
    bound: Node | None = None
    bound_op = "<"
    c = lane_test(cond)
    negated = False
    if cond is None or always_true(cond):
        # for (j = 0;; j++) { if (j >= m) break; ... }: the exit test opens the body
        c, negated = exit_test(node.child_by_field_name("body")), True
    while c is not None and c.type == "binary_expression":
        op = c.child_by_field_name("operator")
        o = op.type if op is not None else ""
        if o == "&&":
            left = c.child_by_field_name("left")
            mentions = left is not None and re.search(rf"\b{re.escape(var)}\b", text(left))
            c = left if mentions else c.child_by_field_name("right")
            continue
        left = c.child_by_field_name("left")
        right = c.child_by_field_name("right")
        reread = misread_shift(c)
        if reread is not None and text(reread[0]) == var:  # ``i < n >> 3``
            bound, bound_op = reread[1], "<"
            break
        if negated:
            o = _NEGATED.get(o, "")
        if o in ("<", "<=", ">", ">=", "!="):
            if text(left) == var:
                bound, bound_op = right, o
            elif text(right) == var:
                bound = left
                bound_op = FLIPPED[o]
        break
    if negated and bound is None:
        return None
    closing = _closing_step(update, bound, step_op)
    if c is not None and c.type == "identifier" and text(c) == var:
        bound_op = "!="  # for (i = n; i; i >>= 1)
        bound = None
        if step_op in (">>", "/"):
            return LoopHeader(var, start, None, ">", step, step_op)
    return LoopHeader(var, start, bound, bound_op, step, step_op, closing=closing)


def _closing_step(update: Node | None, bound: Node | None, step_op: str) -> Node | None:
    """The step of the second counter a ``for`` loop's bound is, stepped the other way in its
    header (``for (i = 0, j = n - 1; i < j; i++, j--)``: ``j--``, a step of 1), else None."""
    if update is None or bound is None or bound.type != "identifier":
        return None
    for other in (step_of(u) for u in comma_parts(update)):
        if other is not None and other[0] == text(bound):
            return _closing(step_op, (other[1], other[2]))
    return None


def _closing(step_op: str, other: tuple[Node | None, str] | None) -> Node | None:
    """The other counter's step (a missing one is 1) when it moves against ``step_op``:
    the gap between the two closes by both steps a trip; else None (the same way, or not
    an additive step, it does not close)."""
    if other is None or {step_op, other[1]} != {"+", "-"}:
        return None
    return other[0] if other[0] is not None else expression("1")


def always_true(c: Node) -> bool:
    """``true``, ``1``: the test of ``while (true)``/``for (;;)``-style loops."""
    while c.type == "parenthesized_expression" and c.named_children:
        c = c.named_children[0]
    return c.type == "true" or (c.type == "number_literal" and text(c).strip() not in ("0", ""))


def leading_exit(body: Node | None) -> Node | None:
    """A loop body's opening ``if (test) break;`` (no ``else``), else None."""
    if body is None:
        return None
    stmts = body.named_children if body.type == "compound_statement" else [body]
    stmts = [s for s in stmts if s.type != "comment"]
    if not stmts or stmts[0].type != "if_statement":
        return None
    first = stmts[0]
    then = first.child_by_field_name("consequence")
    if first.child_by_field_name("alternative") is not None or then is None:
        return None
    inner = then.named_children if then.type == "compound_statement" else [then]
    return first if len(inner) == 1 and inner[0].type == "break_statement" else None


def exit_test(body: Node | None) -> Node | None:
    """The test of a loop body's opening ``if (test) break;``, else None."""
    first = leading_exit(body)
    return condition_expr(first) if first is not None else None


@dataclass(frozen=True)
class GuardedExit:
    """A ``for`` loop without a test whose body opens with declarations, then ``if (test)
    break;`` (``for (p = blockIdx.x;; p += gridDim.x) { const int t = p / n * m; if (t >=
    rows) break; ...}``): its counter, start and step, the declarations and the test."""

    var: str
    start: Node | None
    step: Node | None  # None: 1
    step_op: str
    declarations: tuple[Node, ...]
    test: Node
    exit: Node  # the ``if (test) break;``

    @property
    def names(self) -> frozenset[str]:
        """The locals the declarations declare."""
        return frozenset(
            declared_name(d)
            for n in self.declarations
            for d in n.children_by_field_name("declarator")
        )


def guarded_exit(loop: Node) -> GuardedExit | None:
    """The :class:`GuardedExit` of ``loop``, else None."""
    cond = loop.child_by_field_name("condition")
    body = loop.child_by_field_name("body")
    update = loop.child_by_field_name("update")
    init = loop.child_by_field_name("initializer")
    if loop.type != "for_statement" or body is None or update is None or init is None:
        return None
    if (cond is not None and not always_true(cond)) or body.type != "compound_statement":
        return None
    stmts = [st for st in body.named_children if st.type != "comment"]
    decls = tuple(itertools.takewhile(lambda st: st.type == "declaration", stmts))
    rest = stmts[len(decls) :]
    exit_if = leading_exit(rest[0]) if decls and rest else None
    stepped = step_of(update)
    test = condition_expr(exit_if) if exit_if is not None else None
    if test is None or stepped is None:
        return None
    var, step, step_op = stepped
    if init.type == "declaration":
        d = next((d for d in init.children_by_field_name("declarator")), None)
        if d is None or d.type != "init_declarator" or declared_name(d) != var:
            return None
        start = d.child_by_field_name("value")
    elif init.type == "assignment_expression" and text(init.child_by_field_name("left")) == var:
        start = init.child_by_field_name("right")
    else:
        return None
    return GuardedExit(var, start, step, step_op, decls, test, rest[0])


def counted_exit(loop: Node) -> Node | None:
    """The opening ``if (test) break;`` a loop without a test of its own (``for (;;)``,
    ``while (true)``) counts its trips by, else None."""
    cond = loop.child_by_field_name("condition")
    if loop.type == "while_statement":
        cond = condition_expr(loop)
    if cond is not None and not always_true(cond):
        return None
    return leading_exit(loop.child_by_field_name("body"))


def misread_shift(c: Node) -> tuple[Node, Node] | None:
    """``x < n >> 3`` that the grammar read as the template ``x<n>`` compared with ``3``
    (C++'s ``>>`` closing a template argument list): ``x`` and ``n >> 3`` (parsed on its own),
    else None. Whether ``x`` is a variable (not a template) is the caller's to check."""
    op = c.child_by_field_name("operator")
    left = c.child_by_field_name("left")
    if c.type != "binary_expression" or op is None or op.type != ">" or left is None:
        return None
    name = left.child_by_field_name("name")
    args = left.child_by_field_name("arguments")
    if left.type != "template_function" or name is None or args is None or c.text is None:
        return None
    closing = c.text[args.end_byte - c.start_byte - 1 :]
    if not closing.startswith(b">>"):
        return None
    bound = expression(text(c).split("<", 1)[1])
    return (name, bound) if bound is not None else None


@functools.lru_cache(maxsize=256)
def expression(source: str) -> Node | None:
    """The parse of an expression's text on its own (its node keeps its tree alive)."""
    stack = [parse(f"int __e = ({source});".encode()).root_node]
    while stack:
        node = stack.pop()
        if node.type == "parenthesized_expression":
            return node.named_children[0] if node.named_children else None
        stack.extend(reversed(node.named_children))
    return None


def _header_update(
    update: Node, cond: str, declared: dict[str, Node | None], var: str | None
) -> tuple[str, Node | None, str] | None:
    """The counted update of a ``for`` header: variable, step and operator. Of a comma list
    (``old_i = i, i /= 2``) the part that steps the variable the condition tests, else the
    one stepping the initialised variable, else the first that steps anything."""
    steps = [p for p in (step_of(u) for u in comma_parts(update)) if p is not None]
    for p in steps:
        tested = re.search(rf"\b{re.escape(p[0])}\b", cond)
        if (p[0] in declared or p[0] == var) and tested:
            return p
    for p in steps:
        if p[0] == var:
            return p
    return steps[0] if steps else None


def initializer_length(node: Node | None) -> float | None:
    """The elements a brace initializer lists (``{1, 2, 3}``: 3, comments left out), which
    size an array declared without a length (``float w[] = {...}``); None for anything else."""
    if node is None or node.type != "initializer_list":
        return None
    return float(sum(c.type != "comment" for c in node.named_children))


def string_length(node: Node) -> int | None:
    """What ``strlen`` gives for a narrow string literal (adjacent ones concatenated): its
    bytes, an escape sequence one; None for any other expression or a wide literal."""
    if node.type == "concatenated_string":
        parts = [string_length(c) for c in node.named_children]
        return None if not parts or None in parts else sum(p for p in parts if p is not None)
    if node.type != "string_literal" or not text(node).startswith(('"', 'u8"')):
        return None
    n = 0
    for c in node.named_children:
        if c.type == "escape_sequence":
            n += 1
        elif c.type == "string_content":
            n += c.end_byte - c.start_byte
        else:
            return None
    return n


def comma_parts(node: Node) -> list[Node]:
    """The expressions of a comma list, in order (``a = 1, b++`` -> ``a = 1``, ``b++``)."""
    if node.type != "comma_expression":
        return [node]
    return [p for c in node.named_children for p in comma_parts(c)]


def step_of(u: Node) -> tuple[str, Node | None, str] | None:
    """``i++``, ``i -= s``, ``i = i * 2`` ...: (variable, step or None for 1, operator)."""
    if u.type == "update_expression":
        op = u.child_by_field_name("operator")
        return (
            text(u.child_by_field_name("argument")),
            None,
            ("-" if op is not None and op.type == "--" else "+"),
        )
    if u.type != "assignment_expression":
        return None
    uvar = text(u.child_by_field_name("left"))
    op = u.child_by_field_name("operator")
    o = op.type if op is not None else "="
    right = u.child_by_field_name("right")
    if o == "=":
        # i = i + s, i = i * 2, i = i >> 1, i = i / 2
        if right is None or right.type != "binary_expression":
            return None
        rl = right.child_by_field_name("left")
        rop = right.child_by_field_name("operator")
        if text(rl) != uvar or rop is None:
            return None
        step_op, step = rop.type, right.child_by_field_name("right")
    else:
        step_op, step = o[:-1], right
    if step_op not in ("+", "-", "*", "/", "<<", ">>"):
        return None
    return uvar, step, step_op


def trips(
    start: float, bound: float, bound_op: str, step: float, step_op: str, exact: bool = True
) -> float | None:
    """The trip count of a counted loop from numeric start, bound and step. With
    ``exact=False`` the start is a mean over threads and the count is the mean count."""
    if step_op in ("+", "-"):
        s = step if step_op == "+" else -step
        if s == 0:
            return None
        span = bound - start
        if bound_op in ("<=", ">="):
            if exact:
                # the counter's values start, start + s, ... up to the bound inclusive (a
                # fractional step too: 0.0 to 1.0 by 0.001 is 1001 trips)
                q = span / s
                return float(math.floor(q + 1e-9) + 1) if q >= -1e-9 else 0.0
            span += (1 if s > 0 else -1) if float(s).is_integer() else s
        n = span / s
        if exact:
            n = math.ceil(n - 1e-9)
        return max(0.0, n)
    if step_op in ("*", "<<", "/", ">>"):
        factor = step if step_op in ("*", "/") else 2.0**step
        if factor <= 1:
            return None
        lf = math.log(factor)
        if step_op in ("*", "<<"):
            if start <= 0:
                return None
            if bound <= start:
                return 0.0 if bound_op in ("<", "!=") or bound < start else 1.0
            r = math.log(bound / start) / lf
            return float(math.floor(r + 1e-9) + 1) if bound_op == "<=" else math.ceil(r - 1e-9)
        if start <= 0:
            return 0.0
        if bound <= 0 or bound_op == "!=":
            return float(math.floor(math.log(start) / lf + 1e-9) + 1) if start >= 1 else 0.0
        if start < bound:
            return 0.0
        r = math.log(start / bound) / lf
        return float(math.floor(r + 1e-9) + 1) if bound_op == ">=" else math.ceil(r - 1e-9)
    return None


def reads_memory(node: Node) -> bool:
    """Whether an expression is itself a value read from memory (``col[j]``, ``*p``,
    ``e.src``, through parentheses and casts), not arithmetic on one."""
    while node.type in ("parenthesized_expression", "cast_expression"):
        inner = node.child_by_field_name("value") or (
            node.named_children[-1] if node.named_children else None
        )
        if inner is None:
            return False
        node = inner
    if node.type == "pointer_expression":
        op = node.child_by_field_name("operator")
        return op is not None and op.type == "*"
    return node.type in ("subscript_expression", "field_expression")


_EFFECTS = frozenset({"update_expression", "assignment_expression", "call_expression"})


def has_effects(node: Node) -> bool:
    """Whether evaluating ``node`` may change something (an increment, an assignment, a
    call somewhere in it): ``b[k++]``, ``a[f(i)]``."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in _EFFECTS:
            return True
        stack.extend(n.named_children)
    return False


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


def stored_names(node: Node) -> frozenset[str]:
    """The variables whose memory the code under ``node`` stores to: the root names of the
    targets of its assignments and increments (``a[i] = ...``, ``*p += ...``, ``s->n++``)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        name = root_identifier(target)
        if name:
            out.add(name)
        stack.extend(n.named_children)
    return frozenset(out)


def declared_name(decl: Node | None) -> str:
    """The name a declarator declares (``*p``, ``a[4]``, ``A::x`` -> ``p``, ``a``, ``x``)."""
    while decl is not None:
        if decl.type in ("identifier", "field_identifier"):
            return text(decl)
        if decl.type == "qualified_identifier":
            return text(decl).rsplit("::", 1)[-1]
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:
            for c in decl.named_children:
                if c.type == "identifier":
                    return text(c)
            # ``(*kernel)`` of a function pointer ``void (*kernel)(float *)``
            nxt = next((c for c in decl.named_children if c.type.endswith("declarator")), None)
            if nxt is None:
                return ""
        decl = nxt
    return ""


def array_sizes(decl: Node) -> list[Node | None]:
    """The size expressions of an array declarator, one per dimension from the outermost
    (``a[N][M]``: N, M; None for an omitted one, ``a[]``); empty for any other declarator."""
    sizes: list[Node | None] = []
    node: Node | None = decl
    while node is not None and node.type == "array_declarator":
        sizes.append(node.child_by_field_name("size"))
        node = node.child_by_field_name("declarator")
    return sizes[::-1]


def declarator_levels(decl: Node) -> list[str | None]:
    """The pointer and array levels of a declarator, outermost first: an array level as its
    size's text (None for an omitted one, ``a[]``), a pointer level as None. ``float
    (*a)[M]``: ``M``, then the pointer (a points to rows of M); ``float a[N][M]``: ``M``,
    then ``N`` (the first subscript takes the last level)."""
    levels: list[str | None] = []
    for node in _declarator_chain(decl):
        if node.type == "array_declarator":
            size = node.child_by_field_name("size")
            levels.append(text(size) if size is not None else None)
        elif node.type == "pointer_declarator":
            levels.append(None)
    return levels


def declarator_stars(decl: Node | None) -> str:
    """Pointer and array levels of a declarator as ``*``/``[]`` text."""
    out = ""
    for node in _declarator_chain(decl):
        if node.type == "pointer_declarator":
            out += "*"
        elif node.type == "array_declarator":
            out += "[]"
    return out


def _declarator_chain(decl: Node | None) -> Iterator[Node]:
    """A declarator and those nested in it, outermost first, down to (not including) the
    name it declares."""
    while decl is not None and decl.type not in ("identifier", "field_identifier"):
        yield decl
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in decl.named_children if "declarator" in c.type), None)
        decl = nxt
