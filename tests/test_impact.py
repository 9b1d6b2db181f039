"""What a fix is worth from the roofline model (advice/impact.py)."""

from __future__ import annotations

import pytest

from roofline_lsp.advice.impact import (
    compute_bound_headroom,
    fewer_dram_bytes,
    fp64_to_fp32,
    kernel_time,
)
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.verdict import Counts

RTX = load_registry().get("rtx3080")


def test_time_is_the_slowest_roof() -> None:
    t = kernel_time(RTX, {"fp32": 1.0}, 0.0, 1000.0)
    assert t == pytest.approx(1000.0 / RTX.dram_bandwidth)


def test_fp64_moved_to_fp32_on_a_low_fp64_rate_gpu() -> None:
    heavy = Counts({"fp64": 1000.0, "fp32": 0.0}, 0.0, 8.0, 8.0)
    g = fp64_to_fp32(RTX, heavy)
    assert g is not None and g.speedup is not None and g.speedup > 10
    light = Counts({"fp64": 0.01, "fp32": 1.0}, 0.0, 8.0, 8.0)
    small = fp64_to_fp32(RTX, light)
    assert small is not None and small.small  # bandwidth-bound: under 5%
    assert fp64_to_fp32(RTX, Counts({"fp32": 1.0}, 0.0, 8.0, 8.0)) is None


def test_uncoalesced_bytes_and_compute_headroom() -> None:
    c = Counts({"fp32": 1.0}, 1.0, 8.0, 4.0)
    g = fewer_dram_bytes(RTX, c, 3.5)
    assert g is not None and g.fewer_bytes == 4.5 and g.speedup == 4.5
    h = compute_bound_headroom(RTX, c, 2.0)  # bandwidth-bound: compute fixes give nothing
    assert h is not None and h.speedup == 1.0 and h.small
