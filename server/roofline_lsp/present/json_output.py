"""`check --format json` output: one JSON object per kernel with its verdict on every GPU."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from roofline_lsp.advice.advise import file_advice, kernel_advice
from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.model.gpus import GpuRegistry
from roofline_lsp.model.report import FileReport, KernelReport
from roofline_lsp.model.terms import AssumptionTerm, TypeTerm
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.present.explanations import explanation, term_texts
from roofline_lsp.present.text_output import display_path, position


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
            "display_bytes": round(c.display_bytes, 3),
            "threads": c.threads,
            "counts_from": c.counts_from,
            "int_ops_from": "source" if c.ptx_flops_only else c.counts_from,
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
                **({"line": t.line} if t.kind == "rest" else {}),
                **({"read_at_run_time": list(t.read)} if t.read else {}),
            }
            for t in assumed
        ]
    types = [t for t in v.terms if isinstance(t, TypeTerm)]
    if types:
        d["assumed_types"] = {t.param: t.assumed for t in types}
    if v.suggestions:
        d["suggestions"] = [{"line": s.line, "message": s.message} for s in v.suggestions]
    return d


def diagnostic_json(source: bytes, a: Advice) -> dict[str, Any]:
    """One piece of advice: rule, 1-based position (columns in bytes), message, severity,
    the estimated gain and the fix's edits."""
    line, col = position(source, a.start)
    end_line, end_col = position(source, a.end)
    g = a.gain
    d: dict[str, Any] = {
        "rule": a.code,
        "name": a.rule.slug,
        "line": line,
        "column": col,
        "end_line": end_line,
        "end_column": end_col,
        "message": a.message,
        "severity": a.severity,
        "estimated_gain": None
        if g is None
        else {"speedup": g.speedup, "fewer_bytes": g.fewer_bytes, "gpu": g.gpu, "basis": g.basis},
        "help_uri": a.rule.href,
    }
    if a.fix is not None:
        edits = []
        for e in a.fix.edits:
            sl, sc = position(source, e.start)
            el, ec = position(source, e.end)
            edits.append(
                {"line": sl, "column": sc, "end_line": el, "end_column": ec, "text": e.new_text}
            )
        d["fix"] = {"title": a.fix.title, "edits": edits}
    return d


def kernel_json(
    kr: KernelReport, path: str, advice: Sequence[Advice] = (), source: bytes = b""
) -> dict[str, Any]:
    """One kernel with its verdicts and, given its ``advice`` (and the analysed ``source``
    the advice's byte spans refer to), its ``diagnostics``."""
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
    d["diagnostics"] = [diagnostic_json(source, a) for a in advice]
    return d


def to_json(
    reports: Iterable[FileReport], base: str | None = None, registry: GpuRegistry | None = None
) -> list[dict[str, Any]]:
    """Every kernel of ``reports`` with its verdicts and diagnostics (most valuable first);
    ``registry``: the GPU profiles of the run (see ``advise.file_advice``)."""
    out = []
    for fr in reports:
        path = display_path(fr.path, base)
        grouped = kernel_advice(fr, file_advice(fr, registry))
        for kr, advice in zip(fr.kernels, grouped, strict=True):
            out.append(kernel_json(kr, path, advice, fr.detection.source))
    return out


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
