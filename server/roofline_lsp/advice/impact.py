"""What following a piece of advice is worth, from the roofline model of the kernel: the
kernel's time on the target GPU is its slowest roof, ``max(DRAM bytes / bandwidth, ops of each
precision / its peak)`` for the verdict's counts; a fix changes some of those counts, and the
estimate is the ratio of the two times (and of the DRAM bytes when the fix moves fewer bytes).

These are static estimates, "up to" figures: they assume the rest of the kernel stays as it is.
A fix worth less than :data:`HINT_BELOW` is given as a hint at most.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.verdict import Counts

HINT_BELOW = 1.05  # a speedup under 5% is a hint at most


@dataclass(frozen=True)
class Gain:
    """The estimated effect of a fix: ``speedup`` (time before / after on the target GPU,
    None when the roofline model cannot tell) and ``fewer_bytes`` (DRAM or global-memory
    bytes before / after, None when the fix moves the same bytes)."""

    speedup: float | None
    fewer_bytes: float | None = None
    gpu: str = ""

    @property
    def rank(self) -> float:
        """The number advice is ordered by (larger first)."""
        return self.speedup if self.speedup is not None else (self.fewer_bytes or 1.0)

    @property
    def small(self) -> bool:
        """Worth less than 5% on the target GPU."""
        return self.speedup is not None and self.speedup < HINT_BELOW


def kernel_time(
    gpu: GpuProfile,
    flops: Mapping[str, float],
    int_ops: float,
    dram_bytes: float,
) -> float:
    """Seconds per thread (or iteration) on the slowest roof of ``gpu``."""
    times = [dram_bytes / gpu.dram_bandwidth]
    for p, n in flops.items():
        if n > 0:
            times.append(n / gpu.peak(p))
    if int_ops > 0:
        times.append(int_ops / gpu.peak("int"))
    return max(times)


def _time(gpu: GpuProfile, c: Counts, bytes_scale: float = 1.0) -> float:
    return kernel_time(gpu, c.flops, c.int_ops, c.dram_bytes * bytes_scale)


def fp64_to_fp32(gpu: GpuProfile, c: Counts | None, share: float = 1.0) -> Gain | None:
    """``share`` of the kernel's fp64 operations computed in fp32 instead."""
    if c is None or c.flops.get("fp64", 0.0) <= 0:
        return None
    moved = c.flops["fp64"] * share
    after = dict(c.flops)
    after["fp64"] -= moved
    after["fp32"] = after.get("fp32", 0.0) + moved
    return _ratio(gpu, _time(gpu, c), kernel_time(gpu, after, c.int_ops, c.dram_bytes))


def compute_bound_headroom(gpu: GpuProfile, c: Counts | None, at_most: float) -> Gain | None:
    """The most a fix of the arithmetic can give: the kernel's compute time shrinks by up to
    ``at_most``, and it is never faster than its DRAM roof."""
    if c is None:
        return None
    before = _time(gpu, c)
    flops = {p: n / at_most for p, n in c.flops.items()}
    return _ratio(gpu, before, kernel_time(gpu, flops, c.int_ops / at_most, c.dram_bytes))


def fewer_dram_bytes(gpu: GpuProfile, c: Counts | None, extra: float) -> Gain | None:
    """A fix that removes ``extra`` (a fraction of the counted DRAM bytes) of traffic the
    counts do not include (uncoalesced sectors: the counts assume whole sectors are used)."""
    if c is None or c.dram_bytes <= 0 or extra <= 0:
        return None
    before = _time(gpu, c, 1.0 + extra)
    return Gain(_round(before / _time(gpu, c)), _round(1.0 + extra), gpu.name)


def _ratio(gpu: GpuProfile, before: float, after: float) -> Gain | None:
    if after <= 0:
        return None
    return Gain(_round(before / after), None, gpu.name)


def _round(x: float) -> float:
    return round(x, 2)
