"""Advice as LSP diagnostics (published by the server after each analysis)."""

from __future__ import annotations

from lsprotocol import types as lsp

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.engine.workspace import DocumentAnalysis
from roofline_lsp.lsp.ranges import lsp_range
from roofline_lsp.syntax.positions import Encoding

SEVERITY = {"information": lsp.DiagnosticSeverity.Information, "hint": lsp.DiagnosticSeverity.Hint}


def diagnostic(a: DocumentAnalysis, adv: Advice, enc: Encoding) -> lsp.Diagnostic:
    """The diagnostic of one piece of advice of the analysis ``a``."""
    rule = adv.rule
    data: dict[str, object] = {"rule": rule.slug, "kernel": adv.kernel, "fix": adv.fix is not None}
    if adv.gain is not None:  # what the fix is worth on the target GPU (also in the message)
        g = adv.gain
        data["estimate"] = {"speedup": g.speedup, "fewerBytes": g.fewer_bytes, "basis": g.basis}
    return lsp.Diagnostic(
        range=lsp_range(a.lines, adv.start, adv.end, enc),
        message=adv.message,
        severity=SEVERITY[adv.severity],
        code=rule.code,
        code_description=lsp.CodeDescription(href=rule.href),
        source="roofline",
        data=data,
    )
