"""Macro expansion of ``macro_expansion.py`` (a loop header hidden in a macro) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import count

from roofline_lsp.syntax.macro_substitution import substitute_macro


def test_openmp_loop_macro(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a loop header hidden in a macro (no semicolon): the region is still the loop
    src = (
        "#define LOOP(i, n) for (int i = 0; i < (n); i++)\n"
        "void f(float *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  LOOP(i, 4096) {\n"
        "    y[i] = y[i] + 1.0f;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="m.cpp")
    assert a.threads == 4096
    assert a.counts.flops["fp32"] == pytest.approx(1.0)


def test_a_subscript_argument_loses_its_parentheses(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # LERP(a[k], a[i], 0.3f) -> ((a[k]) + 0.3f * ((a[i]) - (a[k]))): there `(a[i]) - (a[k])`
    # parses as a cast of -(a[k]) to an array type `a[i]`, and the subtraction was lost.
    # A name followed by subscripts and members goes in bare (nothing binds tighter).
    body = "((a) + (t) * ((b) - (a)))"
    expanded = substitute_macro(body, ("a", "b", "t"), ["a[k]", "p[i].x", "0.3f"])
    assert expanded.split() == ["(", "a[k]", "+", "0.3f", "*", "(", "p[i].x", "-", "a[k]", "))"]
    assert substitute_macro("((x) * 2)", ("x",), ["a[k] + 1"]) == "((a[k] + 1) * 2)"
    # nvcc -ptx: per trip a sub, an fma and the add to s: 4 FP32 FLOP, 64 trips (was 128)
    a = count(
        gpu,
        tmp_path,
        "#define LERP(a, b, t) ((a) + (t) * ((b) - (a)))\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int k = 0; k < 64; k++) s += LERP(a[k], a[i], 0.3f);\n"
        "  b[i] = s;\n"
        "}\n",
        block=(256, 1, 1),
        grid=(4096, 1, 1),
    )
    assert a.counts.flops["fp32"] == pytest.approx(256)


def test_a_statement_expression_macro_gives_its_last_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # PPCG's ppcg_min is a GNU statement expression with __typeof__ locals. Block b0 of 12
    # runs c1 = 0, 32, ... <= min(368, 32 * b0 + 30): b0 + 1 trips for b0 <= 10, 12 for
    # b0 = 11, so (66 + 12) / 12 = 6.5 on average (before: the 16-trip default)
    src = (
        "#define ppcg_min(x,y) ({ __typeof__(x) _x = (x); __typeof__(y) _y = (y); "
        "_x < _y ? _x : _y; })\n"
        "__global__ void k(float *y, const float *a) {\n"
        "  int b0 = blockIdx.x, t0 = threadIdx.x;\n"
        "  for (int c1 = 0; c1 <= ppcg_min(368, 32 * b0 + 30); c1 += 32)\n"
        "    y[32 * b0 + t0] += a[c1];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(32, 1, 1), grid=(12, 1, 1))
    (loop,) = a.counts.loops
    assert (loop.trips, loop.source) == (pytest.approx(6.5, rel=0.01), "argument")
