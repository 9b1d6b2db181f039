"""How numbers are written for people: short numbers, significant digits, SI-prefixed
quantities, byte sizes and durations.

The bottom layer (no imports from the package) so that every renderer (the estimator's terms,
LLM prompts, the GPU table, hover cards and reports) can write the same value the same way.
"""

from __future__ import annotations

import math

# (factor, prefix) from the largest down; below the last, no prefix.
_SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# (factor, unit) of a duration given in nanoseconds, from the largest down.
_DURATION_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"))


def fmt_num(x: float | None) -> str:
    """Short human number: 0.25, 17, 1.2e+03 (two significant digits at most, ``-`` when
    unknown). What hover cards, reports and ``check`` output show."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000 or a < 0.01:
        return f"{x:.2g}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.2f}".rstrip("0").rstrip(".")


def fmt_sig(x: float | None, digits: int = 3, missing: str = "-") -> str:
    """``x`` to ``digits`` significant digits, in exponent notation when that is shorter
    (``0.000123``, ``1.23e+06``); ``missing`` when unknown."""
    if x is None:
        return missing
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def fmt_count(x: float) -> str:
    """A count or ratio in a verdict's terms: whole from 100 up to a million (``1234``), else
    three significant digits (``0.125``, ``42``, ``2.5e+06``)."""
    if 100 <= x < 1e6:
        return f"{x:.0f}"
    return f"{x:.3g}"


def fmt_fixed(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, never in exponent notation (``1979``,
    ``0.9375``); integers of more digits are written whole."""
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals > 0 else f"{x:.0f}"


def fmt_si(x: float, unit: str, digits: int = 3) -> str:
    """``x`` with an SI prefix (k, M, G, T, P) and ``unit``: ``19.5 TFLOP/s``, ``760 GB/s``."""
    for factor, prefix in _SI_PREFIXES:
        if abs(x) >= factor:
            return f"{x / factor:.{digits}g} {prefix}{unit}"
    return f"{x:.{digits}g} {unit}"


def fmt_bytes(n: float) -> str:
    """A byte count with a decimal SI prefix: ``512 B``, ``4.19 MB``, ``40 GB``."""
    return fmt_si(n, "B")


def fmt_duration(ns: float) -> str:
    """A duration given in nanoseconds, in the largest unit it reaches: ``850 ns``,
    ``12.3 µs``, ``1.5 ms``, ``2 s``."""
    for factor, unit in _DURATION_UNITS:
        if ns >= factor:
            return f"{ns / factor:.3g} {unit}"
    return f"{ns:.3g} ns"
