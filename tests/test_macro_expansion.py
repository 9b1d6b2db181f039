"""Macro expansion of ``macro_expansion.py`` (a loop header hidden in a macro) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import count


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
