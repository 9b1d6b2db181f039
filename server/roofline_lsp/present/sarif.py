"""`check --format sarif` output: a SARIF 2.1.0 log (GitHub code scanning)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from roofline_lsp import __version__
from roofline_lsp.advice.advise import file_advice, kernel_advice
from roofline_lsp.advice.catalogue import RULES, Advice
from roofline_lsp.model.gpus import GpuRegistry
from roofline_lsp.model.report import FileReport
from roofline_lsp.present.explanations import explanation
from roofline_lsp.present.text_output import display_path, position, verdict_summary

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
README_URL = "https://github.com/roofline-lsp/roofline-lsp#verdicts"
_VERDICT_RULES = {
    "compute-bound": "The kernel's arithmetic intensity reaches the GPU's ridge point: its "
    "speed is limited by arithmetic throughput.",
    "bandwidth-bound": "The kernel's arithmetic intensity is below the GPU's ridge point: its "
    "speed is limited by DRAM bandwidth.",
    "unknown-bound": "The kernel could not be classified.",
}


def to_sarif(
    reports: Iterable[FileReport], base: str | None = None, registry: GpuRegistry | None = None
) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one ``note`` result per kernel and GPU, and one result per
    diagnostic (``ruleId`` the rule's code, whose ``helpUri`` is its README section);
    ``registry``: the GPU profiles of the run (see ``advise.file_advice``)."""
    rules: list[dict[str, Any]] = [
        {
            "id": f"roofline/{rid}",
            "name": rid.replace("-", " ").title().replace(" ", ""),
            "shortDescription": {"text": rid.replace("-", " ")},
            "fullDescription": {"text": text},
            "helpUri": README_URL,
            "defaultConfiguration": {"level": "note"},
        }
        for rid, text in _VERDICT_RULES.items()
    ]
    rules += [
        {
            "id": r.code,
            "name": r.slug.replace("-", " ").title().replace(" ", ""),
            "shortDescription": {"text": r.title},
            "helpUri": r.href,
            "defaultConfiguration": {"level": "note"},
            "properties": {"tags": ["performance"]},
        }
        for r in RULES.values()
    ]
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for fr in reports:
        uri = display_path(fr.path, base).replace(os.sep, "/")
        grouped = kernel_advice(fr, file_advice(fr, registry))
        for kr, advice in zip(fr.kernels, grouped, strict=True):
            k = kr.kernel
            for v in kr.verdicts:
                rid = f"roofline/{v.bound}-bound"
                results.append(
                    {
                        "ruleId": rid,
                        "ruleIndex": rule_index[rid],
                        "level": "note",
                        "message": {"text": f"{k.name}: {verdict_summary(v)}. {explanation(v)}"},
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
            results.extend(
                _advice_result(a, uri, fr.detection.source, rule_index[a.code]) for a in advice
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


def _advice_result(a: Advice, uri: str, source: bytes, index: int) -> dict[str, Any]:
    """One diagnostic as a SARIF result (columns in bytes, 1-based)."""
    line, col = position(source, a.start)
    end_line, end_col = position(source, a.end)
    result: dict[str, Any] = {
        "ruleId": a.code,
        "ruleIndex": index,
        "level": "note",
        "message": {"text": f"{a.kernel}: {a.message}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    "region": {
                        "startLine": line,
                        "startColumn": col,
                        "endLine": end_line,
                        "endColumn": max(end_col, col + 1) if end_line == line else end_col,
                    },
                }
            }
        ],
        "partialFingerprints": {"advice/v1": f"{uri}:{a.kernel}:{a.code}:{a.text}"},
        "properties": {"severity": a.severity},
    }
    if a.gain is not None:
        result["properties"]["estimatedSpeedup"] = a.gain.speedup
        result["properties"]["estimatedFewerBytes"] = a.gain.fewer_bytes
        result["properties"]["estimateBasis"] = a.gain.basis
    if a.fix is not None:
        replacements = []
        for e in a.fix.edits:
            sl, sc = position(source, e.start)
            el, ec = position(source, e.end)
            region = {"startLine": sl, "startColumn": sc, "endLine": el, "endColumn": ec}
            replacements.append({"deletedRegion": region, "insertedContent": {"text": e.new_text}})
        result["fixes"] = [
            {
                "description": {"text": a.fix.title},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                        "replacements": replacements,
                    }
                ],
            }
        ]
    return result


def _root_uri(base: str | None) -> str:
    root = os.path.abspath(base or os.getcwd())
    return "file://" + root.replace(os.sep, "/").rstrip("/") + "/"
