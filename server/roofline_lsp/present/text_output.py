"""`check` text output: one line per kernel (or one per GPU under it), and the one-line summary
of a verdict that the hover card, inlay hints and reports share."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from roofline_lsp.advice.advise import file_advice, kernel_advice
from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.model.gpus import GpuRegistry
from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.model.report import FileReport
from roofline_lsp.model.verdict import Verdict
from roofline_lsp.present.explanations import shown_precision


def verdict_summary(v: Verdict, short_gpu: str | None = None) -> str:
    """``bandwidth-bound · AI 0.25 < 17 (H100)``-style summary of one verdict."""
    gpu = short_gpu or v.gpu
    if v.bound == "unknown":
        return f"bound unknown ({gpu})"
    label = f"{v.bound}-bound"
    if v.deciding is None:
        return f"{label} ({gpu})"
    # the intensity the hover shows: a float kernel's FLOP/byte when every intensity is
    # below its ridge, the deciding one (possibly integer) for a compute-bound verdict
    prec = shown_precision(v) or v.deciding
    ai, ridge = v.ai.get(prec), v.ridge.get(prec)
    op = ">=" if v.bound == "compute" else "<"
    return f"{label} · {prec} AI {fmt_num(ai)} {op} {fmt_num(ridge)} ({gpu})"


def source_label(v: Verdict) -> str:
    """``static``, ``static, PTX counts``, ``measured``, ``llm``: where a verdict comes from."""
    if v.source == "static" and v.counts is not None and v.counts.counts_from == "ptx":
        return "static, PTX counts"
    return v.source


def position(source: bytes, byte: int) -> tuple[int, int]:
    """1-based line and column (in bytes) of ``byte`` in ``source``."""
    line_start = source.rfind(b"\n", 0, byte) + 1
    return source.count(b"\n", 0, byte) + 1, byte - line_start + 1


def diagnostic_line(path: str, source: bytes, a: Advice) -> str:
    """``file:line:col: note: [RL008] message (est. ...)``: what compilers print, so
    editors' quickfix lists and CI logs read it."""
    line, col = position(source, a.start)
    return f"{path}:{line}:{col}: note: [{a.code}] {a.message}"


def text_lines(
    reports: Iterable[FileReport], base: str | None = None, registry: GpuRegistry | None = None
) -> list[str]:
    """Each kernel's verdict line(s), then its advice (most valuable first) as compiler-style
    notes; ``registry``: the GPU profiles of the run (see ``advise.file_advice``)."""
    out: list[str] = []
    for fr in reports:
        path = display_path(fr.path, base)
        grouped = kernel_advice(fr, file_advice(fr, registry))
        for kr, advice in zip(fr.kernels, grouped, strict=True):
            k = kr.kernel
            head = f"{path}:{k.line}: {k.name} [{k.language}]"
            if len(kr.verdicts) == 1:
                v = kr.verdict
                out.append(f"{head} {verdict_summary(v)} [{source_label(v)}]")
            else:
                out.append(head)
                for v in kr.verdicts:
                    out.append(f"    {verdict_summary(v)} [{source_label(v)}]")
            out.extend(diagnostic_line(path, fr.detection.source, a) for a in advice)
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


def with_explanations(lines: Sequence[str], kernels_json: Sequence[str]) -> list[str]:
    """One file's text ``lines`` with, after each kernel's lines, the full explanation of
    each of its verdicts (from the kernel's JSON object, as ``check`` keeps it)."""
    objs = [json.loads(s) for s in kernels_json]
    heads = [f"{o['file']}:{o['line']}: {o['kernel']} [" for o in objs]
    out: list[str] = []
    current = -1

    def explain(i: int) -> None:
        if 0 <= i < len(objs):
            for v in objs[i]["verdicts"]:
                out.append(f"    {v['gpu']}: {v['explanation']}")

    for line in lines:
        nxt = current + 1
        if nxt < len(heads) and line.startswith(heads[nxt]):
            explain(current)
            current = nxt
        out.append(line)
    explain(current)
    return out
