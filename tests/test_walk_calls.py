"""Counting rules of ``walk_calls.py`` (device functions and macros followed) on small
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


def test_macros_and_device_functions_followed(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = count(
        gpu,
        tmp_path,
        "#define SQR(v) ((v) * (v))\n"
        "#define IDX (blockIdx.x * blockDim.x + threadIdx.x)\n"
        "__device__ float norm2(const float *p, int i) { return SQR(p[i]) + SQR(p[i + 1]); }\n"
        "__global__ void k(float *x, float *y) {\n"
        "  y[IDX] = norm2(x, 2 * IDX);\n"
        "}\n",
        **LAUNCH,
    )
    # two squares and an add: 3 FP32
    assert a.counts.flops["fp32"] == pytest.approx(3.0)
    assert set(a.counts.followed) >= {"norm2", "SQR", "IDX"}
    # the callee's accesses are bound to the caller's buffer x
    assert {x.buffer for x in a.counts.accesses} == {"x", "y"}
