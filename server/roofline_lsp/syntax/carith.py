"""C arithmetic shared by the expression evaluators: operator semantics and literal parsing.

``cexpr`` evaluates expression *text* (launch configurations, ``#define`` values) and ``expr``
evaluates tree-sitter *nodes* (kernel bodies, loop headers); both fold operators and literals
here, so that a value computes the same wherever it is evaluated.

The two evaluators disagreed on a few points before they shared this module; to keep every
result unchanged, those points are the fields of :class:`Dialect` (one value per evaluator,
``TEXT_DIALECT`` and ``TREE_DIALECT``) rather than silently unified.

Values are Python ``int`` (C integers) or ``float``. ``None`` from an operator means the
operation is undefined here (division by zero, shift out of range); other invalid operations
raise the Python exception they naturally raise (``ValueError``, ``OverflowError``...), which
each evaluator handles as it always has.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

Number = int | float

_SUFFIX = "uUlLfF"


@dataclass(frozen=True)
class Dialect:
    """Where the text and tree evaluators differ (kept as they were)."""

    shift_limit: int  # a shift by this many bits or more is undefined
    shift_needs_integers: bool  # shifting a float operand is undefined
    floored_remainder: bool  # ``%`` rounds the quotient down (Python) rather than to 0 (C)
    octal_literals: bool  # ``010`` is 8 (C), rather than 10


# ``cexpr.evaluate`` (expression text)
TEXT_DIALECT = Dialect(
    shift_limit=64, shift_needs_integers=True, floored_remainder=True, octal_literals=False
)
# ``expr.value`` (tree-sitter nodes)
TREE_DIALECT = Dialect(
    shift_limit=63, shift_needs_integers=False, floored_remainder=False, octal_literals=True
)

# math functions both evaluators know, by C name
MATH_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "sqrtf": math.sqrt,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "log2f": math.log2,
    "log": math.log,
    "logf": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "pow": math.pow,
    "powf": math.pow,
    "fabs": abs,
    "fabsf": abs,
    "abs": abs,
}

_COMPARISONS: dict[str, Callable[[Number, Number], bool]] = {
    "<": lambda x, y: x < y,
    ">": lambda x, y: x > y,
    "<=": lambda x, y: x <= y,
    ">=": lambda x, y: x >= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "&&": lambda x, y: bool(x) and bool(y),
    "||": lambda x, y: bool(x) or bool(y),
}


def parse_literal(raw: str, dialect: Dialect, floating: bool = False) -> Number | None:
    """The value of a C number literal (``1e-3f``, ``0x10``, ``0b101``, ``1'000``, ``256u``):
    an ``int`` for an integer literal, a ``float`` for a floating one; None if malformed.
    ``floating`` reads a decimal literal as a float whatever its form (the tree evaluator
    computes in floats; the text one splits an ``f`` suffix off before)."""
    raw = raw.replace("'", "")
    low = raw.lower()
    try:
        if low.startswith("0x"):
            return int(low.rstrip("ul"), 16)
        if low.startswith("0b"):
            return int(low[2:].rstrip("ul"), 2)
        body = raw.rstrip(_SUFFIX)
        if dialect.octal_literals and len(body) > 1 and body.startswith("0") and body.isdigit():
            return int(body, 8)
        if floating or "." in body or "e" in body.lower() or "f" in raw[len(body) :].lower():
            return float(body)
        try:
            return int(body)
        except ValueError:
            return float(body)  # what int() refuses but float() reads, e.g. "inf"
    except ValueError:
        return None


def cast(v: Number, integer: bool) -> Number:
    """``(int) v`` (truncation toward zero) when ``integer``, else ``(double) v``."""
    return math.trunc(v) if integer else float(v)


def unary(op: str, v: Number) -> Number | None:
    """``-v``, ``+v``, ``!v``, ``~v``; None for another operator."""
    if op == "-":
        return -v
    if op == "+":
        return v
    if op == "!":
        return int(not v)
    if op == "~":
        return ~int(v)
    return None


def binary(op: str, a: Number, b: Number, integer: bool, dialect: Dialect) -> Number | None:
    """``a op b`` for a C binary operator. ``integer``: both operands are C integers (then
    ``/`` truncates toward zero). Comparisons and logical operators give 0 or 1."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            return None
        return math.trunc(a / b) if integer else a / b
    if op == "%":
        if b == 0:
            return None
        if dialect.floored_remainder:
            return float(int(a) % int(b))
        return math.fmod(int(a), int(b))
    if op in ("<<", ">>"):
        if (dialect.shift_needs_integers and not integer) or not 0 <= b < dialect.shift_limit:
            return None
        return int(a) << int(b) if op == "<<" else int(a) >> int(b)
    if op == "&":
        return int(a) & int(b)
    if op == "|":
        return int(a) | int(b)
    if op == "^":
        return int(a) ^ int(b)
    compare = _COMPARISONS.get(op)
    return int(compare(a, b)) if compare is not None else None
