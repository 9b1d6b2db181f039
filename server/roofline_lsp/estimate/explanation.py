"""What a static verdict rests on, as terms (per-thread work, the heaviest loops, the working
set against L2, what was assumed; ``model.terms``), and its confidence."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Literal

from roofline_lsp.detect.bindings import HostContext
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.thread_counts import Loop, ThreadCounts
from roofline_lsp.model.terms import (
    AssumptionTerm,
    LoopTerm,
    MemoryTerm,
    QueryTerm,
    Term,
    TypeTerm,
    WorkTerm,
)
from roofline_lsp.syntax.expr import NAME

MAX_ASSUMED_LOOPS = 3  # the defaulted loops named, the heaviest first


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
    out.append(
        MemoryTerm(
            m.footprint,
            m.resident,
            m.l2_bytes,
            m.kernel_bytes,
            m.references,
            m.local_bytes,
            m.search_bytes,
            m.code_bytes,
            m.layer_bytes,
            m.layer_share,
            m.display_bytes,
            a.time.seconds if a.time is not None else 0.0,
            a.time is not None and a.time.limit == "contention",
            m.host_buffers,
            m.host_bytes,
        )
    )
    out.extend(assumptions(a))
    out.extend(QueryTerm(q.call) for q in a.context.modelled_queries)
    out.extend(TypeTerm(name, "float") for name in a.assumed_types)
    out.extend(TypeTerm(name, t, "undeclared") for name, t in a.named_types)
    return tuple(out)


def assumptions(a: KernelEstimate) -> tuple[AssumptionTerm, ...]:
    """What the estimate assumed: the launch size when no launch gives it (CUDA; an
    offloaded loop nest's size is its parallel loops'), and the trip counts of loops whose
    bound could not be evaluated, the heaviest first (nested ones under their outer loop); and
    where the walk stopped counting a kernel too long to walk in full."""
    out: list[AssumptionTerm] = []
    if a.counts.truncated_at:
        out.append(AssumptionTerm("rest", 0.0, "too long", line=a.counts.truncated_at))
    ctx = a.context
    if a.counts.per == "thread" and (ctx.block is None or ctx.grid is None):
        if ctx.launch is None:
            out.append(AssumptionTerm("launch", a.threads, "no launch"))
        else:
            names = unresolved(f"{ctx.launch.grid}, {ctx.launch.block}", ctx)
            read = ctx.set_at_run_time(", ".join(names))
            why: Literal["unknown values", "input"] = "input" if read else "unknown values"
            out.append(AssumptionTerm("launch", a.threads, why, names, read=read))
    total = _work(a.counts, 0, 10**9)
    loops = [lp for lp in a.counts.loops if lp.source == "default"]
    shares = [
        _work(a.counts, lp.line, lp.end_line or lp.line) / total if total else 1.0 for lp in loops
    ]
    ranked = sorted(zip(loops, shares, strict=True), key=lambda x: -x[1])
    for lp, share in ranked[:MAX_ASSUMED_LOOPS]:
        # (a bound read from memory: no host value would settle it)
        read = () if lp.data_bound else ctx.set_at_run_time(", ".join(lp.unknown_names))
        trips_why: Literal["data", "unknown values", "input", "while"] = "unknown values"
        if lp.data_bound:
            trips_why = "data"
        elif read:
            trips_why = "input"
        elif lp.var is None and not lp.unknown_names:
            trips_why = "while"
        out.append(
            AssumptionTerm(
                "trips",
                lp.trips,
                trips_why,
                lp.unknown_names,
                lp.line,
                lp.var,
                round(min(share, 1.0), 3),
                read,
            )
        )
    return tuple(out)


def assumed_share(c: ThreadCounts) -> float:
    """The share of a thread's operations booked inside loops with a defaulted trip count."""
    total = _work(c, 0, 10**9)
    if total <= 0:
        return 0.0
    lines: set[int] = set()
    for lp in c.loops:
        if lp.source == "default":
            lines.update(ln for ln in c.lines if lp.line <= ln <= (lp.end_line or lp.line))
    return min(sum(sum(c.lines[ln]) for ln in lines) / total, 1.0)


def _work(c: ThreadCounts, first: int, last: int) -> float:
    return sum(sum(row) for ln, row in c.lines.items() if first <= ln <= last)


_NOT_VALUES = frozenset({"dim3", "sizeof", "int", "unsigned", "long", "size_t", "float", "double"})


# the fields after a name (``.n``, ``.dims.x``): a hint names them so (``img.n=4096``)
_FIELDS = re.compile(r"(?:\s*\.\s*[A-Za-z_]\w*)+")


# what follows the type of a cast: its closing parenthesis, then an operand
_CAST_AFTER = re.compile(r"\s*\)\s*[A-Za-z_0-9(]")


def unresolved(expr: str, ctx: HostContext, depth: int = 0) -> tuple[str, ...]:
    """The names in a launch expression the host side gives no value for, through the
    expressions of the names it knows (``grid`` -> ``(n + 255) / 256`` -> ``n``)."""
    out: list[str] = []
    for m in NAME.finditer(expr):
        nm = m.group(0)
        if nm in _NOT_VALUES or nm in out or expr[m.end() :].lstrip().startswith("("):
            continue  # a type, a function
        if _CAST_AFTER.match(expr, m.end()) and expr[: m.start()].rstrip().endswith("("):
            continue  # the type of a cast: ``(uint)ceil(n / 256.0)``
        if expr[: m.start()].rstrip().endswith((".", "->")):
            continue  # a field
        if nm[0].isdigit() or ctx.get(nm) is not None:
            continue
        fields = _FIELDS.match(expr, m.end())
        if fields is not None:
            full = nm + re.sub(r"\s+", "", fields.group(0))
            if ctx.get(full) is not None:
                continue
            if full not in ctx.texts:
                # ``img.n`` of an object the host code builds where the walk cannot see
                # (``Image img = load_image(argv[1])``): the field is what a hint gives
                if full not in out:
                    out.append(full)
                continue
            nm = full  # a field the host code sets (``grid.x``): through its expression
        t = ctx.texts.get(nm)
        deeper = unresolved(t, ctx, depth + 1) if t is not None and depth < 4 else ()
        # through the expression it was set from, to the names a hint can give; the name
        # itself when that expression has none (``n = atoi(argv[1])`` run without arguments)
        out.extend(x for x in deeper or (nm,) if x not in out)
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
    """How far the verdict stands from its ridge point, discounted by what it rests on.

    * Distance: decades between the deciding intensity and its ridge (``tanh`` scale
      ``CONFIDENCE_SCALE``). A compute verdict is measured with the DRAM bytes the reuse and L2
      model removed put back (every referenced byte from DRAM) when that is closer to the
      ridge: the model must earn the bytes it removes, and on dev the compute verdicts that
      hold only thanks to removed traffic are right 60% of the time (vs 89% for the others).
    * Defaulted trip counts: minus ``DEFAULTED_PENALTY`` times the share of the thread's
      operations booked in loops whose bound could not be evaluated.
    * An assumed launch (no launch site, or its values unknown): minus ``LAUNCH_PENALTY``
      (the working set against L2 depends on it); a kernel too long to count in full (its
      rest assumed free), the same.

    Bands (``evaluation.confidence_bands``): high >= 0.8 needs about 4.5x from the ridge with
    every trip count known."""
    if deciding is None:
        return 0.6
    v = ai.get(deciding) or 0.0
    r = ridge[deciding]
    ratio = max(v, 1e-9) / r
    dist = abs(math.log10(ratio))
    m = a.memory
    if ratio >= 1.0 and 0 < m.kernel_bytes < m.references:
        dist = max(min(dist, math.log10(ratio * m.kernel_bytes / m.references)), 0.0)
    conf = 0.5 + 0.45 * math.tanh(dist / CONFIDENCE_SCALE)
    conf -= DEFAULTED_PENALTY * assumed_share(a.counts)
    ctx = a.context
    if a.counts.per == "thread" and (ctx.block is None or ctx.grid is None):
        conf -= LAUNCH_PENALTY
    if a.counts.truncated_at:
        conf -= LAUNCH_PENALTY
    return round(max(0.05, min(conf, 0.95)), 3)


CONFIDENCE_SCALE = 0.8  # decades from the ridge
DEFAULTED_PENALTY = 0.1
LAUNCH_PENALTY = 0.1
