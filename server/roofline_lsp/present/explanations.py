"""A verdict in words: its explanation and its terms, made from the data the verdict carries
(``model.terms``) only when it is shown (hover, CLI, JSON, SARIF, prompts, ``eval``)."""

from __future__ import annotations

from roofline_lsp.model.numbers import fmt_bytes, fmt_count, fmt_duration, fmt_si
from roofline_lsp.model.terms import (
    TRIPS_HINT,
    AssumptionTerm,
    LoopTerm,
    MemoryTerm,
    NoteTerm,
    QueryTerm,
    Term,
    TypeTerm,
    WorkTerm,
)
from roofline_lsp.model.verdict import Verdict


def explanation(v: Verdict) -> str:
    """``compute-bound: fp32 AI 41 vs ridge 33 (above by 1.2x); <terms>`` for an estimate;
    the words that came with it for a measured or LLM verdict."""
    if v.rationale or v.source != "static":
        return v.rationale
    p = shown_precision(v)
    if p is None:
        head = f"{v.bound}-bound: no arithmetic found"
    else:
        ai = v.ai.get(p) or 0.0
        ridge = v.ridge[p]
        factor = max(ai, 1e-9) / ridge if ai >= ridge else ridge / max(ai, 1e-9)
        side = "above" if ai >= ridge else "below"
        every = "every AI below its ridge; " if below_everywhere(v) else ""
        by = f"{factor:.2g}" if factor < 100 else f"{factor:.0f}"
        head = (
            f"{v.bound}-bound: {every}{p} AI {fmt_count(ai)} vs ridge {fmt_count(ridge)} "
            f"({side} by {by}x)"
        )
    return head + "; " + "; ".join(term_texts(v))


FLOAT_PRECISIONS = ("fp64", "fp32", "fp16", "tensor")  # (tensor: tensor-core multiply-adds)


def shown_precision(v: Verdict) -> str | None:
    """The precision whose intensity a verdict is shown with. Compute-bound: the deciding one
    (furthest above its ridge; the integer one is then named as what decides). Bandwidth-bound:
    every intensity is below its ridge, and a reader of a kernel with floating-point work
    expects its FLOP/byte, so the float precision closest to its ridge; the integer one only
    for a kernel without floating-point work."""
    if v.bound != "bandwidth" or v.deciding is None:
        return v.deciding
    floats = [p for p in FLOAT_PRECISIONS if (v.ai.get(p) or 0) > 0 and v.ridge.get(p)]
    if not floats:
        return v.deciding
    return max(floats, key=lambda p: (v.ai.get(p) or 0.0) / v.ridge[p])


def below_everywhere(v: Verdict) -> bool:
    """Bandwidth-bound with more than one kind of work: each intensity below its ridge, which
    one intensity alone would not say."""
    return v.bound == "bandwidth" and sum(1 for a in v.ai.values() if a and a > 0) > 1


def term_texts(v: Verdict) -> tuple[str, ...]:
    return tuple(term_text(t) for t in v.terms)


def assumed_texts(v: Verdict) -> tuple[str, ...]:
    """What the estimate assumed, in words, the launch first, then the heaviest loops, then
    template types."""
    return tuple(term_text(t) for t in v.terms if isinstance(t, _ASSUMED))


def card_assumptions(v: Verdict) -> tuple[str, ...]:
    """The assumptions a hover card names: the first, and a template type when another came
    first (the type decides the precision, so the ridge the verdict is judged against)."""
    made = [t for t in v.terms if isinstance(t, _ASSUMED)]
    shown = made[:1] + [t for t in made[1:] if isinstance(t, TypeTerm)][:1]
    return tuple(term_text(t) for t in shown)


# the terms that say what the estimate assumed
_ASSUMED = (AssumptionTerm, TypeTerm, QueryTerm)

# the type a hint would most likely give instead of the one a name suggests
_OTHER_TYPE = {"float": "double", "double": "float", "long": "int", "int": "long", "short": "int"}


def _flop_kind(precision: str) -> str:
    """``FP32`` of fp32 FLOPs, ``tensor-core`` of tensor-core multiply-adds."""
    return "tensor-core" if precision == "tensor" else precision.upper()


def term_text(t: Term) -> str:
    """One term in words, e.g. ``loop over j (line 17, 32768 trips, argument): 19 FP32 FLOP,
    4 int ops and 16 B referenced per iteration``."""
    if isinstance(t, WorkTerm):
        ops = [f"{fmt_count(n)} {_flop_kind(p)} FLOP" for p, n in t.flops]
        ops.append(f"{fmt_count(t.int_ops)} integer ops")
        return f"per {t.per}: " + ", ".join(ops)
    if isinstance(t, LoopTerm):
        what = f"loop over {t.var}" if t.var else "loop"
        head = f"{what} (line {t.line}, {fmt_count(t.trips)} trips, {t.trip_source})"
        if t.per_iteration is None:
            return head
        flops, int_ops, refs = t.per_iteration
        parts = [f"{fmt_count(n)} {_flop_kind(p)} FLOP" for p, n in flops]
        parts.append(f"{fmt_count(int_ops)} int ops")
        return f"{head}: {', '.join(parts)} and {fmt_count(refs)} B referenced per iteration"
    if isinstance(t, MemoryTerm):
        return _memory_text(t) + _display_text(t) + _host_text(t)
    if isinstance(t, AssumptionTerm):
        return assumption_text(t)
    if isinstance(t, TypeTerm) and t.kind == "undeclared":
        other = _OTHER_TYPE.get(t.assumed, "double")
        return (
            f"type {t.param} is not declared in view: taken as {t.assumed} by its name;"
            f" add `// roofline: {t.param}={other}` (or another type)"
        )
    if isinstance(t, TypeTerm):
        return (
            f"template type {t.param} assumed {t.assumed} (no launch or call fixes it);"
            f" add `// roofline: {t.param}=double` (or another type)"
        )
    if isinstance(t, QueryTerm) and "GetDeviceCount" in t.call:
        return f"{t.call} taken as 1: the GPU of the verdict does all the work"
    if isinstance(t, QueryTerm):
        return (
            f"{t.call} answered from the GPU's per-SM thread and block limits; the kernel's"
            " registers or shared memory may allow fewer blocks"
        )
    assert isinstance(t, NoteTerm)
    return t.text


def _share(x: float) -> str:
    """A share in words: "half", "a quarter", else a percentage."""
    return {0.5: "half", 0.25: "a quarter", 1.0: "all"}.get(x, f"{x:.0%}")


def _memory_text(t: MemoryTerm) -> str:
    """The working set against L2 and the DRAM bytes the kernel moves."""
    fit = "fits in" if t.resident else "exceeds"
    head = f"working set {fmt_bytes(t.footprint)} {fit} L2 ({fmt_bytes(t.l2_bytes)}); "
    local = (
        f", {fmt_bytes(t.local_bytes)} of them per-thread arrays in local memory"
        if t.local_bytes >= 0.01 * t.dram_bytes
        else ""
    )
    if t.search_bytes >= 0.01 * t.dram_bytes:
        local += (
            f", {fmt_bytes(t.search_bytes)} of them binary-search probes that miss L2"
            " (a sector each)"
        )
    if t.code_bytes >= 0.1 * t.dram_bytes:
        local += f", {fmt_bytes(t.code_bytes)} of them its code"
    if t.layer_bytes >= 0.01 * t.dram_bytes:
        local += (
            f", {fmt_bytes(t.layer_bytes)} of them stencil layers read again"
            f" (the layers between two uses of an element overflow {_share(t.layer_share)}"
            " of L2)"
        )
    if t.dram_bytes >= t.references and not t.search_bytes:
        # each byte referenced once, plus the launch's fixed and local-memory traffic
        return head + f"every byte referenced comes from DRAM ({fmt_bytes(t.dram_bytes)}{local})"
    return head + (
        f"{fmt_bytes(t.dram_bytes)} of DRAM for the {fmt_bytes(t.references)} referenced{local}"
        if t.dram_bytes >= t.references
        else f"{fmt_bytes(t.dram_bytes)} of the {fmt_bytes(t.references)} referenced come"
        f" from DRAM{local}"
    )


def _display_text(t: MemoryTerm) -> str:
    """``; + 40 MB the display reads during the launch's ~38 ms``, when it reads any (and
    why the launch runs that long when atomic updates of one address set it)."""
    if t.display_bytes <= 0:
        return ""
    why = ", its updates of one address in turn" if t.contended else ""
    return (
        f"; + {fmt_bytes(t.display_bytes)} the display reads during the launch's"
        f" ~{fmt_duration(t.seconds * 1e9)}{why} (counted by the profiler)"
    )


def _host_text(t: MemoryTerm) -> str:
    """``; x, y: host memory read in place, 8.39 MB over the host link, not DRAM ...`` when
    the kernel reads host memory mapped into the device."""
    if not t.host_buffers:
        return ""
    return (
        f"; {', '.join(t.host_buffers)}: host memory read in place (zero-copy),"
        f" {fmt_bytes(t.host_bytes)} over the host link, not DRAM: the link, slower than"
        " DRAM, bounds those accesses and this roofline does not show it"
    )


def assumption_text(t: AssumptionTerm) -> str:
    """``launch size unknown: assumed 1.05 M threads; add `// roofline: n=...``` or ``loop over
    j (line 12): bound read from memory, assumed 16; add `// roofline: trips=...` above it``
    (the hint goes on the loop's line or the line above it); a value the program reads at run
    time says so: ``trip count unknown (height set at run time), assumed 16; ...``."""
    hint = ""
    if t.names:
        hint = "; add `// roofline: " + ", ".join(f"{n}=..." for n in t.names) + "`"
    n = fmt_si(t.value, "").strip() if t.value >= 1000 else fmt_count(t.value)
    read = f" ({', '.join(t.read)} set at run time)" if t.why == "input" else ""
    if t.kind == "launch":
        what = "no launch found" if t.why == "no launch" else "launch size unknown"
        return f"{what}{read}: assumed {n} threads{hint}"
    if t.kind == "rest":
        return f"kernel too long to count in full: statements from line {t.line} on not counted"
    where = f"loop over {t.var}" if t.var else "loop"
    head = f"{where} (line {t.line})"
    if not t.names:  # no name to give: the loop's own count settles it
        hint = f"; add `// roofline: {TRIPS_HINT}=...` above it"
    if t.why == "data":
        return f"{head}: bound read from memory, assumed {n}{hint}"
    if t.why == "while":
        return f"{head}: no counted bound, assumed {n}{hint}"
    return f"{head}: trip count unknown{read}, assumed {n}{hint}"
