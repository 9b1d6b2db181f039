"""Compiler-assisted counts: a kernel's per-line PTX instruction mix (``compiler/kernel_ptx.py``)
put in place of the source-level operation counts of the counter (``counting.py``); see
``compiler/kernel_ptx.py`` for how PTX lines map onto the counter's lines."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import replace

from roofline_lsp.compiler.demangle import spells_template_args
from roofline_lsp.compiler.instruction_mix import LineMix
from roofline_lsp.compiler.kernel_ptx import UNROLL_DEFAULT, KernelPtx, Placement, line_quad
from roofline_lsp.estimate import costs
from roofline_lsp.estimate.thread_counts import STRIDED, Loop, ThreadCounts, control_passes
from roofline_lsp.model.kernel import Kernel

_NONE = (0.0, 0.0, 0.0, 0.0)


def pick_instantiation(
    counts: ThreadCounts, ptx: KernelPtx, template_args: tuple[str, ...] = ()
) -> KernelPtx:
    """Of a template kernel's instantiations, the one whose symbol names the template
    arguments meant (``template_args``: a profile's or the launch's ``float4``, ``3``, ...,
    as the Itanium mangling spells them); else the first whose dominant floating-point
    precision is the source analysis's (no FLOPs in the source: the one with the fewest
    FLOPs)."""
    cands = (ptx, *ptx.others)
    if len(cands) == 1:
        return ptx
    if template_args:
        named = [c for c in cands if spells_template_args(c.kernel, template_args)]
        if len(named) == 1:
            return named[0]
    src = (
        counts.flops.get("fp64", 0.0),
        counts.flops.get("fp32", 0.0),
        counts.flops.get("fp16", 0.0),
    )
    if max(src) <= 0:
        return min(cands, key=lambda c: sum(c.flop_mix()))
    want = max(range(3), key=lambda i: src[i])
    for c in cands:
        mix = c.flop_mix()
        if max(mix) > 0 and max(range(3), key=lambda i: mix[i]) == want:
            return c
    return ptx


def _statement_of(ln: int, ordered: list[int]) -> int | None:
    """The statement line at or above line ``ln`` (``ordered``: the counter's lines)."""
    i = bisect.bisect_right(ordered, ln)
    return ordered[i - 1] if i else None


def _weight_of(ln: int, weights: Mapping[int, float], ordered: list[int], default: float) -> float:
    w = weights.get(ln)
    if w is not None:
        return w
    best = _statement_of(ln, ordered)  # the nearest statement line above (a continued line)
    return weights[best] if best is not None else default


def _skipped(
    ln: int, dead: Mapping[int, tuple[int, int]], skipped_by: Mapping[int, frozenset[int]]
) -> bool:
    """Whether line ``ln`` is in a branch the known values decide against, and the PTX skips
    its code with a branch on that condition (not code computed on both paths)."""
    test = dead.get(ln)
    return test is not None and any(test[0] <= c <= test[1] for c in skipped_by.get(ln, ()))


_MOSTLY = 0.8  # share of a PTX loop's body lines a source loop must hold to be its origin


def _holds(lp: Loop, body: frozenset[int]) -> bool:
    """Whether source loop ``lp`` holds most of a PTX loop's body lines (``_MOSTLY``: a stale
    line number of a hoisted address computation may sit in a loop body)."""
    return sum(lp.line <= x <= lp.end_line for x in body) >= _MOSTLY * len(body)


def _ptx_loops_of(
    loops: tuple[Loop, ...], ptx: KernelPtx, runtime_line: int
) -> dict[int, frozenset[int]]:
    """For each source loop (its line), the natural loops of the PTX (ids) compiled from it:
    those whose body lines it is the innermost source loop to hold (most of them: a stale
    line number of a hoisted address computation may sit in a loop body). A work-shared
    loop's PTX loop is a thread's chunk of iterations; the OpenMP runtime's calls in it are
    booked on the region's pragma line (``runtime_line``), which no source loop holds."""
    out: dict[int, set[int]] = {}
    for i, lines in enumerate(ptx.loop_bodies):
        body = lines - {runtime_line}
        if not body:
            continue
        holding = [lp for lp in loops if _holds(lp, body)]
        if holding:
            inner = max(holding, key=lambda lp: lp.line)
            # a thread's chunk of a ``collapse``d nest: of every work-shared loop holding it
            joined = [lp for lp in holding if lp.parallel] if inner.parallel else [inner]
            for lp in joined:
                out.setdefault(lp.line, set()).add(i)
    return {ln: frozenset(ids) for ln, ids in out.items()}


def _unrolled_copies(loops: tuple[Loop, ...], ptx: KernelPtx) -> dict[int, float]:
    """How many copies of each line of a loop body the compiler unrolled fully: a loop of a
    constant count (the compiler's as well as the counter's) the counter takes as unrolled
    (``#pragma unroll``, a few trips) left with no PTX loop of its own (one it holds, with
    its header's test and increment), although the counting build keeps loops (a ``#pragma
    unroll`` still forces clang's and NVVM's unrollers): its body lines hold one copy per
    trip. The product over nested such loops; only where PTX has loops at all (else nothing
    tells a fully unrolled loop from a function compiled without its loops' structure)."""
    if not ptx.loop_bodies:
        return {}
    gone = [
        lp
        for lp in loops
        if lp.unrolled
        and lp.source == "constant"
        and lp.trips > 1
        and not any(lp.line in body and _holds(lp, body) for body in ptx.loop_bodies)
    ]
    out: dict[int, float] = {}
    for ln in ptx.lines:
        n = 1.0
        for lp in gone:
            if lp.line < ln <= lp.end_line:
                n *= lp.trips
        if n > 1:
            out[ln] = n
    return out


def _folded(
    ln: int, loops: tuple[Loop, ...], ptx: KernelPtx, compiled: Mapping[int, frozenset[int]]
) -> float:
    """The integer instructions of body line ``ln`` that the release build's complete unroll
    of a loop around it folds away where the counting build kept the loop
    (``KernelPtx.loop_folded``): for a loop of a constant count the counter takes as
    unrolled, its control (the induction variables' arithmetic); for one a ``#pragma
    unroll`` forces, its address arithmetic too (``[base + imm]`` in each copy). Folding the
    address arithmetic of the loops unrolled for their small count alone as well took val's
    integer counts from a mean log10 ratio of +0.03 to -0.57 on the 36 rows it moved: those
    loops keep it (the release build need not unroll them at all)."""
    best = 0.0
    for lp in loops:
        if not (lp.unrolled and lp.source == "constant" and lp.trips > 1):
            continue
        if lp.line < ln <= lp.end_line:
            best = max(best, _unroll_folds(lp, ln, ptx, compiled) or 0.0)
    return best


def _unroll_folds(
    lp: Loop, ln: int, ptx: KernelPtx, compiled: Mapping[int, frozenset[int]]
) -> float | None:
    """The integer instructions of line ``ln`` that unrolling ``lp`` completely folds, the
    most of the PTX loops compiled from it: their control, and their address arithmetic
    when a pragma forces the unroll; None when the counting build kept no loop of it."""
    folds = [
        control + (addressing if lp.forced else 0)
        for i in compiled.get(lp.line, ())
        if i < len(ptx.loop_folded)
        for control, addressing in (ptx.loop_folded[i].get(ln, (0, 0)),)
    ]
    return float(max(folds)) if folds else None


def _unfolded_control(
    lp: Loop, each: float, ptx: KernelPtx, compiled: Mapping[int, frozenset[int]]
) -> float:
    """Of the integer instructions a completely unrolled loop's statement line runs each
    iteration in the counting build (``each``), those the unroll does not fold
    (``KernelPtx.loop_folded``): a pointer bumped by a run-time stride (``a[i + j * n]``
    over j) needs its address computed in every copy (an IMAD.WIDE), where the counter, its
    test and bumps by a constant become constants (as ``_folded`` has it for the body's
    lines). 0 where the counting build kept no loop to tell them apart."""
    folded = _unroll_folds(lp, lp.line, ptx, compiled)
    return 0.0 if folded is None else max(each - folded, 0.0)


def _in_place(
    ln: int,
    line: tuple[int, int, int, int],
    ptx: KernelPtx,
    loops: tuple[Loop, ...],
    compiled: Mapping[int, frozenset[int]],
    chunk_share: float,
) -> tuple[float, float, float, float]:
    """The counts of line ``ln`` for one execution of the line, its FLOPs the compiler hoisted
    out of an enclosing loop (outside every natural loop compiled from it) divided by the loop's
    trip count: they run once per entry of the loop, while the line runs every iteration. Out
    of a work-shared loop they run once per thread's chunk: ``chunk_share`` of the iterations
    (threads / iterations, at most 1), once for the loops a ``collapse`` joins.
    Integer instructions keep the line's weight: dividing them too moved dev's integer counts
    away from the measured ones (within 2x: 58.6 -> 58.2%) and lost a kernel on val."""
    around = [
        lp for lp in loops if lp.line in compiled and lp.line < ln <= (lp.end_line or lp.line)
    ]
    parts = ptx.placed.get(ln)
    if not around or not parts:
        return (line[0], line[1], line[2], line[3])
    out = [0.0, 0.0, 0.0, 0.0]
    for part in parts:
        share = 1.0
        if any(lp.parallel and _hoisted(part, compiled[lp.line], ptx) for lp in around):
            share = chunk_share
        for lp in around:
            if not lp.parallel and not part.loops & compiled[lp.line]:
                share /= max(lp.trips, 1.0)
        for i in range(3):
            out[i] += part.counts[i] * share
        out[3] += part.counts[3]
    return (out[0], out[1], out[2], out[3])


def _in_loops(
    ln: int,
    line: tuple[int, int, int, int],
    ptx: KernelPtx,
    compiled: Mapping[int, frozenset[int]],
) -> tuple[int, int, int, int]:
    """The part of loop statement ``ln``'s counts inside the PTX loops compiled from it,
    when PTX has no loop control on its line (clang puts the back edge elsewhere): what the
    compiler hoisted out of the loop onto its line (``1.0f / n`` of the body, computed before
    it) runs once per entry. All of it when no PTX loop was compiled from it."""
    ids, parts = compiled.get(ln), ptx.placed.get(ln)
    if not ids or not parts:
        return line
    inside = [p.counts for p in parts if p.loops & ids]
    return (
        sum(c[0] for c in inside),
        sum(c[1] for c in inside),
        sum(c[2] for c in inside),
        sum(c[3] for c in inside),
    )


def _hoisted(part: Placement, loops: frozenset[int], ptx: KernelPtx) -> bool:
    """Whether ``part`` of a line sits outside ``loops`` in their own function: hoisted out
    of them. Code of another function (an outlined body the loop calls) runs with the loop."""
    return not part.loops & loops and any(
        ptx.loop_functions[i] == part.function for i in loops if i < len(ptx.loop_functions)
    )


# LLVM's budget for partially unrolling a loop of a run-time trip count on NVPTX: a quarter of
# -O3's threshold of 300, less the backedge's 2 (``NVPTXTTIImpl::getUnrollingPreferences``)
PARTIAL_UNROLL_BUDGET = 73.0
_LIBDEVICE = "__nv_"  # libdevice's functions (``__nv_expf``): no body in the counting PTX


def _operations(mix: LineMix) -> int:
    """A line's operations as LLVM sizes a loop body (its code-size cost): arithmetic and
    memory accesses; not the moves, conversions and address folds PTX spells out."""
    memory = mix.ld_global + mix.st_global + mix.ld_generic + mix.st_generic + mix.ld_shared
    memory += mix.st_shared + mix.ld_local + mix.st_local + mix.ld_const
    return mix.fp32 + mix.fp64 + mix.fp16 + mix.int_ops + mix.special + memory


def release_copies(lp: Loop, loops: tuple[Loop, ...], ptx: KernelPtx) -> float:
    """How many copies of ``lp``'s body the release build (clang -O3) makes when it unrolls
    the loop by a run-time trip count: 73 / (body operations + 1), rounded down to a power of
    two, from its body's PTX in the counting build (a callee's on its call line). 1 for a loop
    around another loop (``loops``) that is not unrolled completely, or around a call of the
    program's own function with a loop of its own: LLVM unrolls only innermost loops. Checked
    against clang 16's release PTX (``tests/fixtures/estimator/release_unroll.cpp``): a body
    of 40 FMAs stays rolled, one of 20 is unrolled twice, one of a load and an FMA 8 times
    (this gives 16: both are past the counter's 4, where nothing changes)."""
    if any(
        inner is not lp and lp.line < inner.line <= lp.end_line and not inner.unrolled
        for inner in loops
    ):
        return 1.0
    size = 1.0
    for ln, mix in ptx.lines.items():
        if lp.line < ln <= lp.end_line:
            if ln in ptx.fallback and any(not c.startswith(_LIBDEVICE) for c in mix.calls):
                return 1.0  # a callee with a loop (not libdevice's, linked in later)
            size += _operations(mix)
    return 2.0 ** math.floor(math.log2(max(PARTIAL_UNROLL_BUDGET / size, 1.0)))


def substitute(
    counts: ThreadCounts,
    kernel: Kernel,
    ptx: KernelPtx,
    unroll_default: float = UNROLL_DEFAULT,
    unroll_strided: bool = True,
    *,
    flops_only: bool = False,
    chunk_share: float = 1.0,
    template_args: tuple[str, ...] = (),
) -> ThreadCounts:
    """``counts`` with FLOPs and integer instructions from ``ptx`` line by line (see the module
    docstring); accesses, loops and weights unchanged. ``flops_only``: the integer
    instructions stay the counter's, line by line. ``chunk_share``: GPU threads over the
    work-shared iterations (at most 1), how often code hoisted out of a work-shared loop
    runs per iteration. ``template_args``: the instance meant (:func:`pick_instantiation`)."""
    ptx = pick_instantiation(counts, ptx, template_args)
    lo, hi = kernel.line, max(kernel.end_line, kernel.line)
    weights = counts.weights
    ordered = sorted(x for x in weights if lo <= x <= hi)
    default = weights.get(kernel.line, min(weights.values()) if weights else 1.0)
    # the kernel's own loops (an inlined callee's loops have lines of another function, in
    # another file or a macro's text, which may be any of the kernel's own line numbers)
    own_loops = tuple(
        lp for lp in counts.loops if lo <= lp.line and lp.end_line <= hi and not lp.inlined
    )
    loops = {lp.line: lp for lp in own_loops}
    keep = set(ptx.fallback) | set(ptx.keep_source)
    keep |= {lp.line for lp in own_loops if lp.parallel}
    # a line a macro expands to a loop on: its PTX line holds the loop's code and the
    # statement's at once, which no one weight multiplies; the counter's count stands
    keep |= {lp.line for lp in counts.loops if lp.macro and lo <= lp.line <= hi}
    # a fallback on a line of a statement that spans several (``x =`` then ``expf(...)`` on
    # the next line, or a call whose arguments continue below it): the counter booked the
    # statement on its first line, which keeps its count for all its lines
    whole = {_statement_of(f, ordered) for f in ptx.fallback}
    keep |= {ln for ln in ptx.lines if _statement_of(ln, ordered) in whole}
    keep |= {ln for ln in whole if ln is not None}
    compiled = _ptx_loops_of(own_loops, ptx, kernel.line)
    copies = _unrolled_copies(own_loops, ptx)
    new: dict[int, tuple[float, float, float, float]] = {}
    for ln, row in counts.lines.items():
        if ln in keep or not (lo <= ln <= hi):
            new[ln] = row
    for ln, mix in ptx.lines.items():
        if ln in keep:
            continue
        w = _weight_of(ln, weights, ordered, default)
        if _skipped(ln, counts.dead_lines, ptx.skipped_by):
            w = 0.0
        line = line_quad(mix)
        lp = loops.get(ln)
        if lp is None or lp.parallel:
            q = _in_place(ln, line, ptx, own_loops, compiled, chunk_share)
            q = (q[0], q[1], q[2], max(q[3] - _folded(ln, own_loops, ptx, compiled), 0.0))
            w /= copies.get(ln, 1.0)
            new[ln] = (q[0] * w, q[1] * w, q[2] * w, q[3] * w)
            continue
        w = lp.weight / copies.get(ln, 1.0)
        # a loop statement: its per-iteration part (the part inside the PTX loops compiled
        # from it when no loop control sits on its line; all of it when PTX found no loop
        # there) runs trips times per entry: the body work inlined or called on the line
        # every iteration, the loop control (integer) once per unrolled group and remainder trip
        trips = max(lp.trips, 0.0)
        each = ptx.per_iteration.get(ln) or _in_loops(ln, line, ptx, compiled)
        body = ptx.per_iteration_body.get(ln, (0, 0, 0, 0))
        once = [max(line[i] - each[i] - body[i], 0) for i in range(4)]
        # left rolled: a grid-stride loop (clang), and one with no counter (LLVM unrolls a
        # loop by a trip count it computes on entry: ``while (x)`` has none)
        rolled = lp.source in STRIDED and not unroll_strided or lp.var is None
        unroll = 1.0 if rolled else unroll_default
        groups = 0.0 if lp.unrolled else control_passes(trips, unroll)
        fp = [(once[i] + (each[i] + body[i]) * trips) * w for i in range(3)]
        ints = (once[3] + each[3] * groups + body[3] * trips) * w
        if lp.unrolled:
            ints += _unfolded_control(lp, each[3], ptx, compiled) * trips * w
        new[ln] = (fp[0], fp[1], fp[2], ints)
    tot = [0.0, 0.0, 0.0, 0.0]
    for row in new.values():
        for i in range(4):
            tot[i] += row[i]
    # the counter's totals may include work booked outside the line table (none today); keep
    # the difference so nothing is lost
    src = [sum(r[i] for r in counts.lines.values()) for i in range(4)]
    orig = [
        counts.flops.get("fp64", 0.0),
        counts.flops.get("fp32", 0.0),
        counts.flops.get("fp16", 0.0),
        counts.int_ops,
    ]
    for i in range(4):
        extra = orig[i] - src[i]
        if extra > 1e-9 * max(abs(orig[i]), 1.0):
            tot[i] += extra
    control = 0.0
    if flops_only:
        tot[3] = orig[3]
        new = {
            ln: (*new.get(ln, _NONE)[:3], counts.lines.get(ln, _NONE)[3])
            for ln in new.keys() | counts.lines.keys()
        }
        # the counter runs a loop's control once per unroll_default trips; a loop whose body
        # the release build cannot unroll that often runs it more (the control is the line's
        # integer work: its test and increment); ``control`` is what that adds, per thread
        for lp in own_loops:
            held = new.get(lp.line)
            rolled = lp.source in STRIDED and not unroll_strided or lp.var is None
            assumed = lp.source == "default"
            one_line = lp.end_line <= lp.line  # (the line holds the body's work too)
            if held is None or rolled or assumed or one_line or lp.unrolled or lp.parallel:
                continue
            release = release_copies(lp, own_loops, ptx)
            if release >= unroll_default or control_passes(lp.trips, unroll_default) <= 0:
                continue
            scale = control_passes(lp.trips, release) / control_passes(lp.trips, unroll_default)
            # the remainder loop's setup the counter charged an offload region's loop each
            # entry (``walk_loops``; none for a loop left rolled)
            setup = costs.REMAINDER_SETUP * lp.weight if lp.source != "constant" else 0.0
            setup = min(setup, held[3])
            ints = (held[3] - setup) * scale + (setup if release > 1 else 0.0)
            control += ints - held[3]
            new[lp.line] = (*held[:3], ints)
        tot[3] += control
    tensor = {"tensor": counts.flops["tensor"]} if "tensor" in counts.flops else {}
    return replace(
        counts,
        flops={"fp64": tot[0], "fp32": tot[1], "fp16": tot[2], **tensor},
        int_ops=tot[3],
        lines=new,
        release_control_ints=control,
    )
