"""Hover card, inlay/lens labels, explanation and file report built from given verdicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.model.report import KernelReport
from roofline_lsp.model.terms import NoteTerm
from roofline_lsp.model.verdict import Counts, Verdict
from roofline_lsp.present.markdown import (
    explain_markdown,
    file_report_markdown,
    hover_markdown,
    inlay_label,
    lens_title,
    other_gpus_text,
)

SRC = (Path(__file__).parent / "fixtures" / "lsp" / "fp64_flip.cu").read_bytes()
REG = load_registry()
R64 = fmt_num(REG.get("h100").ridge("fp64"))  # the H100 fp64 ridge as displayed


def verdict(gpu: str, bound: str, ai64: float, source: str = "static") -> Verdict:
    g = REG.get(gpu)
    return Verdict(
        kernel="horner64",
        gpu=g.name,
        bound=bound,  # type: ignore[arg-type]
        source=source,  # type: ignore[arg-type]
        confidence=0.7,
        ai={"fp64": ai64, "fp32": None, "fp16": None, "int": 0.5},
        ridge=g.ridges(),
        deciding="fp64",
        rationale="48 fp64 FLOPs per 16 DRAM bytes.",
        terms=(NoteTerm("loop over k: 24 trips"), NoteTerm("x[i] load: 8 B")),
        counts=Counts(
            flops={"fp64": 48.0}, int_ops=8.0, bytes_loaded=8.0, bytes_stored=8.0, threads=1e6
        ),
        extra={"model": "m1"} if source == "llm" else {},
    )


def kernel_report(*verdicts: Verdict) -> KernelReport:
    kr = analyze_file(SRC, "fp64_flip.cu", (REG.get("h100"),)).kernels[0]
    return dataclasses.replace(kr, verdicts=verdicts)


def test_inlay_and_lens_labels() -> None:
    v = verdict("h100", "bandwidth", 3.0)
    # the float intensity even though the integer one (0.5) is not the closest to its ridge;
    # within VS Code's default 43 characters (the GPU is in the lens and the status bar)
    assert inlay_label(v) == f"bandwidth-bound · fp64 AI 3 < {R64}"
    assert len(inlay_label(v)) <= 43
    assert inlay_label(dataclasses.replace(v, bound="unknown")) == "bound unknown"
    assert lens_title(kernel_report(v)) == (
        "roofline: bandwidth-bound on H100-SXM5-80GB (static) · select GPU"
    )


def test_a_compute_bound_verdict_names_what_decides() -> None:
    card = hover_markdown(kernel_report(verdict("rtx-3080", "compute", 3.0)))
    assert "Why: fp64 AI 3 >= ridge 0.52" in card and "| fp64 | 3 | 0.52 | **decides** |" in card


def test_hover_card_has_verdict_ridges_counts_source_and_other_gpus() -> None:
    kr = kernel_report(
        verdict("h100", "bandwidth", 3.0),
        verdict("rtx-3080", "compute", 3.0),
        verdict("a100", "bandwidth", 3.0),
    )
    card = hover_markdown(kr)
    head = "**`horner64`** (CUDA kernel): **bandwidth-bound** on **H100-SXM5-80GB**"
    assert card.startswith(head)
    assert "static estimate" in card and "confidence 70%" in card
    # bandwidth-bound: every intensity below its ridge, none "decides"
    assert (
        f"Why: every AI below its ridge: fp64 3 < {R64} (arithmetic intensity, ops/byte)." in card
    )
    assert f"| fp64 | 3 | {R64} |  |" in card and "decides" not in card
    assert "Per thread: 48 fp64 FLOPs, 8 integer ops, 16 DRAM bytes (8 loaded, 8 stored)" in card
    # each term once, under one heading; no summary line repeating them
    assert card.count("loop over k: 24 trips") == 1 and "- loop over k: 24 trips" in card
    assert "Dominant terms" not in card
    # only the GPU whose verdict differs is listed
    assert other_gpus_text(kr) == ["compute-bound on RTX-3080: fp64 AI 3 >= ridge 0.52"]
    assert "A100" not in card


def test_a_tensor_core_verdict_shows_its_tensor_row_and_flops() -> None:
    # a WMMA kernel's tensor-core intensity decides: its own row in the table, at its ridge,
    # and its FLOPs among the counts
    v = verdict("rtx-3080", "compute", 0.0)
    assert v.counts is not None
    v = dataclasses.replace(
        v,
        ai={**v.ai, "fp64": 0.0, "tensor": 200.0},
        ridge={**v.ridge, "tensor": 66.0},
        deciding="tensor",
        counts=dataclasses.replace(v.counts, flops={"fp64": 0.0, "tensor": 256.0}),
    )
    card = hover_markdown(kernel_report(v))
    assert "| tensor core | 200 | 66 | **decides** |" in card
    assert "Per thread: 256 tensor-core FLOPs, 8 integer ops" in card


def test_a_bandwidth_bound_tensor_core_kernel_is_shown_by_its_tensor_intensity() -> None:
    # below every ridge: the FLOP/byte shown is the one closest to its ridge, the tensor
    # cores' (60 / 66) rather than the few fp32 FLOPs' (0.01 / 33)
    v = verdict("rtx-3080", "bandwidth", 0.0)
    v = dataclasses.replace(
        v,
        ai={"fp64": 0.0, "fp32": 0.01, "fp16": 0.0, "int": 0.5, "tensor": 60.0},
        ridge={**v.ridge, "tensor": 66.0},
        deciding="tensor",
    )
    assert inlay_label(v) == "bandwidth-bound · tensor AI 60 < 66"


def test_the_display_s_bytes_are_named_among_the_dram_bytes() -> None:
    # 8 loaded + 8 stored + 1 read by the display per thread: 17 DRAM bytes, as ncu counts
    v = verdict("rtx-3080", "compute", 3.0)
    assert v.counts is not None
    v = dataclasses.replace(v, counts=dataclasses.replace(v.counts, display_bytes=1.0))
    card = hover_markdown(kernel_report(v))
    assert "17 DRAM bytes (8 loaded, 8 stored, 1 read by the display)" in card


def test_llm_source_and_explanation() -> None:
    kr = kernel_report(verdict("h100", "compute", 12.0, source="llm"))
    card = hover_markdown(kr)
    assert "Verdict from the LLM (m1)" in card and "**compute-bound**" in card
    adv = Advice("RL002", "horner64", 0, 1, "use float")
    text = explain_markdown(kr, [adv], "note")
    assert "- RL002 fp64-arithmetic: use float" in text and text.rstrip().endswith("note")
    assert "No specific change" in explain_markdown(kr, [])


def test_file_report_table() -> None:
    kr = kernel_report(verdict("h100", "bandwidth", 3.0), verdict("rtx-3080", "compute", 3.0))
    rep = analyze_file(SRC, "fp64_flip.cu", (REG.get("h100"),))
    rep = dataclasses.replace(rep, kernels=(kr,))
    md = file_report_markdown(rep, [Advice("RL002", "horner64", 0, 1, "use float")], "f.cu")
    assert md.startswith("# Roofline report: f.cu\n")
    assert "| kernel | line | H100-SXM5-80GB | RTX-3080 |" in md
    assert f"| `horner64` | 6 | bandwidth-bound · fp64 AI 3 < {R64} | compute-bound" in md
    assert "## `horner64` (line 6)" in md and "RL002 fp64-arithmetic: use float" in md
    empty = dataclasses.replace(rep, kernels=())
    assert "No GPU kernel" in file_report_markdown(empty, [], "e.cu")
