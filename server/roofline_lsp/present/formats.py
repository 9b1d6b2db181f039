"""`check` output: text lines, JSON objects and SARIF 2.1.0 (GitHub code scanning)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from roofline_lsp import __version__
from roofline_lsp.engine.analysis import FileReport, KernelReport
from roofline_lsp.model.verdict import Verdict

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
README_URL = "https://github.com/roofline-lsp/roofline-lsp#verdicts"
_RULES = {
    "compute-bound": "The kernel's arithmetic intensity reaches the GPU's ridge point: its "
    "speed is limited by arithmetic throughput.",
    "bandwidth-bound": "The kernel's arithmetic intensity is below the GPU's ridge point: its "
    "speed is limited by DRAM bandwidth.",
    "unknown-bound": "The kernel could not be classified.",
}


def fmt_num(x: float | None) -> str:
    """Short human number: 0.25, 17, 1.2e+03."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000 or a < 0.01:
        return f"{x:.2g}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.2f}".rstrip("0").rstrip(".")


def verdict_summary(v: Verdict, short_gpu: str | None = None) -> str:
    """``bandwidth-bound · AI 0.25 < 17 (H100)``-style summary of one verdict."""
    gpu = short_gpu or v.gpu
    if v.bound == "unknown":
        return f"bound unknown ({gpu})"
    label = f"{v.bound}-bound"
    if v.deciding is None:
        return f"{label} ({gpu})"
    ai, ridge = v.ai.get(v.deciding), v.ridge.get(v.deciding)
    op = ">=" if v.bound == "compute" else "<"
    prec = "int" if v.deciding == "int" else v.deciding
    return f"{label} · {prec} AI {fmt_num(ai)} {op} {fmt_num(ridge)} ({gpu})"


def text_lines(reports: Iterable[FileReport], base: str | None = None) -> list[str]:
    out: list[str] = []
    for fr in reports:
        path = _display_path(fr.path, base)
        for kr in fr.kernels:
            k = kr.kernel
            head = f"{path}:{k.line}: {k.name} [{k.language}]"
            if len(kr.verdicts) == 1:
                v = kr.verdict
                out.append(f"{head} {verdict_summary(v)} [{v.source}]")
            else:
                out.append(head)
                for v in kr.verdicts:
                    out.append(f"    {verdict_summary(v)} [{v.source}]")
    return out


def verdict_json(v: Verdict) -> dict[str, Any]:
    d: dict[str, Any] = {
        "gpu": v.gpu,
        "bound": v.bound,
        "source": v.source,
        "confidence": round(v.confidence, 3),
        "deciding": v.deciding,
        "ai": {p: (None if a is None else round(a, 6)) for p, a in v.ai.items()},
        "ridge": {p: round(r, 6) for p, r in v.ridge.items()},
        "explanation": v.explanation,
        "terms": list(v.terms),
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
    return [kernel_json(kr, _display_path(fr.path, base)) for fr in reports for kr in fr.kernels]


def to_sarif(reports: Iterable[FileReport], base: str | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one ``note`` result per kernel and GPU."""
    rules = [
        {
            "id": f"roofline/{rid}",
            "name": rid.replace("-", " ").title().replace(" ", ""),
            "shortDescription": {"text": rid.replace("-", " ")},
            "fullDescription": {"text": text},
            "helpUri": README_URL,
            "defaultConfiguration": {"level": "note"},
        }
        for rid, text in _RULES.items()
    ]
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for fr in reports:
        uri = _display_path(fr.path, base).replace(os.sep, "/")
        for kr in fr.kernels:
            k = kr.kernel
            for v in kr.verdicts:
                rid = f"roofline/{v.bound}-bound"
                results.append(
                    {
                        "ruleId": rid,
                        "ruleIndex": rule_index[rid],
                        "level": "note",
                        "message": {"text": f"{k.name}: {verdict_summary(v)}. {v.explanation}"},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                                    "region": {"startLine": k.line, "endLine": k.end_line},
                                }
                            }
                        ],
                        "partialFingerprints": {"kernel/v1": f"{uri}:{k.name}:{v.gpu}"},
                        "properties": {
                            "gpu": v.gpu,
                            "source": v.source,
                            "confidence": round(v.confidence, 3),
                            "language": k.language,
                        },
                    }
                )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "roofline-lsp",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": README_URL.split("#")[0],
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _root_uri(base)}},
                "results": results,
            }
        ],
    }


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def _display_path(path: str, base: str | None) -> str:
    if base:
        try:
            rel = os.path.relpath(path, base)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path


def _root_uri(base: str | None) -> str:
    root = os.path.abspath(base or os.getcwd())
    return "file://" + root.replace(os.sep, "/").rstrip("/") + "/"
