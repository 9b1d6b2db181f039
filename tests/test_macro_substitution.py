"""Argument substitution of ``macro_substitution.py`` (expected texts by hand)."""

from __future__ import annotations

from roofline_lsp.syntax.macro_substitution import substitute_macro


def test_a_plain_argument_loses_its_parentheses() -> None:
    # ((x)*(n)+(y)) with variables: `(n)+(y)` would parse as a cast of `+(y)` to a type `n`,
    # so a name or number argument goes in bare; an expression or a type keeps them
    body = "((x)*(n)+(y))"
    assert substitute_macro(body, ("x", "n", "y"), ["i", "n", "7"]).split() == [
        "(",
        "i",
        "*",
        "n",
        "+",
        "7",
        ")",
    ]
    assert substitute_macro(body, ("x", "n", "y"), ["a+b", "n", "j"]) == "((a+b)* n + j )"
    assert substitute_macro("((T)(v))", ("T", "v"), ["float", "q"]) == "((float)(q))"


def test_a_call_s_parentheses_stay() -> None:
    # `#define H2F(input) static_cast<accscalar_t>(input)`: without its parentheses
    # `static_cast<accscalar_t> ir` parses as two comparisons, a bool (and a half-precision
    # kernel's float math came out FP64: gru's sigmoid of it ran `exp` of an integer)
    cast = "static_cast<accscalar_t>(input)"
    assert substitute_macro(cast, ("input",), ["ir"]) == "static_cast<accscalar_t>(ir)"
    assert substitute_macro("f(x) + (x)", ("x",), ["a"]) == "f(a) +  a "
    assert substitute_macro("a[i](x)", ("x",), ["b"]) == "a[i](b)"


def test_token_pasting_joins_and_stringizing_quotes() -> None:
    # ``REPEAT_##n(x)`` with n = 4 calls REPEAT_4 (before: ``##n`` was taken for ``#n``, a
    # string, and ``REP_ ## n`` left two tokens)
    assert substitute_macro("REPEAT_##n(x)", ("n", "x"), ["4", "y"]) == "REPEAT_4(y)"
    assert substitute_macro("REPEAT_ ## n(x)", ("n", "x"), ["4", "y"]) == "REPEAT_4(y)"
    assert substitute_macro("a##b", ("a", "b"), ["x", "y"]) == "xy"
    assert substitute_macro("puts(#a); a", ("a",), ["v"]) == 'puts(""); v'
