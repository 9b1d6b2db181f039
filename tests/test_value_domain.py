"""Folding in the counter's value domain (``estimate/value_domain.py``): exact values follow
C (``syntax/carith.py``), means of thread-dependent values fold only where that is linear."""

from __future__ import annotations

import math

import pytest

from roofline_lsp.estimate.value_domain import (
    DATA,
    NOTHING,
    Val,
    extreme_range,
    fold_binary,
    fold_call,
    value_range,
)
from roofline_lsp.syntax.datatypes import FLOAT, INT

EXACT: frozenset[str] = frozenset()
MEAN = frozenset({"tx"})


def test_exact_values_fold_with_c_semantics() -> None:
    assert fold_binary("/", 7, 2, EXACT, integer=True) == 3.0  # truncates toward zero
    assert fold_binary("/", -7, 2, EXACT, integer=True) == -3.0
    assert fold_binary("/", 7, 2, EXACT) == 3.5  # floating point
    assert fold_binary("%", -7, 2, EXACT) == -1.0  # C remainder, not Python's
    assert fold_binary(">>", 20, 2, EXACT) == 5.0
    assert fold_binary("&", 6, 3, EXACT) == 2.0
    assert (fold_binary("<", 1, 2, EXACT), fold_binary("&&", 1, 0, EXACT)) == (1.0, 0.0)
    assert fold_binary("/", 1, 0, EXACT) is None and fold_binary("%", 1, 0, EXACT) is None
    assert fold_binary("+", None, 1, EXACT) is None


def test_means_fold_only_where_linear() -> None:
    # threadIdx.x over a block of 256 has mean 127.5: (tx / 2) has mean 63.75, not 63
    assert fold_binary("/", 127.5, 2, MEAN, integer=True) == 63.75
    assert fold_binary(">>", 127.5, 1, MEAN) == 63.75  # a shift scales the mean
    assert fold_binary("<<", 127.5, 1, MEAN) == 255.0
    assert fold_binary("*", 127.5, 2, MEAN) == 255.0
    assert fold_binary("%", 127.5, 32, MEAN) is None  # not linear: unknown
    assert fold_binary("&", 127.5, 31, MEAN) is None


def test_floor_and_ceil_fold_on_a_mean_but_not_on_data() -> None:
    # the row a block starts at, floorf(blockIdx.y * 16 * 1000 / 1500.f): mean 490.67
    assert fold_call("floor", [Val(FLOAT, frozenset({"by"}), 490.67)]) == 490.0
    assert fold_call("ceil", [Val(FLOAT, frozenset({"by"}), 501.33)]) == 502.0
    assert fold_call("floor", [Val(FLOAT, frozenset({"by", DATA}), 3.5)]) is None
    # not linear on a spread: min(i, n) of a thread's i is not min of the mean
    assert fold_call("min", [Val(FLOAT, MEAN, 127.5), Val(FLOAT, EXACT, 100.0)]) is None
    assert fold_call("min", [Val(FLOAT, EXACT, 127.5), Val(FLOAT, EXACT, 100.0)]) == 100.0


def test_math_functions_of_constants_fold() -> None:
    # acos(-1) is pi, exp(0) is 1; an operand known only at run time does not fold
    assert fold_call("acos", [Val(FLOAT, frozenset(), -1.0)]) == pytest.approx(math.pi)
    assert fold_call("exp", [Val(FLOAT, frozenset(), 0.0)]) == 1.0
    assert fold_call("acos", [Val(FLOAT, frozenset({DATA}), -1.0)]) is None
    assert fold_call("acos", [Val(FLOAT, frozenset(), 2.0)]) is None  # no real value


def test_a_value_read_from_memory_masked_or_wrapped_by_a_constant_is_bounded() -> None:
    # bins[v & 255], bins[v % 64] of a v read from memory: [0, 255] and [0, 63]; other
    # operators on it stay unknown
    v = Val(INT, frozenset({DATA}))
    assert value_range("&", v, Val(INT, NOTHING, 255.0)) == (0.0, 255.0)
    assert value_range("%", v, Val(INT, NOTHING, 64.0)) == (0.0, 63.0)
    assert value_range("+", v, Val(INT, NOTHING, 64.0)) is None


def test_a_clamp_between_constants_bounds_what_it_clamps() -> None:
    # min(max(bin, 0), 99) of a bin read from memory: the inner max is ("max", 0) -> [0, 99];
    # max(min(bin, 99), 0) likewise; without the inner extreme, nothing is known
    v = Val(INT, frozenset({DATA}))
    hi, lo = Val(INT, NOTHING, 99.0), Val(INT, NOTHING, 0.0)
    assert extreme_range("min", [v, hi], ("max", 0.0)) == (0.0, 99.0)
    assert extreme_range("max", [v, lo], ("min", 99.0)) == (0.0, 99.0)
    assert extreme_range("min", [v, hi]) is None
