"""Counting rules of ``walk_calls.py`` (device functions and macros followed) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, count


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
