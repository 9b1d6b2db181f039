"""Macro expansion of ``macro_expansion.py`` (a loop header hidden in a macro) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.roofline import Inputs, analyze
from roofline_lsp.model.gpus import load_registry


@pytest.fixture(scope="module")
def gpu():  # type: ignore[no-untyped-def]
    return load_registry().get("rtx3080")


def count(gpu, tmp_path: Path, src: str, name: str = "k.cu", **inputs) -> KernelEstimate:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    assert det.kernels, "no kernel detected"
    return analyze(det.kernels[0], det, gpu, Inputs(**inputs))


LAUNCH = dict(block=(256, 1, 1), grid=(1024, 1, 1))


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
