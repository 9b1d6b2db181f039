"""present/hover_card.py: the short card (Markdown or plain text) and the one-line hover."""

from __future__ import annotations

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.line_shares import LineShare
from roofline_lsp.estimate.roofline import estimate
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.report import KernelReport
from roofline_lsp.present.hover_card import MAX_COLUMNS, MAX_LINES, kernel_card, line_text

# fp64 work whose verdict differs between GPUs: a card with every part filled in
SOURCE = b"""\
__global__ void horner_with_a_rather_long_kernel_name_to_fill_the_first_line(
    int n, const double *x, double *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double r = 0.0;
    for (int k = 0; k < 2; k++)
        r = r * x[i] + 1.0 / (k + 1);
    y[i] = r;
}
"""


def _report() -> KernelReport:
    det = detect(SOURCE, "horner.cu")
    reg = load_registry()
    k = det.kernels[0]
    verdicts = tuple(
        estimate(k, det, reg.get(g)) for g in ("h100", "rtx-3080", "rtx-4090", "mi300x")
    )
    return KernelReport(k, verdicts)


def test_card_fits_leads_with_the_verdict_and_says_where_the_rest_is() -> None:
    kr = _report()
    for plain in (False, True):
        card = kernel_card(kr, plain=plain)
        lines = card.rstrip("\n").split("\n")
        assert len(lines) <= MAX_LINES and max(map(len, lines)) <= MAX_COLUMNS, card
        assert kr.verdict.bound in lines[0] and kr.verdict.gpu in lines[0]
        assert "Differs:" in card  # the GPUs where the verdict is not the target's
        assert lines[-1].startswith("Full text:") and "roofline.explainKernel" in lines[-1]
        if plain:
            assert not any(m in card for m in ("**", "`", "|")), card
        else:
            assert lines[0].startswith("`horner_with") and "**" in lines[0]


def test_markdown_card_breaks_its_prose_lines_where_the_text_does() -> None:
    # Markdown joins consecutive lines into one paragraph: each prose line before another
    # ends in a hard break (two spaces), still within the width
    lines = kernel_card(_report()).rstrip("\n").split("\n")
    prose = [i for i, x in enumerate(lines) if x and not x.startswith("|")]
    for i in prose:
        followed = i + 1 < len(lines) and i + 1 in prose
        assert lines[i].endswith("  ") == followed, lines
        assert len(lines[i]) <= MAX_COLUMNS, lines[i]


def test_launch_card_names_the_definition_line() -> None:
    kr = _report()
    assert f"line {kr.kernel.line}" in kernel_card(kr, plain=True, launch=True)


def test_line_text_orders_the_shares_and_marks_small_ones() -> None:
    text = line_text(LineShare(42, flops=0.0, int_ops=0.004, dram_bytes=0.61))
    assert text == "line 42: 61% of DRAM bytes, <1% of integer ops, 0% of FLOPs"


def test_card_names_what_was_assumed_and_the_hint_that_settles_it() -> None:
    # launched over N threads, N given nowhere: the default launch (256 x 4096 threads) is
    # assumed, and a hint on N settles it
    src = SOURCE + b"int main() { double *x, *y; NAME<<<N / 256, 256>>>(N, x, y); }\n"
    src = src.replace(b"NAME", SOURCE.split(b"(")[0].split()[-1])
    det = detect(src, "horner.cu")
    k = det.kernels[0]
    kr = KernelReport(k, (estimate(k, det, load_registry().get("h100")),))
    hint = "// roofline: N=..."
    md = kernel_card(kr, plain=False)
    assert f"Assumed: launch size unknown: assumed 1.05 M threads; add `{hint}`" in md, md
    plain = kernel_card(kr, plain=True)
    assert f"; add {hint}" in plain and "`" not in plain, plain
    # with the hint, nothing is assumed
    det = detect(b"// roofline: N=1<<20\n" + src, "horner.cu")
    k = det.kernels[0]
    kr = KernelReport(k, (estimate(k, det, load_registry().get("h100")),))
    assert "Assumed:" not in kernel_card(kr, plain=True)
