"""`check --format sarif` output: a SARIF 2.1.0 log (GitHub code scanning)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from roofline_lsp import __version__
from roofline_lsp.model.report import FileReport
from roofline_lsp.present.explanations import explanation
from roofline_lsp.present.text_output import display_path, verdict_summary

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
README_URL = "https://github.com/roofline-lsp/roofline-lsp#verdicts"
_VERDICT_RULES = {
    "compute-bound": "The kernel's arithmetic intensity reaches the GPU's ridge point: its "
    "speed is limited by arithmetic throughput.",
    "bandwidth-bound": "The kernel's arithmetic intensity is below the GPU's ridge point: its "
    "speed is limited by DRAM bandwidth.",
    "unknown-bound": "The kernel could not be classified.",
}


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
        for rid, text in _VERDICT_RULES.items()
    ]
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for fr in reports:
        uri = display_path(fr.path, base).replace(os.sep, "/")
        for kr in fr.kernels:
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


def _root_uri(base: str | None) -> str:
    root = os.path.abspath(base or os.getcwd())
    return "file://" + root.replace(os.sep, "/").rstrip("/") + "/"
