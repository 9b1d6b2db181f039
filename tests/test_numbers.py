"""Number formatting: short numbers, significant digits, SI prefixes, bytes and durations."""

from __future__ import annotations

import pytest

from roofline_lsp.model.numbers import (
    fmt_bytes,
    fmt_count,
    fmt_duration,
    fmt_fixed,
    fmt_num,
    fmt_si,
    fmt_sig,
)


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (None, "-"),
        (0, "0"),
        (0.25, "0.25"),
        (0.005, "0.005"),
        (1.0, "1"),
        (2.5, "2.5"),
        (17.0, "17"),
        (17.25, "17.2"),
        (123.4, "123"),
        (1234.0, "1.2e+03"),
        (-0.5, "-0.5"),
    ],
)
def test_fmt_num_is_short(x: float | None, shown: str) -> None:
    assert fmt_num(x) == shown


def test_fmt_sig() -> None:
    assert fmt_sig(None) == "-"
    assert fmt_sig(None, missing="unknown") == "unknown"
    assert fmt_sig(0.0) == "0"
    assert fmt_sig(1234567.0) == "1.23e+06"
    assert fmt_sig(0.000123456) == "0.000123"
    assert fmt_sig(3.14159, digits=2) == "3.1"


def test_fmt_fixed_never_uses_exponents() -> None:
    assert fmt_fixed(0) == "0"
    assert fmt_fixed(19500.0) == "19500"
    assert fmt_fixed(1979.0) == "1979"
    assert fmt_fixed(0.9375) == "0.9375"
    assert fmt_fixed(12.5) == "12.5"
    assert fmt_fixed(0.000123456) == "0.0001235"


def test_fmt_si_bytes_and_durations() -> None:
    assert fmt_si(19.5e12, "FLOP/s") == "19.5 TFLOP/s"
    assert fmt_si(760e9, "B/s") == "760 GB/s"
    assert fmt_si(12.0, "B") == "12 B"
    assert fmt_si(-2500.0, "W") == "-2.5 kW"
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(4194304) == "4.19 MB"
    assert fmt_bytes(40e9) == "40 GB"
    assert fmt_duration(850) == "850 ns"
    assert fmt_duration(12345) == "12.3 µs"
    assert fmt_duration(1.5e6) == "1.5 ms"
    assert fmt_duration(2e9) == "2 s"


def test_fmt_count_is_whole_from_a_hundred_to_a_million() -> None:
    assert [fmt_count(x) for x in (0.125, 42.0, 1234.5, 999_999.0, 2.5e6)] == [
        "0.125",
        "42",
        "1234",
        "999999",
        "2.5e+06",
    ]
