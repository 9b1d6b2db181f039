"""What a static verdict rests on, as terms (per-thread work, the heaviest loops, the working
set against L2; ``model.terms``), and its confidence."""

from __future__ import annotations

import math
from dataclasses import replace

from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.thread_counts import Loop, ThreadCounts
from roofline_lsp.model.terms import LoopTerm, MemoryTerm, Term, WorkTerm


def verdict_terms(a: KernelEstimate) -> tuple[Term, ...]:
    """The work per thread (or iteration), the two heaviest sequential loops, the memory."""
    c = a.counts
    out: list[Term] = [
        WorkTerm(
            "iteration" if c.per == "iteration" else "thread",
            tuple((p, v) for p, v in c.flops.items() if v >= 0.5),
            c.int_ops,
        )
    ]
    loops = sorted((lp for lp in c.loops if not lp.parallel), key=lambda lp: -lp.weight * lp.trips)
    out.extend(loop_term(c, lp) for lp in loops[:2])
    m = a.memory
    out.append(MemoryTerm(m.footprint, m.resident, m.l2_bytes, m.dram_bytes, m.references))
    return tuple(out)


def loop_term(c: ThreadCounts, lp: Loop) -> LoopTerm:
    """A loop with its FLOP, integer ops and bytes referenced per iteration (summed over the
    lines of its body, divided by its iterations per thread)."""
    head = LoopTerm(lp.var, lp.line, lp.trips, lp.source)
    iters = lp.weight * lp.trips
    end = lp.end_line or lp.line
    if iters <= 0 or end <= lp.line:
        return head
    ops = [0.0, 0.0, 0.0, 0.0]
    for ln, row in c.lines.items():
        if lp.line <= ln <= end:
            for i in range(4):
                ops[i] += row[i]
    refs = sum(
        a.weight * a.elem
        for a in c.accesses
        if lp.line <= a.line <= end and a.space in ("global", "localmem")
    )
    flops = tuple(
        (name, ops[i] / iters)
        for i, name in enumerate(("fp64", "fp32", "fp16"))
        if ops[i] / iters >= 0.05
    )
    return replace(head, per_iteration=(flops, ops[3] / iters, refs / iters))


def static_confidence(
    a: KernelEstimate, ai: dict[str, float | None], ridge: dict[str, float], deciding: str | None
) -> float:
    if deciding is None:
        return 0.6
    v = ai.get(deciding) or 0.0
    r = ridge[deciding]
    dist = abs(math.log10(max(v, 1e-9) / r))
    conf = 0.5 + 0.45 * math.tanh(dist / 0.6)
    defaulted = sum(1 for lp in a.counts.loops if lp.source == "default")
    conf -= 0.05 * min(defaulted, 3)
    return round(max(0.05, min(conf, 0.95)), 3)
