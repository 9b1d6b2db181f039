"""`check --format json` output: one JSON object per kernel with its verdict on every GPU."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from roofline_lsp.model.report import FileReport, KernelReport
from roofline_lsp.model.terms import AssumptionTerm
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.present.explanations import explanation, term_texts
from roofline_lsp.present.text_output import display_path


def verdict_json(v: Verdict) -> dict[str, Any]:
    d: dict[str, Any] = {
        "gpu": v.gpu,
        "bound": v.bound,
        "source": v.source,
        "confidence": round(v.confidence, 3),
        "deciding": v.deciding,
        "ai": {p: (None if a is None else round(a, 6)) for p, a in v.ai.items()},
        "ridge": {p: round(r, 6) for p, r in v.ridge.items()},
        "explanation": explanation(v),
        "terms": list(term_texts(v)),
    }
    if v.counts is not None:
        c = v.counts
        d["counts"] = {
            "per": c.per,
            "flops": {p: round(x, 3) for p, x in c.flops.items()},
            "int_ops": round(c.int_ops, 3),
            "bytes_loaded": round(c.bytes_loaded, 3),
            "bytes_stored": round(c.bytes_stored, 3),
            "threads": c.threads,
            "counts_from": c.counts_from,
        }
    assumed = [t for t in v.terms if isinstance(t, AssumptionTerm)]
    if assumed:
        d["assumed"] = [
            {
                "kind": t.kind,
                "value": t.value,
                "why": t.why,
                "hint_names": list(t.names),
                **({"line": t.line, "var": t.var, "share": t.share} if t.kind == "trips" else {}),
            }
            for t in assumed
        ]
    if v.suggestions:
        d["suggestions"] = [{"line": s.line, "message": s.message} for s in v.suggestions]
    return d


def kernel_json(kr: KernelReport, path: str) -> dict[str, Any]:
    k = kr.kernel
    d: dict[str, Any] = {
        "file": path,
        "line": k.line,
        "end_line": k.end_line,
        "kernel": k.name,
        "language": k.language,
        "verdicts": [verdict_json(v) for v in kr.verdicts],
    }
    if k.directive:
        d["directive"] = k.directive
    if k.recovered:
        d["recovered"] = True
    return d


def to_json(reports: Iterable[FileReport], base: str | None = None) -> list[dict[str, Any]]:
    return [kernel_json(kr, display_path(fr.path, base)) for fr in reports for kr in fr.kernels]


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
