"""Expression folding and loop headers (``expr.py``)."""

from __future__ import annotations

import pytest

from roofline_lsp.syntax.expr import (
    array_sizes,
    declarator_levels,
    detached_body,
    guarded_exit,
    loop_header,
    reads_memory,
    stored_names,
    string_length,
    text,
    trips,
    value,
    while_header,
)
from roofline_lsp.syntax.parsing import parse


def first(src: str, kind: str):  # type: ignore[no-untyped-def]
    tree = parse(("void f() { " + src + " }").encode())
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == kind:
            return n
        stack.extend(reversed(n.named_children))
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("(n + 255) / 256", 4),
        ("1 << 10", 1024),
        ("n * sizeof(double)", 8000),
        ("n > 10 ? 2 : 3", 2),
        ("min(n, 7)", 7),
        ("0x10 + 010", 24),
        ("1.5e3f", 1500.0),
    ],
)
def test_value(expr: str, expected: float) -> None:
    node = first(f"x = {expr};", "assignment_expression").child_by_field_name("right")
    assert value(node, {"n": 1000.0}.get) == pytest.approx(expected)


def test_value_unknown_name() -> None:
    node = first("x = m + 1;", "assignment_expression").child_by_field_name("right")
    assert value(node, {}.get) is None


@pytest.mark.parametrize(
    ("loop", "expected"),
    [
        ("for (int i = 0; i < 100; i++) ;", 100),
        ("for (int i = 0; i <= 100; i += 10) ;", 11),
        ("for (int i = 100; i > 0; i--) ;", 100),
        ("for (int s = 1; s < 256; s *= 2) ;", 8),
        ("for (int s = 128; s > 0; s >>= 1) ;", 8),
        ("for (int s = 128; s >= 32; s /= 2) ;", 3),
        # the counter is the second declarator; the clause on it is the second of the &&
        # (idx < n mentions "i" only as a substring of "idx")
        ("for (int idx = 7, i = 0; idx < n && i < 12; ++i) ;", 12),
        ("for (int i = 2; i < 9 && idx < n; i++) ;", 7),
        # a comma update: the part stepping the tested variable (i = 32, 16, ..., 1), not the
        # copy before it; and two counters stepped together count by the tested one
        ("for (int i = 64 / 2, old_i = 64; i > 0; old_i = i, i /= 2) ;", 6),
        ("for (int i = 0, j = 0; i < 10; j += 2, i++) ;", 10),
        # ``i < 64 >> 3`` (the grammar reads ``i<64>`` compared with 3): 8 trips
        ("for (int i = 0; i < 64 >> 3; i++) ;", 8),
        ("for (int i = 0; i < 64 >> 3 && i < 100; i++) ;", 8),
    ],
)
def test_trips(loop: str, expected: int) -> None:
    h = loop_header(first(loop, "for_statement"))
    assert h is not None
    start = value(h.start, {}.get)
    bound = value(h.bound, {}.get) if h.bound is not None else 0.0
    step = value(h.step, {}.get) if h.step is not None else 1.0
    assert start is not None and bound is not None and step is not None
    assert trips(start, bound, h.bound_op, step, h.step_op) == expected


def test_the_detached_body_of_a_loop_whose_statement_starts_with_a_pragma() -> None:
    src = "for (i = 0; i < n; i++)\n#pragma unroll\n// c\nfor (j = 0; j < 4; j++) s += j;\nt = s;"
    parts = detached_body(first(src, "for_statement"))
    assert [p.type for p in parts] == ["preproc_call", "comment", "for_statement"]
    assert text(parts[-1]).startswith("for (j")
    guarded = "if (t < n)\n#pragma unroll\nfor (j = 0; j < 4; j++) s += j;"
    assert [p.type for p in detached_body(first(guarded, "if_statement"))] == [
        "preproc_call",
        "for_statement",
    ]
    # a loop with its own body, even an empty statement, has none
    assert detached_body(first("for (i = 0; i < n; i++)\n  s += i;", "for_statement")) == []
    assert (
        detached_body(first("for (i = 0; i < n; i++);\n#pragma x\nt = s;", "for_statement")) == []
    )


def test_while_header() -> None:
    h = while_header(first("while (i < n) { a[i] = 0; i += 4; }", "while_statement"))
    assert h is not None
    assert (h.var, h.bound_op, h.step_op) == ("i", "<", "+")
    assert while_header(first("while (x) { x = f(x); }", "while_statement")) is None


def test_a_loop_without_a_test_is_counted_by_its_opening_break() -> None:
    # for (;;) / while (true) whose body opens with `if (j >= m) break;` run while j < m;
    # an exit test on something else, or not first in the body, leaves them uncounted
    h = loop_header(first("for (int j = 0;; j++) { if (j >= m) break; s += j; }", "for_statement"))
    assert h is not None and (h.var, text(h.bound), h.bound_op) == ("j", "m", "<")
    h = while_header(first("while (1) { if (m <= t) break; t += 2; }", "while_statement"))
    assert h is not None and (h.var, text(h.bound), h.bound_op, h.step_op) == ("t", "m", "<", "+")
    for loop, kind in (
        ("for (int j = 0;; j++) { if (done) break; }", "for_statement"),
        ("for (int j = 0;; j++) { s += j; if (j >= m) break; }", "for_statement"),
        ("for (int j = 0;; j++) { if (j >= m) break; else s += 1; }", "for_statement"),
        ("while (true) { if (x[i] == 0) break; i++; }", "while_statement"),
    ):
        node = first(loop, kind)
        header = loop_header(node) if kind == "for_statement" else while_header(node)
        assert header is None or header.bound is None, loop


def test_while_header_of_a_variable_halved_to_zero() -> None:
    # while (k) { ...; k >>= 1; }: k, k/2, ... 1 (the test is k != 0, i.e. k > 0 for counts)
    h = while_header(first("while (k) { s += k; k >>= 1; }", "while_statement"))
    assert h is not None
    assert (h.var, h.bound, h.bound_op, h.step_op) == ("k", None, ">", ">>")
    # k = 1024: 1024, 512, ..., 1 -> 11 trips
    assert trips(1024, 0, h.bound_op, 1, h.step_op) == 11
    # a variable counted up has no bound to stop it
    assert while_header(first("while (k) { k++; }", "while_statement")) is None


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("col[j]", True),
        ("(int)(col[j])", True),
        ("*p", True),
        ("e.src", True),
        ("k + col[j]", False),
        ("3 * col[j]", False),
        ("&p", False),
        ("j", False),
    ],
)
def test_reads_memory(expr: str, expected: bool) -> None:
    node = first("x = " + expr + ";", "assignment_expression").child_by_field_name("right")
    assert reads_memory(node) is expected


@pytest.mark.parametrize(
    ("decl", "expected"),
    [
        ("float a[N][M];", ["N", "M"]),
        ("double b[2][n * 4][3];", ["2", "n * 4", "3"]),
        ("int c[] = {1, 2};", [None]),
        ("float *p;", []),
    ],
)
def test_array_sizes(decl: str, expected: list[str | None]) -> None:
    d = first(decl, "declaration").child_by_field_name("declarator")
    assert d is not None
    if d.type == "init_declarator":
        d = d.child_by_field_name("declarator")
    assert d is not None
    assert [None if s is None else text(s) for s in array_sizes(d)] == expected


@pytest.mark.parametrize(
    ("decl", "expected"),
    [
        ("float a[N][M];", ["M", "N"]),
        ("void f(float (*a)[M]) {}", ["M", None]),
        ("float a[][M][K];", ["K", "M", None]),
        ("float **p;", [None, None]),
        ("float *p[4];", [None, "4"]),
        ("float x;", []),
    ],
)
def test_declarator_levels(decl: str, expected: list[str | None]) -> None:
    # (a pointer to arrays is a parameter here: a statement ``float (*a)[M] = ...;`` parses
    # as an expression, which ``bindings._declared_levels`` reads apart)
    kind = "parameter_declaration" if "(" in decl else "declaration"
    d = first(decl, kind).child_by_field_name("declarator")
    assert d is not None
    assert declarator_levels(d) == expected


def test_stored_names_are_the_roots_of_assignment_and_increment_targets() -> None:
    body = first(
        "{ a[i] = 1; *p += 2; s->n++; --k; x.y[3] = 0; q = r[2]; (*w)[1] = 0; }",
        "compound_statement",
    )
    assert stored_names(body) == {"a", "p", "s", "k", "x", "q", "w"}  # not r, only read


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ('"abc"', 3),
        ('"a\\tb\\x41\\n"', 5),  # an escape sequence is one byte
        ('"ab" "cde"', 5),  # adjacent literals are one string
        ('"é"', 2),  # strlen counts bytes
        ('L"abc"', None),  # wide: not what strlen measures
        ("n", None),
    ],
)
def test_string_length(literal: str, expected: int | None) -> None:
    node = first(f"x = {literal};", "assignment_expression").child_by_field_name("right")
    assert string_length(node) == expected


def test_a_loop_left_by_a_test_on_locals_computed_from_its_counter() -> None:
    # the persistent-block loop of a tiled kernel: its exit test reads a local the body
    # computes from the counter first
    loop = first(
        "for (unsigned p = blockIdx.x;; p += gridDim.x) {"
        " const unsigned ti = (p * 8) / 512 * 8, tj = p % 64; if (ti >= 512) break; use(ti, tj); }",
        "for_statement",
    )
    g = guarded_exit(loop)
    assert g is not None
    assert (g.var, text(g.start), text(g.step), g.step_op) == ("p", "blockIdx.x", "gridDim.x", "+")
    assert g.names == {"ti", "tj"} and text(g.test) == "ti >= 512"
    # a loop with a test of its own, a body that does not open with declarations then the
    # exit, or one whose exit is not a break: none
    for other in (
        "for (int p = 0; p < n; p++) { const int t = p; if (t >= 9) break; }",
        "for (int p = 0;; p++) { use(p); const int t = p; if (t >= 9) break; }",
        "for (int p = 0;; p++) { const int t = p; if (t >= 9) return; }",
        "for (int p = 0;; p++) { if (p >= 9) break; }",
    ):
        assert guarded_exit(first(other, "for_statement")) is None
