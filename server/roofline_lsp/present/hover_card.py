"""The hover card that fits an editor's float: a one-line verdict first, then at most
:data:`MAX_LINES` lines of at most :data:`MAX_COLUMNS` columns, in Markdown or in plain text
(no Markdown syntax: aligned columns instead of tables), as the client asks. The whole text
of a kernel (every term, every piece of advice) is the *explain* command's
(``present.markdown.explain_markdown``). Inside a kernel body the hover is one line about
that source line (:func:`line_text`).

Pure: takes kernel reports, advice and line shares, returns strings. No LSP imports.
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.estimate.line_shares import LineShare
from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.model.report import KernelReport
from roofline_lsp.model.verdict import Verdict, precisions_of
from roofline_lsp.present.explanations import card_assumptions
from roofline_lsp.present.markdown import (
    PRECISION_LABELS,
    card_terms,
    counts_line,
    intensity_text,
    other_gpus_text,
)

MAX_LINES = 12
MAX_COLUMNS = 100
KINDS = {"cuda": "CUDA kernel", "hip": "HIP kernel", "omp": "OpenMP offload region"}
SOURCES = {"static": "static", "llm": "LLM", "profile": "measured profile"}


def verdict_line(kr: KernelReport, plain: bool = True) -> list[str]:
    """``saxpy: bandwidth-bound on H100 · every AI below its ridge: fp32 0.17 < 20 (static,
    94%)`` (in Markdown the name as code, the bound and the GPU in bold; the intensity shown
    is :func:`present.markdown.intensity_text`'s); on two lines when one would be wider than
    :data:`MAX_COLUMNS` (a long kernel name), the bound always first."""
    v = kr.verdict
    b = (lambda t: t) if plain else (lambda t: f"**{t}**")
    name = kr.kernel.name
    if len(name) > MAX_COLUMNS // 2:
        name = name[: MAX_COLUMNS // 2 - 1] + "…"
    name = name if plain else f"`{name}`"
    head = "bound unknown" if v.bound == "unknown" else f"{v.bound}-bound"
    first = f"{name}: {b(head)} on {b(v.gpu)}"
    why = intensity_text(v)
    detail = f"{why} " if why else ""
    src = SOURCES.get(v.source, v.source)
    if v.source == "llm" and v.extra.get("model"):
        src += f" ({v.extra['model']})"
    detail += f"({src}, {round(v.confidence * 100)}%)"
    joined = f"{first} · {detail}" if why else f"{first} {detail}"
    return [joined] if len(joined) <= MAX_COLUMNS else [first, detail]


def _ai_rows(v: Verdict) -> list[tuple[str, str, str, str]]:
    rows = []
    for p in precisions_of(v):
        ai, ridge = v.ai.get(p), v.ridge.get(p)
        if not ai and p != v.deciding:
            continue  # no such work: a row would only take room
        mark = ""
        if p == v.deciding and v.bound == "compute":
            mark = "decides"
        elif ai is not None and ridge and ai >= ridge:
            mark = "above ridge"
        rows.append((PRECISION_LABELS[p], fmt_num(ai), fmt_num(ridge), mark))
    return rows


def _clip(line: str, width: int = MAX_COLUMNS) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _markdown_lines(lines: list[str]) -> list[str]:
    """Each prose line that another prose line follows ends in a hard break (two spaces):
    Markdown would join them into one paragraph. Clipped so that the break still fits."""
    out = [x if x.startswith("|") else _clip(x, MAX_COLUMNS - 2) for x in lines]
    prose = [bool(x) and not x.startswith("|") for x in out]
    return [
        x + "  " if prose[i] and i + 1 < len(out) and prose[i + 1] else x for i, x in enumerate(out)
    ]


def kernel_card(
    kr: KernelReport, advice: Sequence[Advice] = (), *, plain: bool = False, launch: bool = False
) -> str:
    """The hover card of one kernel (``launch``: shown on a launch site of it)."""
    v = kr.verdict
    k = kr.kernel
    kind = KINDS.get(k.language, "OpenACC compute region")
    first = verdict_line(kr, plain)
    rows = _ai_rows(v)
    if plain:
        lines = list(first)
        if rows:
            table = [("precision", "AI (ops/byte)", "ridge", ""), *rows]
            w = [max(len(r[i]) for r in table) for i in range(3)]
            lines += [
                f"  {r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:>{w[2]}}  {r[3]}".rstrip() for r in table
            ]
    else:
        lines = list(first)
        if rows:
            lines += [
                "",
                "| precision | AI (ops/byte) | ridge | |",
                "|---|---:|---:|---|",
                *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
                "",
            ]
    where = f"{kind}, line {k.line}" if launch else kind
    counts = counts_line(v, detail=False)
    lines.append(f"{where}. {counts}" if counts else f"{where}.")
    extra: list[str] = []
    others = other_gpus_text(kr)
    if others:
        extra.append("Differs: " + "; ".join(others))
    if v.source != "static" and v.rationale.strip():
        # an LLM's or a profile's reasons: its first sentence (the rest: explain)
        sentence = " ".join(v.rationale.split()).split(". ")[0]
        extra.append("Why: " + (sentence if sentence.endswith(".") else sentence + "."))
    for a in card_assumptions(v):
        extra.append("Assumed: " + (a.replace("`", "") if plain else a))
    terms = card_terms(v)
    if terms:
        extra.append(f"Mostly: {terms[0]}")
    mine = [a for a in advice if a.kernel == k.name]
    tail = "Full text: the explain lens (roofline.explainKernel)"  # lsp.commands.CMD_EXPLAIN
    if mine:
        tail = f"{len(mine)} suggestion(s) in the diagnostics. " + tail
    room = MAX_LINES - len(lines) - 1
    lines += extra[: max(room, 0)]
    lines.append(tail)
    lines = lines[:MAX_LINES]
    lines = [_clip(x) for x in lines] if plain else _markdown_lines(lines)
    return "\n".join(lines).rstrip() + "\n"


def line_text(share: LineShare) -> str:
    """``line 42: 61% of DRAM bytes, 0% of FLOPs, 12% of integer ops`` (the largest first)."""

    def pct(x: float) -> str:
        if 0 < x < 0.005:
            return "<1%"
        return f"{round(x * 100)}%"

    parts = sorted(
        [
            (share.dram_bytes, "DRAM bytes"),
            (share.flops, "FLOPs"),
            (share.int_ops, "integer ops"),
        ],
        key=lambda p: -p[0],
    )
    return f"line {share.line}: " + ", ".join(f"{pct(x)} of {what}" for x, what in parts)
