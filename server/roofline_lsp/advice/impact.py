"""What following a piece of advice is worth, from the roofline model of the kernel: the
kernel's time on the target GPU is its slowest roof, ``max(DRAM bytes / bandwidth, ops of each
precision / its peak)`` for the verdict's counts; a fix changes some of those counts, and the
estimate is the ratio of the two times (and of the DRAM bytes when the fix moves fewer bytes).

These are static estimates, "up to" figures: they assume the rest of the kernel stays as it is.
A fix on one line is weighed with that line's operations and executions per thread from the
estimate (``Counts.line_ops`` / ``line_runs``); a fix whose worth the roofline cannot see (a
reload that hits L1, a host-device transfer) says so in ``Gain.basis`` instead of a number.
A fix worth less than :data:`HINT_BELOW` is given as a hint at most.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline_lsp.estimate.launch_time import ATOMIC_CYCLES, roof_time
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.verdict import Counts

HINT_BELOW = 1.05  # a speedup under 5% is a hint at most

# (fp64, fp32, fp16 FLOP, int ops) per thread: a kernel's or a line's operations
Ops = tuple[float, float, float, float]


@dataclass(frozen=True)
class Gain:
    """The estimated effect of a fix: ``speedup`` (time before / after on the target GPU,
    None when the roofline model cannot tell) and ``fewer_bytes`` (DRAM or global-memory
    bytes before / after, None when the fix moves the same bytes)."""

    speedup: float | None
    fewer_bytes: float | None = None
    gpu: str = ""
    # what the figure is when it is not the plain roofline ratio (the assumption it rests
    # on), or why there is none ("same DRAM bytes: ..."); "" for a roofline ratio
    basis: str = ""

    @property
    def rank(self) -> float:
        """The number advice is ordered by (larger first)."""
        return self.speedup if self.speedup is not None else (self.fewer_bytes or 1.0)

    @property
    def small(self) -> bool:
        """Worth less than 5% on the target GPU."""
        return self.speedup is not None and self.speedup < HINT_BELOW


def _time(gpu: GpuProfile, c: Counts, bytes_scale: float = 1.0) -> float:
    return roof_time(gpu, c.flops, c.int_ops, c.dram_bytes * bytes_scale)


def fp64_to_fp32(gpu: GpuProfile, c: Counts | None, share: float = 1.0) -> Gain | None:
    """``share`` of the kernel's fp64 operations computed in fp32 instead."""
    if c is None or c.flops.get("fp64", 0.0) <= 0:
        return None
    moved = c.flops["fp64"] * share
    after = dict(c.flops)
    after["fp64"] -= moved
    after["fp32"] = after.get("fp32", 0.0) + moved
    return _ratio(gpu, _time(gpu, c), roof_time(gpu, after, c.int_ops, c.dram_bytes))


def fewer_dram_bytes(gpu: GpuProfile, c: Counts | None, extra: float) -> Gain | None:
    """A fix that removes ``extra`` (a fraction of the counted DRAM bytes) of traffic the
    counts do not include (uncoalesced sectors: the counts assume whole sectors are used)."""
    if c is None or c.dram_bytes <= 0 or extra <= 0:
        return None
    before = _time(gpu, c, 1.0 + extra)
    return Gain(_round(before / _time(gpu, c)), _round(1.0 + extra), gpu.name)


def without_dram_bytes(gpu: GpuProfile, c: Counts | None, removed: float) -> Gain | None:
    """A fix that removes ``removed`` bytes per thread of the DRAM traffic the counts include
    (the partly used sectors the estimate charged to an uncoalesced access)."""
    if c is None or c.dram_bytes <= 0 or removed <= 0:
        return None
    left = max(1.0 - removed / c.dram_bytes, 1e-6)
    return Gain(_round(_time(gpu, c) / _time(gpu, c, left)), _round(1.0 / left), gpu.name)


def line_ops(c: Counts | None, offset: int) -> Ops:
    """The operations per thread booked on the line ``offset`` lines below the kernel's
    first line (zeros when none are)."""
    if c is None:
        return (0.0, 0.0, 0.0, 0.0)
    return c.line_ops.get(offset, (0.0, 0.0, 0.0, 0.0))


def line_runs(c: Counts | None, offset: int) -> float | None:
    """How many times per thread that line runs (None when the estimate did not reach it)."""
    return None if c is None else c.line_runs.get(offset)


def fewer_ops(gpu: GpuProfile, c: Counts | None, saved: Ops, basis: str = "") -> Gain | None:
    """The kernel with ``saved`` operations per thread (fp64, fp32, fp16 FLOP, int ops; a
    negative entry is work the fix adds) removed; none of the kernel's counts goes below 0."""
    if c is None or not any(saved):
        return None
    flops = dict(c.flops)
    for p, n in zip(("fp64", "fp32", "fp16"), saved[:3], strict=True):
        if n:
            flops[p] = max(flops.get(p, 0.0) - n, 0.0)
    after = roof_time(gpu, flops, max(c.int_ops - saved[3], 0.0), c.dram_bytes)
    g = _ratio(gpu, _time(gpu, c), after)
    return None if g is None else replace(g, basis=basis)


def serialized_updates(
    gpu: GpuProfile, c: Counts | None, runs: float | None, after_share: float
) -> Gain | None:
    """Atomics on one address: ``runs`` per thread, each launch's ``threads x runs`` updates
    served one after the other, ``launch_time.ATOMIC_CYCLES`` clocks each, beside
    the roofline time of the launch; the fix leaves ``after_share`` of the updates (1/32:
    one per warp after a warp reduction; 0: a reduction clause)."""
    if c is None or runs is None or not c.threads:
        return None
    roof = c.threads * _time(gpu, c)
    serial = c.threads * runs * ATOMIC_CYCLES / (gpu.clock_ghz * 1e9)
    after = max(roof, serial * after_share)
    if after <= 0:
        return None
    basis = f"if the L2 serves one update of an address every {ATOMIC_CYCLES:g} clocks"
    return Gain(_round(max(roof, serial) / after), None, gpu.name, basis)


def unmodelled(gpu: GpuProfile, basis: str) -> Gain:
    """A fix the roofline model does not see (same operations, same DRAM bytes): no figure,
    only what it saves in words."""
    return Gain(None, None, gpu.name, basis)


def _ratio(gpu: GpuProfile, before: float, after: float) -> Gain | None:
    if after <= 0:
        return None
    return Gain(_round(before / after), None, gpu.name)


def _round(x: float) -> float:
    return round(x, 2)
