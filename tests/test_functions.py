"""A function definition's declarator and name (``syntax/functions.py``)."""

from __future__ import annotations

from tree_sitter import Node

from roofline_lsp.syntax.functions import function_declarator, function_name
from roofline_lsp.syntax.parsing import parse


def _definitions(src: bytes) -> list[Node]:
    root = parse(src).root_node
    out: list[Node] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            out.append(n)
            continue
        stack.extend(reversed(n.named_children))
    return out


def test_the_declarator_under_pointers_and_references_and_the_unqualified_name() -> None:
    src = (
        b"float *scale(float *x) { return x; }\n"
        b"Real_t& Domain::x(Index_t i) { return m_x[i]; }\n"
        b"template <typename T> void ns::copy(T *a) {}\n"
    )
    fns = _definitions(src)
    assert [function_name(f) for f in fns] == ["scale", "x", "copy"]
    for f in fns:
        d = function_declarator(f)
        assert d is not None and d.type == "function_declarator"


def test_a_type_the_grammar_takes_for_a_function_has_no_declarator() -> None:
    # ``struct __align__(8) Pair {...};``: the grammar cannot expand the macro
    fns = _definitions(b"struct __align__(8) Pair { float a, b; };\n")
    assert fns and function_declarator(fns[0]) is None and function_name(fns[0]) == ""
