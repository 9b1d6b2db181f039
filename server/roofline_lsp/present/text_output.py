"""`check` text output: one line per kernel (or one per GPU under it), and the one-line summary
of a verdict that the hover card, inlay hints and reports share."""

from __future__ import annotations

import os
from collections.abc import Iterable

from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.model.report import FileReport
from roofline_lsp.model.verdict import Verdict


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
        path = display_path(fr.path, base)
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


def display_path(path: str, base: str | None) -> str:
    if base:
        try:
            rel = os.path.relpath(path, base)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path
