"""The C arithmetic core shared by the text (``cexpr``) and tree (``expr``) evaluators."""

import pytest

from roofline_lsp.syntax.carith import (
    TEXT_DIALECT,
    TREE_DIALECT,
    binary,
    cast,
    parse_literal,
    unary,
)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("256u", 256),
        ("0x1F", 31),
        ("0b101", 5),
        ("1'000", 1000),
        ("1.5", 1.5),
        ("2.5f", 2.5),
        ("1e3", 1000.0),
        ("0x", None),
    ],
)
def test_literals(raw: str, value: float | None) -> None:
    got = parse_literal(raw, TREE_DIALECT)
    assert got == value and type(got) is type(value)


def test_integer_division_truncates_toward_zero() -> None:
    assert binary("/", -7, 2, True, TEXT_DIALECT) == -3
    assert binary("/", -7, 2, False, TEXT_DIALECT) == -3.5
    assert binary("/", 1, 0, True, TREE_DIALECT) is None


def test_comparisons_and_bitwise_give_integers() -> None:
    assert binary("<", 1, 2, True, TEXT_DIALECT) == 1
    assert binary("&&", 1, 0, True, TEXT_DIALECT) == 0
    assert binary("^", 6, 3, True, TREE_DIALECT) == 5
    assert binary("?", 1, 2, True, TREE_DIALECT) is None


def test_unary_and_cast() -> None:
    assert unary("~", 0) == -1
    assert unary("!", 3) == 0
    assert unary("*", 3) is None
    assert cast(-2.7, integer=True) == -2
    assert cast(3, integer=False) == 3.0


def test_where_the_dialects_differ() -> None:
    """Kept as the evaluators computed before they shared this module."""
    assert parse_literal("010", TEXT_DIALECT) == 10
    assert parse_literal("010", TREE_DIALECT) == 8
    assert binary("%", -7, 2, True, TEXT_DIALECT) == 1.0  # floored
    assert binary("%", -7, 2, True, TREE_DIALECT) == -1.0  # C
    assert binary("<<", 1, 63, True, TEXT_DIALECT) == 1 << 63
    assert binary("<<", 1, 63, True, TREE_DIALECT) is None
    assert binary("<<", 2.5, 1, False, TEXT_DIALECT) is None
    assert binary("<<", 2.5, 1, False, TREE_DIALECT) == 4
