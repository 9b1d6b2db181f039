"""Per source line of a kernel, its share of the kernel's FLOPs, integer ops and DRAM bytes.

What the hover says inside a kernel body ("line 42: 61% of DRAM bytes, 0% of FLOPs"). The
estimator already books each statement's operations under its line (``ThreadCounts.lines``)
and each memory access with its line; the memory model gives each buffer's DRAM bytes. Here a
buffer's DRAM bytes are shared among the lines that access it, in proportion to the bytes
each line references (loads share the bytes loaded, stores and atomics the bytes stored).

This is an explanation of the verdict, not part of it: it re-runs the estimator on one kernel
with the analysis' inputs (source counts, not a compile's) when asked, and never changes a
verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.roofline import Inputs, analyze
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection, Kernel
from roofline_lsp.syntax.sources import SourceReader


@dataclass(frozen=True)
class LineShare:
    """One line's part of its kernel's work, each a fraction of the kernel's total (0..1)."""

    line: int  # 1-based
    flops: float
    int_ops: float
    dram_bytes: float

    @property
    def empty(self) -> bool:
        return self.flops == 0 and self.int_ops == 0 and self.dram_bytes == 0


def shares_of(est: KernelEstimate) -> dict[int, LineShare]:
    """Each line's share of the FLOPs, integer ops and DRAM bytes of ``est``."""
    counts = est.counts
    flops_total = sum(r[0] + r[1] + r[2] for r in counts.lines.values())
    int_total = sum(r[3] for r in counts.lines.values())
    flops = {ln: r[0] + r[1] + r[2] for ln, r in counts.lines.items()}
    ints = {ln: r[3] for ln, r in counts.lines.items()}
    dram: dict[int, float] = {}
    for b in est.memory.buffers:
        mine = [a for a in counts.accesses if a.buffer.split(".", 1)[0] == b.buffer]
        for kinds, moved in ((("load",), b.loaded), (("store", "atomic"), b.stored)):
            if moved <= 0:
                continue
            refs = [a for a in mine if a.kind in kinds] or mine
            total = sum(a.weight * a.elem for a in refs)
            for a in refs:
                part = moved * (a.weight * a.elem / total if total > 0 else 1 / len(refs))
                dram[a.line] = dram.get(a.line, 0.0) + part
    dram_total = sum(dram.values())

    def frac(x: float, total: float) -> float:
        return x / total if total > 0 else 0.0

    lines = set(flops) | set(ints) | set(dram)
    return {
        ln: LineShare(
            ln,
            frac(flops.get(ln, 0.0), flops_total),
            frac(ints.get(ln, 0.0), int_total),
            frac(dram.get(ln, 0.0), dram_total),
        )
        for ln in sorted(lines)
    }


def kernel_line_shares(
    kernel: Kernel,
    detection: Detection,
    gpu: GpuProfile,
    config: Config,
    read: SourceReader | None = None,
) -> dict[int, LineShare]:
    """The per-line shares of one kernel on ``gpu`` (empty when it cannot be estimated)."""
    inputs = Inputs(args=config.args) if config.args else None
    try:
        est = analyze(kernel, detection, gpu, inputs, config, read=read)
    except (RecursionError, ValueError, ZeroDivisionError, OverflowError):
        return {}
    return shares_of(est)
