"""Shared helpers of the advice tests: analyse a fixture with the verdict's bound forced (so that
each rule's dependence on it is tested independently of the estimator), find and apply advice."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from roofline_lsp.advice.advise import advise
from roofline_lsp.advice.catalogue import Advice
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.model.gpus import GpuProfile, load_registry
from roofline_lsp.model.report import FileReport
from roofline_lsp.model.verdict import Counts
from roofline_lsp.syntax.parsing import parse

FIXTURES = Path(__file__).parent / "fixtures" / "lsp"
REG = load_registry()
RTX = REG.get("rtx-3080")
H100 = REG.get("h100")


def report(source: bytes, path: str, bound: str, gpu=RTX) -> FileReport:  # type: ignore[no-untyped-def]
    rep = analyze_file(source, path, (gpu,))
    kernels = tuple(
        dataclasses.replace(kr, verdicts=(dataclasses.replace(kr.verdict, bound=bound),))
        for kr in rep.kernels
    )
    return dataclasses.replace(rep, kernels=kernels)


def run(name: str, bound: str = "bandwidth", gpu=RTX) -> tuple[bytes, tuple[Advice, ...]]:  # type: ignore[no-untyped-def]
    src = (FIXTURES / name).read_bytes()
    return src, advise(report(src, str(FIXTURES / name), bound, gpu), gpu)


def where(src: bytes, advice: tuple[Advice, ...], code: str) -> list[tuple[str, str]]:
    """(kernel, text of the flagged span) of every advice with ``code``."""
    return [(a.kernel, src[a.start : a.end].decode()) for a in advice if a.code == code]


def apply(src: bytes, advice: Advice) -> bytes:
    assert advice.fix is not None
    out = src
    for e in sorted(advice.fix.edits, key=lambda e: e.start, reverse=True):
        out = out[: e.start] + e.new_text.encode() + out[e.end :]
    return out


def has_error(src: bytes) -> bool:
    return parse(src).root_node.has_error


def with_counts(rep: FileReport, counts: Counts) -> FileReport:
    """``rep`` with every kernel's target verdict carrying ``counts`` (hand-made: the gains
    a test derives by hand then do not depend on the estimator)."""
    kernels = tuple(
        dataclasses.replace(kr, verdicts=(dataclasses.replace(kr.verdict, counts=counts),))
        for kr in rep.kernels
    )
    return dataclasses.replace(rep, kernels=kernels)


# a GPU of round numbers, so that estimates can be derived by hand: 1 TFLOP/s fp32 and int,
# 0.1 TFLOP/s fp64, 100 GB/s, 1 GHz
ROUND = GpuProfile(
    name="ROUND",
    vendor="test",
    fp64_flops=1e11,
    fp32_flops=1e12,
    fp16_flops=2e12,
    int32_ops=1e12,
    dram_bandwidth=1e11,
    l2_bytes=1 << 20,
    sm_count=10,
    clock_ghz=1.0,
)
