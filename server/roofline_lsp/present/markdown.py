"""Markdown for people: the hover card of one kernel, the inlay-hint and code-lens labels, the
"explain this kernel" text and the roofline report of a whole file.

Pure: takes verdicts, kernel reports and advice, returns strings. No LSP imports.
"""

from __future__ import annotations

from collections.abc import Sequence

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.model.report import FileReport, KernelReport
from roofline_lsp.model.terms import WorkTerm
from roofline_lsp.model.verdict import Verdict, precisions_of
from roofline_lsp.present.explanations import below_everywhere, shown_precision, term_text
from roofline_lsp.present.text_output import verdict_summary

SOURCE_LABELS = {
    "static": "static estimate from the source",
    "llm": "LLM",
    "profile": "measured profile (Nsight Compute)",
}
PRECISION_LABELS = {
    "fp64": "fp64",
    "fp32": "fp32",
    "fp16": "fp16",
    "int": "int",
    "tensor": "tensor core",
}


def intensity_text(v: Verdict, ridge_word: bool = True) -> str:
    """Why the verdict is what it is, in one clause: ``fp64 AI 10.7 >= ridge 9.99``,
    ``int AI 12 >= ridge 9.99`` (integer work decides), ``every AI below its ridge: fp32
    0.17 < 20`` when bandwidth-bound with more than one kind of work; '' without an intensity."""
    p = shown_precision(v)
    if p is None:
        return ""
    ai, ridge = fmt_num(v.ai.get(p)), fmt_num(v.ridge.get(p))
    word = "ridge " if ridge_word else ""
    if v.bound == "compute":
        return f"{p} AI {ai} >= {word}{ridge}"
    if below_everywhere(v):
        return f"every AI below its ridge: {p} {ai} < {ridge}"
    return f"{p} AI {ai} < {word}{ridge}"


def inlay_label(v: Verdict) -> str:
    """``bandwidth-bound · fp32 AI 0.17 < 20``: short enough for VS Code's default inlay
    hint length (43 characters); the GPU is in the code lens and the status bar, the rest in
    the hint's tooltip."""
    if v.bound == "unknown":
        return "bound unknown"
    p = shown_precision(v)
    if p is None:
        return f"{v.bound}-bound"
    op = ">=" if v.bound == "compute" else "<"
    return f"{v.bound}-bound · {p} AI {fmt_num(v.ai.get(p))} {op} {fmt_num(v.ridge.get(p))}"


def card_terms(v: Verdict) -> tuple[str, ...]:
    """The terms a card lists: every term in words but the per-thread work, which the
    counts line already gives (new kinds of terms and notes are listed as they come)."""
    return tuple(term_text(t) for t in v.terms if not isinstance(t, WorkTerm))


def lens_title(kr: KernelReport) -> str:
    """The code lens above a kernel: its verdict on the target GPU, and where it comes from."""
    v = kr.verdict
    src = {"static": "static", "llm": "LLM", "profile": "measured"}.get(v.source, v.source)
    if v.bound == "unknown":
        return f"roofline: bound unknown on {v.gpu} · select GPU"
    return f"roofline: {v.bound}-bound on {v.gpu} ({src}) · select GPU"


def _source_text(v: Verdict) -> str:
    label = SOURCE_LABELS.get(v.source, v.source)
    if v.source == "llm":
        model = v.extra.get("model")
        if model:
            label += f" ({model})"
    return label


def _differs(target: Verdict, other: Verdict) -> bool:
    return other.bound != target.bound and other.bound != "unknown"


def other_gpus_text(kr: KernelReport) -> list[str]:
    """``compute-bound on RTX-4090: fp64 AI 2 >= ridge 1.3`` for each comparison GPU whose
    verdict differs from the target's."""
    out = []
    target = kr.verdict
    for v in kr.verdicts[1:]:
        if not _differs(target, v):
            continue
        if v.deciding is not None:
            ai, ridge = v.ai.get(v.deciding), v.ridge.get(v.deciding)
            op = ">=" if v.bound == "compute" else "<"
            out.append(
                f"{v.bound}-bound on {v.gpu}: {v.deciding} AI {fmt_num(ai)} {op} "
                f"ridge {fmt_num(ridge)}"
            )
        else:
            out.append(f"{v.bound}-bound on {v.gpu}")
    return out


def counts_line(v: Verdict, detail: bool = True) -> str | None:
    """The work per thread (or iteration) behind ``v``; ``detail``: the bytes loaded and
    stored and the threads per launch too (the compact hover card leaves them out)."""
    c = v.counts
    if c is None:
        return None
    per = "thread" if c.per == "thread" else "iteration"
    parts = [
        f"{fmt_num(c.flops[p])} {'tensor-core' if p == 'tensor' else p} FLOPs"
        for p in ("fp64", "fp32", "fp16", "tensor")
        if c.flops.get(p)
    ]
    if c.int_ops:
        parts.append(f"{fmt_num(c.int_ops)} {'integer' if detail else 'int'} ops")
    dram = f"{fmt_num(c.dram_bytes)} DRAM bytes"
    if detail:
        shown = f"{fmt_num(c.bytes_loaded)} loaded, {fmt_num(c.bytes_stored)} stored"
        if c.display_bytes:
            shown += f", {fmt_num(c.display_bytes)} read by the display"
        dram += f" ({shown})"
    text = f"Per {per}: " + ", ".join([*parts, dram])
    if detail and c.threads:
        text += f"; {fmt_num(c.threads)} {per}s per launch"
    if c.counts_from == "ptx" and c.ptx_flops_only:
        text += " (counts: PTX FLOPs, source integer ops)" if detail else " (counts: PTX FLOPs)"
    elif c.counts_from == "ptx":
        text += " (counts: PTX, from the compiler)" if detail else " (counts: PTX)"
    return text


def _ai_table(v: Verdict) -> list[str]:
    rows = ["| precision | AI (ops/byte) | ridge | |", "|---|---:|---:|---|"]
    for p in precisions_of(v):
        ai = v.ai.get(p)
        ridge = v.ridge.get(p)
        if not ai and p != v.deciding:
            continue  # no such work: a row would only take room
        mark = ""
        if p == v.deciding and v.bound == "compute":
            mark = "**decides**"
        elif ai is not None and ridge and ai >= ridge:
            mark = "above ridge"
        rows.append(f"| {PRECISION_LABELS[p]} | {fmt_num(ai)} | {fmt_num(ridge)} | {mark} |")
    return rows if len(rows) > 2 else []


def hover_markdown(kr: KernelReport, advice: Sequence[Advice] = ()) -> str:
    """The hover card of one kernel."""
    v = kr.verdict
    k = kr.kernel
    kind = {"cuda": "CUDA kernel", "hip": "HIP kernel", "omp": "OpenMP offload region"}.get(
        k.language, "OpenACC compute region"
    )
    head = "bound unknown" if v.bound == "unknown" else f"{v.bound}-bound"
    lines = [
        f"**`{k.name}`** ({kind}): **{head}** on **{v.gpu}**",
        "",
        f"Verdict from the {_source_text(v)}, confidence {round(v.confidence * 100)}%.",
        "",
    ]
    why = intensity_text(v)
    if why:
        lines += [f"Why: {why} (arithmetic intensity, ops/byte).", ""]
    table = _ai_table(v)
    if table:
        lines += [*table, ""]
    counts = counts_line(v)
    if counts:
        lines += [counts, ""]
    if v.rationale.strip():
        lines += [v.rationale.strip(), ""]  # an LLM's, a profile's or the estimator's words
    terms = card_terms(v)
    if terms:
        lines += ["What the estimate rests on:", *[f"- {t}" for t in terms], ""]
    others = other_gpus_text(kr)
    if others:
        lines += ["Differs on other GPUs:", *[f"- {t}" for t in others], ""]
    mine = [a for a in advice if a.kernel == k.name]
    if mine:
        lines += [
            f"What to change ({len(mine)}): see the `roofline` diagnostics in this kernel.",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def launch_hover_markdown(kr: KernelReport) -> str:
    """The card shown on a launch site: the launched kernel's card with where it is defined."""
    return f"Launch of `{kr.kernel.name}` (defined at line {kr.kernel.line}).\n\n" + hover_markdown(
        kr
    )


def explain_markdown(kr: KernelReport, advice: Sequence[Advice], llm_note: str = "") -> str:
    """ "Explain this kernel": the card, then each piece of advice with its line."""
    lines = [hover_markdown(kr).rstrip(), ""]
    mine = [a for a in advice if a.kernel == kr.kernel.name]
    if mine:
        lines.append("What to change:")
        for a in mine:
            lines.append(f"- {a.code} {a.rule.slug}: {a.message}")
        lines.append("")
    else:
        lines += ["No specific change found by the rules for this kernel.", ""]
    if llm_note:
        lines += [llm_note, ""]
    return "\n".join(lines).rstrip() + "\n"


def file_report_markdown(
    report: FileReport,
    advice: Sequence[Advice],
    title: str,
    line_of: dict[int, int] | None = None,
) -> str:
    """The roofline report of one file: a table of every kernel on every GPU, then details.

    ``line_of`` maps a kernel's byte offset to its current 1-based line when the document
    changed since the analysis (default: the line detection found)."""
    gpus: list[str] = []
    for kr in report.kernels:
        for v in kr.verdicts:
            if v.gpu not in gpus:
                gpus.append(v.gpu)
    lines = [f"# Roofline report: {title}", ""]
    if not report.kernels:
        lines.append("No GPU kernel or offload region found in this file.")
        return "\n".join(lines) + "\n"
    lines += [
        f"{len(report.kernels)} kernel(s); target GPU **{gpus[0]}**"
        + (f", compared with {', '.join(gpus[1:])}" if len(gpus) > 1 else "")
        + ".",
        "",
        "| kernel | line | " + " | ".join(gpus) + " |",
        "|---|---:|" + "---|" * len(gpus),
    ]
    for kr in report.kernels:
        line = (line_of or {}).get(kr.kernel.span.start_byte, kr.kernel.line)
        cells = []
        for g in gpus:
            found = [x for x in kr.verdicts if x.gpu == g]
            cells.append(verdict_summary(found[0]).rsplit(" (", 1)[0] if found else "-")
        lines.append(f"| `{kr.kernel.name}` | {line} | " + " | ".join(cells) + " |")
    lines.append("")
    for kr in report.kernels:
        line = (line_of or {}).get(kr.kernel.span.start_byte, kr.kernel.line)
        lines += [f"## `{kr.kernel.name}` (line {line})", ""]
        lines.append(hover_markdown(kr).rstrip())
        mine = [a for a in advice if a.kernel == kr.kernel.name]
        if mine:
            lines += ["", "What to change:"]
            lines += [f"- {a.code} {a.rule.slug}: {a.message}" for a in mine]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
