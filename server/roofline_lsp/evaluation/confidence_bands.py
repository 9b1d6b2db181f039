"""Accuracy per confidence band for ``eval``: whether a verdict's confidence means what it
says (a top-band verdict should be right far more often than a low-band one).

Bands are half-open on the right: ``low`` [0, 0.6), ``mid`` [0.6, 0.8), ``high`` [0.8, 1]; each
says its range in ``range``.
Only labelled rows with a verdict are banded (a kernel not found has no confidence; it counts
as wrong in the overall accuracy, not here); ``no_verdict`` says how many rows that is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roofline_lsp.evaluation.dataset import Row

LABELS = ("compute", "bandwidth")
# (name, lower bound inclusive, upper bound exclusive; the last band includes 1.0)
BANDS: tuple[tuple[str, float, float], ...] = (
    ("low", 0.0, 0.6),
    ("mid", 0.6, 0.8),
    ("high", 0.8, float("inf")),
)


def band_of(confidence: float) -> str:
    """The name of the band ``confidence`` falls in."""
    for name, lo, hi in BANDS:
        if lo <= confidence < hi:
            return name
    return BANDS[0][0]  # negative or NaN: the lowest band


def confidence_bands(rows: Iterable[Row]) -> dict[str, Any]:
    """Per band: how many labelled verdicts, how many are right, the accuracy, and the
    predicted labels (so a band that is all "bandwidth" shows it)."""
    stats: dict[str, dict[str, Any]] = {
        name: {
            "range": _range(lo, hi),
            "kernels": 0,
            "correct": 0,
            "accuracy": None,
            "predicted": {},
        }
        for name, lo, hi in BANDS
    }
    no_verdict = 0
    for r in rows:
        if r.label not in LABELS:
            continue
        if r.verdict is None or r.predicted is None:
            no_verdict += 1
            continue
        s = stats[band_of(r.verdict.confidence)]
        s["kernels"] += 1
        s["correct"] += r.predicted == r.label
        s["predicted"][r.predicted] = s["predicted"].get(r.predicted, 0) + 1
    for s in stats.values():
        if s["kernels"]:
            s["accuracy"] = round(s["correct"] / s["kernels"], 4)
    return {**stats, "no_verdict": no_verdict}


def _range(lo: float, hi: float) -> str:
    if lo <= 0:
        return f"<{hi:g}"
    return f">={lo:g}" if hi == float("inf") else f"{lo:g}-{hi:g}"
