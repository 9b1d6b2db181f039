"""`eval`: score detection and verdicts against a labelled dataset folder
(``kernels.jsonl`` + ``sources/``, laid out like ``../shared/eval/dev``).

Only a row's ``file``, ``line``, ``block``, ``grid`` and ``exe_args`` reach the estimator;
``label``, ``measured``, ``bound_by`` and ``paper_*`` are used for scoring alone.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from roofline_lsp.detect.kernels import Detection, Kernel, detect
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.model.verdict import Verdict

LABELS = ("compute", "bandwidth")
MEASURED_AI = {"sp": "sp_ai", "dp": "dp_ai", "int": "int_ai"}
ESTIMATED_AI = {"sp": "fp32", "dp": "fp64", "int": "int"}


class DatasetError(ValueError):
    pass


@dataclass
class Row:
    data: dict[str, Any]
    kernel: Kernel | None = None
    detection: Detection | None = None
    verdict: Verdict | None = None
    error: str | None = None

    @property
    def id(self) -> str:
        return str(self.data.get("id"))

    @property
    def label(self) -> str | None:
        return self.data.get("label")

    @property
    def language(self) -> str:
        return str(self.data.get("language", "cuda"))

    @property
    def predicted(self) -> str | None:
        if self.kernel is None or self.verdict is None:
            return None
        return self.verdict.bound

    def inputs(self) -> Inputs:
        def dim(v: Any) -> tuple[int, int, int] | None:
            if isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) for x in v):
                return (v[0], v[1], v[2])
            return None

        return Inputs(
            block=dim(self.data.get("block")),
            grid=dim(self.data.get("grid")),
            args=self.data.get("exe_args") or None,
        )


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
                **({"explanation": r.verdict.explanation} if r.verdict else {}),
                **({"error": r.error} if r.error else {}),
            }
            for r in self.rows
        ]
        return out


def load_rows(dataset: str) -> list[Row]:
    path = os.path.join(dataset, "kernels.jsonl")
    if not os.path.isfile(path):
        raise DatasetError(f"{dataset}: no kernels.jsonl (expected a folder like shared/eval/dev)")
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{n}: invalid JSON ({e.msg})") from None
            if not isinstance(data, dict) or "file" not in data or "line" not in data:
                raise DatasetError(f"{path}:{n}: a row needs 'file' and 'line'")
            rows.append(Row(data))
    if not rows:
        raise DatasetError(f"{path}: no rows")
    sources = os.path.join(dataset, "sources")
    if not os.path.isdir(sources):
        raise DatasetError(
            f"{sources}: missing; get the sources first (see the dataset's README.md)"
        )
    return rows


def run_eval(
    dataset: str,
    classify: Callable[[Row], Verdict | None] | None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> EvalResult:
    """Detect every row's kernel (a detected kernel of its file starting at its ``line``) and,
    unless ``classify`` is None (detection only), attach a verdict."""
    rows = load_rows(dataset)
    start = time.perf_counter()
    by_file: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_file[str(r.data["file"])].append(r)
    done = 0
    for rel, file_rows in by_file.items():
        path = os.path.join(dataset, "sources", rel)
        try:
            with open(path, "rb") as f:
                source = f.read()
            det = detect(source, path)
        except OSError as e:
            for r in file_rows:
                r.error = f"cannot read {rel}: {e.strerror}"
            det = None
        for r in file_rows:
            if det is not None:
                r.detection = det
                r.kernel = next((k for k in det.kernels if k.line == r.data["line"]), None)
            if r.kernel is not None and classify is not None:
                try:
                    r.verdict = classify(r)
                except Exception as e:  # a failing kernel is scored wrong, never fatal
                    r.error = f"{type(e).__name__}: {e}"
            done += 1
            if progress:
                progress(done, len(rows))
    return EvalResult(rows, time.perf_counter() - start, classify is None)


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
    return cov / (vx * vy) ** 0.5


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
