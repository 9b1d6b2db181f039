"""Error attribution for ``eval``: a verdict's launch totals beside the measured ones, the
"count without running" measure of gpuFLOPBench. It tells whether a wrong verdict comes from the
operation counts, the DRAM bytes or the launch.

Components (estimated / measured, both totals over the whole launch):

* ``fp32``, ``fp64``: FLOPs, thread-level, an FMA counting 2 (the estimator's costs and PTX
  counts use ncu's ``fadd + fmul + 2 * ffma``) / ``measured.sp_flop``, ``dp_flop``. FP16 work
  has no measured counterpart and is left out.
* ``int``: integer instructions, thread-level / ``measured.int_ops``.
* ``dram_bytes``: bytes loaded + stored after the reuse and L2 model / ``measured.traffic_bytes``.
* ``threads``: the threads of the launch (OpenMP: iterations of the offloaded loop nest, the
  unit the counts are per) / the product of the row's ``grid`` and ``block``. For OpenMP the two
  are different units: a team thread runs several iterations, so a ratio above 1 is expected.
* ``seconds``: the launch's duration (``estimate.launch_time``, which sets the display
  traffic counted in the DRAM bytes) / ``measured.time_ns``.

The estimated operation totals are the ones the verdict's intensities were computed from:
``ai[p] * DRAM bytes`` (which includes the OpenMP runtime's integer instructions per GPU thread,
not in the per-iteration counts), else ``counts * threads``.

How a row counts for a component, in :func:`component_summary`:

* measured value missing (no ``measured`` block, not a number): ``unmeasured``, left out;
* measured 0: ``measured_zero``, left out of the ratios (no ratio exists); how many of these got
  a non-zero estimate (work invented) is ``invented``;
* measured > 0: scored. An estimate of 0 or none (kernel not found, analysis failed, a verdict
  without counts) is an infinite error: outside 2x and 10x, and it sorts last for the median
  (a median that falls on it is reported as null). ``no_estimate`` and ``estimated_zero`` say how
  many of the scored rows these are.

:func:`assumption_split` gives the summary twice: over the rows whose verdict assumed nothing
(every launch size, trip count and type came from the source, the arguments or a hint) and over
those whose verdict names an assumption (``AssumptionTerm``, ``TypeTerm``): it separates the
counting model's error from the guesses the explanation already owns up to.
:func:`assumption_kinds` splits the second group by what was assumed and why
(``AssumptionTerm.why``: a value the program sets at run time, ``input``; a bound read from
memory, ``data``; ...; a template type, ``type``), a row in each kind its verdict names.

:func:`dram_misses` says where the DRAM estimates that miss by more than 2x went wrong. Under
the measured bytes, either the reuse and L2 model removed traffic the hardware moved (the bytes
the threads reference, plus the display's, would be within 2x or over: ``under_reuse_removed``),
or the model does not see the traffic at all (even those are under: ``under_unseen``: a trip
count, the launch, accesses it does not count, or a launch time that misses a display frame).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from roofline_lsp.evaluation.dataset import Row
from roofline_lsp.model.terms import AssumptionTerm, MemoryTerm, TypeTerm
from roofline_lsp.model.verdict import Verdict

COMPONENTS: tuple[str, ...] = ("fp32", "fp64", "int", "dram_bytes", "threads", "seconds")
MEASURED_KEY = {"fp32": "sp_flop", "fp64": "dp_flop", "int": "int_ops"}
MEASURED_BYTES = "traffic_bytes"
MEASURED_TIME = "time_ns"
# the largest |log10(estimated / measured)| within 2x (a float's slack for exactly 2x)
WITHIN_2X = math.log10(2) + 1e-12
# ``Verdict.ai`` is capped here (``estimate.roofline``): above it the product is not the total
_AI_CAP = 1e9


@dataclass(frozen=True)
class Pair:
    """One component of one row: the estimate and the measurement (None when absent)."""

    estimated: float | None
    measured: float | None

    @property
    def log10_ratio(self) -> float | None:
        """log10(estimated / measured); None unless both are positive."""
        if self.estimated is None or self.measured is None:
            return None
        if self.estimated <= 0 or self.measured <= 0:
            return None
        return math.log10(self.estimated / self.measured)

    def as_json(self) -> dict[str, float | None]:
        r = self.log10_ratio
        return {
            "estimated": self.estimated,
            "measured": self.measured,
            "log10_ratio": None if r is None else round(r, 4),
        }


def estimated_totals(verdict: Verdict | None) -> dict[str, float] | None:
    """The launch totals a verdict rests on, or None when it has no counts (an LLM or
    measured verdict, a kernel the estimator gave up on)."""
    if verdict is None or verdict.counts is None:
        return None
    c = verdict.counts
    threads = c.threads or 0.0
    dram = c.dram_bytes * threads
    out: dict[str, float] = {}
    for p in ("fp32", "fp64", "int"):
        ai = verdict.ai.get(p)
        if ai is not None and dram > 0 and math.isfinite(ai) and ai < _AI_CAP:
            out[p] = ai * dram
        else:
            out[p] = c.ops(p) * threads
    out["dram_bytes"] = dram
    out["threads"] = threads
    out["seconds"] = next((t.seconds for t in verdict.terms if isinstance(t, MemoryTerm)), 0.0)
    return out


def measured_totals(data: Mapping[str, Any]) -> dict[str, float | None]:
    """A dataset row's measured launch totals (None where the row does not say)."""
    m = data.get("measured")
    m = m if isinstance(m, dict) else {}

    def num(v: Any) -> float | None:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return None
        return float(v)

    out = {p: num(m.get(key)) for p, key in MEASURED_KEY.items()}
    out["dram_bytes"] = num(m.get(MEASURED_BYTES))
    out["threads"] = _launch_threads(data.get("grid"), data.get("block"))
    ns = num(m.get(MEASURED_TIME))
    out["seconds"] = None if ns is None else ns * 1e-9
    return out


def _launch_threads(grid: Any, block: Any) -> float | None:
    dims = []
    for d in (grid, block):
        if not (isinstance(d, list) and d and all(isinstance(x, int) and x > 0 for x in d)):
            return None
        dims.extend(d)
    return float(math.prod(dims))


def row_pairs(row: Row) -> dict[str, Pair]:
    """Estimated beside measured, per component, for one row."""
    est = estimated_totals(row.verdict)
    meas = measured_totals(row.data)
    return {comp: Pair(None if est is None else est[comp], meas[comp]) for comp in COMPONENTS}


def row_attribution(row: Row) -> dict[str, dict[str, float | None]]:
    """The per-row figures for ``eval --json``'s predictions; the DRAM bytes also give the
    bytes with none reused (:func:`unreused_bytes`)."""
    out = {comp: pair.as_json() for comp, pair in row_pairs(row).items()}
    out["dram_bytes"]["unreused"] = unreused_bytes(row.verdict)
    return out


def unreused_bytes(verdict: Verdict | None) -> float | None:
    """A launch's DRAM bytes had the reuse and L2 model removed none: every byte its threads
    reference in global memory, and what the display reads while it runs (None for a verdict
    without a memory estimate)."""
    if verdict is None or verdict.counts is None:
        return None
    m = next((t for t in verdict.terms if isinstance(t, MemoryTerm)), None)
    return None if m is None else m.references + m.display_bytes


DRAM_MISSES: tuple[str, ...] = ("within_2x", "over", "under_reuse_removed", "under_unseen")


def dram_miss(row: Row) -> str | None:
    """Which of :data:`DRAM_MISSES` a row's DRAM estimate is (module docstring); None for a
    row not scored: no estimate, or no positive measurement."""
    pair = row_pairs(row)["dram_bytes"]
    ratio = pair.log10_ratio
    if ratio is None:
        return None
    if abs(ratio) <= WITHIN_2X:
        return "within_2x"
    if ratio > 0:
        return "over"
    # the bytes with none reused against the measured ones (None: no memory estimate)
    unreused = Pair(unreused_bytes(row.verdict), pair.measured).log10_ratio
    if unreused is not None and unreused >= -WITHIN_2X:
        return "under_reuse_removed"
    return "under_unseen"


def dram_misses(rows: Iterable[Row]) -> dict[str, int]:
    """How many of ``rows`` fall in each of :data:`DRAM_MISSES`."""
    kinds = [dram_miss(r) for r in rows]
    return {kind: kinds.count(kind) for kind in DRAM_MISSES}


def component_summary(pairs: Iterable[Pair]) -> dict[str, Any]:
    """Median |log10(estimate/measured)| and shares within 2x and 10x over the rows measured
    > 0 (see the module docstring for zeros and missing values)."""
    errors: list[float] = []
    unmeasured = measured_zero = invented = no_estimate = estimated_zero = 0
    for p in pairs:
        if p.measured is None or p.measured < 0:
            unmeasured += 1
            continue
        if p.measured == 0:
            measured_zero += 1
            invented += p.estimated is not None and p.estimated > 0
            continue
        if p.estimated is None:
            no_estimate += 1
            errors.append(math.inf)
        elif p.estimated <= 0:
            estimated_zero += 1
            errors.append(math.inf)
        else:
            errors.append(abs(math.log10(p.estimated / p.measured)))
    n = len(errors)
    median = statistics.median(errors) if errors else None
    return {
        "scored": n,
        "median_abs_log10": None if median is None or math.isinf(median) else round(median, 4),
        "within_2x": _share(sum(e <= WITHIN_2X for e in errors), n),
        "within_10x": _share(sum(e <= 1 + 1e-12 for e in errors), n),
        "no_estimate": no_estimate,
        "estimated_zero": estimated_zero,
        "measured_zero": measured_zero,
        "invented": invented,
        "unmeasured": unmeasured,
    }


def attribution_summary(rows: Iterable[Row]) -> dict[str, dict[str, Any]]:
    """:func:`component_summary` for each component over ``rows``."""
    per_row = [row_pairs(r) for r in rows]
    return {comp: component_summary(p[comp] for p in per_row) for comp in COMPONENTS}


def assumed(verdict: Verdict) -> bool:
    """Whether the verdict rests on a value the source did not give: a launch size, a trip
    count or a type the estimator assumed (what its explanation names with a hint)."""
    return bool(assumed_kinds(verdict))


def assumed_kinds(verdict: Verdict) -> tuple[str, ...]:
    """What kinds of value the verdict assumed (``AssumptionTerm.why``: ``input``, ``data``,
    ...; ``type`` for a ``TypeTerm``), each once, in the order its terms name them."""
    kinds: list[str] = []
    for t in verdict.terms:
        if isinstance(t, AssumptionTerm | TypeTerm):
            kind = t.why if isinstance(t, AssumptionTerm) else "type"
            if kind not in kinds:
                kinds.append(kind)
    return tuple(kinds)


def assumption_split(rows: Iterable[Row]) -> dict[str, dict[str, dict[str, Any]]]:
    """:func:`attribution_summary` over the rows with counts whose verdict assumed nothing
    (``nothing_assumed``) and over those whose verdict assumed something (``assumed``); rows
    without counts (kernel not found, LLM or measured verdicts) are in neither."""
    groups: dict[str, list[Row]] = {"nothing_assumed": [], "assumed": []}
    for r in rows:
        if r.verdict is not None and r.verdict.counts is not None:
            groups["assumed" if assumed(r.verdict) else "nothing_assumed"].append(r)
    return {name: attribution_summary(group) for name, group in groups.items()}


def assumption_kinds(rows: Iterable[Row]) -> dict[str, dict[str, dict[str, Any]]]:
    """:func:`attribution_summary` over the rows whose verdict names each kind of assumption
    (``AssumptionTerm.why``, ``type`` for a ``TypeTerm``), the kinds in order of their rows."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.verdict is None or r.verdict.counts is None:
            continue
        for kind in assumed_kinds(r.verdict):
            groups.setdefault(kind, []).append(r)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {kind: attribution_summary(group) for kind, group in ranked}


def _share(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None
