"""Accuracy per confidence band (``evaluation/confidence_bands.py``)."""

from __future__ import annotations

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.evaluation.confidence_bands import band_of, confidence_bands
from roofline_lsp.evaluation.dataset import Row
from roofline_lsp.model.verdict import Bound, Verdict

SOURCE = b"__global__ void k(float *x) { x[threadIdx.x] = 0.0f; }\n"


@pytest.mark.parametrize(
    ("confidence", "band"),
    [(0.0, "low"), (0.599, "low"), (0.6, "mid"), (0.799, "mid"),
     (0.8, "high"), (1.0, "high"), (float("nan"), "low")],
)  # fmt: skip
def test_bands_are_half_open(confidence: float, band: str) -> None:
    assert band_of(confidence) == band


def row(label: str | None, bound: Bound | None, confidence: float = 0.9) -> Row:
    det = detect(SOURCE, "k.cu")
    r = Row({"id": "x", "file": "k.cu", "line": 1, "label": label}, detection=det)
    if bound is not None:
        r.kernel = det.kernels[0]
        r.verdict = Verdict("k", "RTX-3080", bound, "static", confidence, {}, {}, None)
    return r


def test_accuracy_per_band() -> None:
    rows = [
        row("compute", "compute", 0.95),
        row("bandwidth", "bandwidth", 0.85),
        row("bandwidth", "compute", 0.8),  # wrong, high
        row("bandwidth", "bandwidth", 0.7),
        row("compute", "bandwidth", 0.3),  # wrong, low
        row("compute", None),  # not found: no confidence, not banded
        row(None, "compute", 0.9),  # unlabelled: not scored
    ]
    got = confidence_bands(rows)
    assert got["high"] == {
        "range": ">=0.8",
        "kernels": 3,
        "correct": 2,
        "accuracy": round(2 / 3, 4),
        "predicted": {"compute": 2, "bandwidth": 1},
    }
    assert got["mid"]["accuracy"] == 1.0 and got["mid"]["kernels"] == 1
    assert got["low"]["accuracy"] == 0.0 and got["low"]["kernels"] == 1
    assert got["no_verdict"] == 1
    assert (got["low"]["range"], got["mid"]["range"]) == ("<0.6", "0.6-0.8")
    empty = confidence_bands([])
    assert empty["high"]["accuracy"] is None and empty["no_verdict"] == 0
