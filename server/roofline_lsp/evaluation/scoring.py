"""`eval`: score detection and verdicts against a labelled dataset folder
(``kernels.jsonl`` + ``sources/``, laid out like ``../shared/eval/dev``).

Only a row's ``file``, ``line``, ``block``, ``grid``, ``exe_args`` and the template arguments of
its ``signature`` reach the estimator;
``label``, ``measured``, ``bound_by`` and ``paper_*`` are used for scoring alone.

Each score block (all rows, per language, the balanced subset) has the confusion matrix,
accuracy, balanced accuracy, the share of bandwidth-bound kernels called compute-bound, the
error attribution of the launch totals (``attribution.py``; again split by whether the verdict
assumed a launch size, trip count or type; the DRAM misses by whether the reuse model removed
the bytes, ``dram_misses``) and the accuracy per confidence band
(``confidence_bands.py``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roofline_lsp.evaluation.attribution import (
    assumed_kinds,
    assumption_kinds,
    assumption_split,
    attribution_summary,
    dram_misses,
    row_attribution,
)
from roofline_lsp.evaluation.confidence_bands import confidence_bands
from roofline_lsp.evaluation.dataset import Row
from roofline_lsp.present.explanations import explanation

LABELS = ("compute", "bandwidth")
MEASURED_AI = {"sp": "sp_ai", "dp": "dp_ai", "int": "int_ai"}
ESTIMATED_AI = {"sp": "fp32", "dp": "fp64", "int": "int"}


@dataclass
class EvalResult:
    rows: list[Row]
    seconds: float
    detection_only: bool
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out = _scores(self.rows, self.detection_only)
        out["seconds"] = round(self.seconds, 2)
        out["by_language"] = {
            lang: _scores([r for r in self.rows if r.language == lang], self.detection_only)
            for lang in ("cuda", "omp")
        }
        if not self.detection_only:
            out["balanced_subset"] = _scores(
                [r for r in self.rows if r.data.get("balanced")], self.detection_only
            )
            out["ai_spearman"] = ai_spearman(self.rows)
        out.update(self.extra)
        out["predictions"] = [
            {
                "id": r.id,
                "found": r.kernel is not None,
                "label": r.label,
                "predicted": r.predicted,
                **({"explanation": explanation(r.verdict)} if r.verdict else {}),
                **({"error": r.error} if r.error else {}),
                **({} if self.detection_only else _row_figures(r)),
            }
            for r in self.rows
        ]
        return out


def _row_figures(r: Row) -> dict[str, Any]:
    """A prediction's confidence, its launch totals beside the measured ones and, for an
    estimate, what kinds of value it assumed (``[]``: none; the rows of
    ``attribution_by_assumption``)."""
    v = r.verdict
    return {
        **({"confidence": v.confidence} if v else {}),
        "attribution": row_attribution(r),
        **({"assumed": list(assumed_kinds(v))} if v is not None and v.counts is not None else {}),
    }


def _scores(rows: list[Row], detection_only: bool) -> dict[str, Any]:
    n = len(rows)
    detected = sum(r.kernel is not None for r in rows)
    out: dict[str, Any] = {
        "kernels": n,
        "detected": detected,
        "detection_recall": round(detected / n, 4) if n else None,
    }
    if detection_only:
        return out
    confusion: dict[str, Counter[str]] = {lab: Counter() for lab in LABELS}
    for r in rows:
        if r.label in confusion:
            confusion[r.label][str(r.predicted)] += 1
    recalls = []
    for lab in LABELS:
        total = sum(confusion[lab].values())
        if total:
            recalls.append(confusion[lab][lab] / total)
    correct = sum(confusion[lab][lab] for lab in LABELS)
    labelled = sum(sum(c.values()) for c in confusion.values())
    out["accuracy"] = round(correct / labelled, 4) if labelled else None
    out["balanced_accuracy"] = round(sum(recalls) / len(recalls), 4) if recalls else None
    out["confusion"] = {lab: dict(confusion[lab]) for lab in LABELS}
    bandwidth = sum(confusion["bandwidth"].values())
    # the dominant error: a bandwidth-bound kernel called compute-bound (share of all
    # bandwidth-bound rows, a kernel not found counting as not called compute)
    out["bandwidth_called_compute"] = (
        round(confusion["bandwidth"]["compute"] / bandwidth, 4) if bandwidth else None
    )
    out["confidence_bands"] = confidence_bands(rows)
    out["attribution"] = attribution_summary(rows)
    out["attribution_by_assumption"] = assumption_split(rows)
    out["attribution_by_assumption_kind"] = assumption_kinds(rows)
    out["dram_misses"] = dram_misses(rows)
    return out


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    root: float = (vx * vy) ** 0.5
    return cov / root


def ai_spearman(rows: Iterable[Row]) -> dict[str, float | None]:
    """Rank correlation of estimated vs measured AI per precision, where measured > 0."""
    out: dict[str, float | None] = {}
    for key, measured_key in MEASURED_AI.items():
        xs, ys = [], []
        for r in rows:
            m = (r.data.get("measured") or {}).get(measured_key)
            if r.verdict is None or not isinstance(m, int | float) or m <= 0:
                continue
            est = r.verdict.ai.get(ESTIMATED_AI[key])
            xs.append(est if est is not None else 0.0)
            ys.append(float(m))
        rho = spearman(xs, ys)
        out[key] = round(rho, 4) if rho is not None else None
    return out


def error_groups(result: EvalResult) -> dict[str, list[Row]]:
    """Mispredicted rows grouped by cause, for ``eval --errors``."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in result.rows:
        if r.kernel is None:
            groups["kernel not found"].append(r)
        elif r.error:
            groups["analysis failed"].append(r)
        elif r.predicted != r.label:
            v = r.verdict
            if r.label == "compute":
                by = "+".join(r.data.get("bound_by") or []) or "?"
                cause = f"missed compute-bound (measured bound by {by})"
            else:
                cause = f"false compute-bound (estimated {v.deciding if v else '?'} AI too high)"
            groups[cause].append(r)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))
