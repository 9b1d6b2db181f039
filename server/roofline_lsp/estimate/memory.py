"""DRAM traffic of a launch: reuse across threads and the L2 cache.

From the counter's accesses (per-thread executions and the distinct elements each touches over
the launch) the model takes, per buffer:

* references: executions x threads x element size (what a cache-less GPU would move);
* footprint: the distinct bytes touched (reuse across threads and loop iterations removed),
  capped by the buffer's allocated size when the host code shows it;
* DRAM bytes: the footprint once (compulsory misses), plus re-reads of the reused part when
  the whole working set overflows L2 (capacity misses, growing with footprint / L2), with
  stores written back once per byte written.

When the working set fits in L2 the data a kernel reads was typically just written or read by
the previous kernel or the host copy and is still resident, and its writes stay in L2 until
evicted: only a fraction of the footprint reaches DRAM (``CacheModel.resident_fraction``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from roofline_lsp.estimate.thread_counts import Access, ThreadCounts

SECTOR = 32  # bytes of a DRAM/L2 sector


@dataclass(frozen=True)
class CacheModel:
    """Constants of the cache model (documented and fitted in ``scripts/calibration.py``)."""

    resident_fraction: float = 1.0  # DRAM share of the reads of a working set fitting L2
    resident_write_fraction: float = 0.5  # ... and of its writes (write-back L2)
    launch_floor: float = 4096.0  # bytes every launch moves (code, parameters, runtime state)
    fit_threshold: float = 1.0  # working set / L2 below which it counts as resident
    capacity_miss: float = 0.02  # share of re-references missing L2 once it overflows
    gather_sector: bool = False  # data-dependent (gather) accesses move whole sectors
    gather_per_thread: float = 1.0  # distinct elements per thread of a gathered buffer of
    # unknown size (indirectly indexed data is about the size of the problem)


@dataclass(frozen=True)
class BufferTraffic:
    buffer: str
    elem: int
    references: float  # bytes referenced by all threads
    footprint: float  # distinct bytes touched
    loaded: float  # DRAM bytes read
    stored: float  # DRAM bytes written


@dataclass(frozen=True)
class MemoryEstimate:
    bytes_loaded: float
    bytes_stored: float
    footprint: float
    references: float
    l2_bytes: float
    resident: bool  # working set fits in L2
    buffers: tuple[BufferTraffic, ...]

    @property
    def dram_bytes(self) -> float:
        return self.bytes_loaded + self.bytes_stored


def estimate_traffic(
    counts: ThreadCounts,
    extents: Mapping[str, float],
    l2_bytes: float,
    model: CacheModel | None = None,
    resident_threads: float | None = None,
) -> MemoryEstimate:
    """DRAM bytes moved by one launch of ``counts.threads`` threads (``resident_threads``:
    how many run at once on the GPU, for per-thread local-memory arrays)."""
    model = model or CacheModel()
    threads = max(counts.threads, 1.0)
    local_l, local_s = _local_memory(counts, threads, l2_bytes, resident_threads)
    by_buffer: dict[str, list[Access]] = {}
    for a in counts.accesses:
        if a.space != "global":
            continue
        by_buffer.setdefault(a.buffer, []).append(a)
    buffers: list[BufferTraffic] = []
    for name, accs in by_buffer.items():
        elem = max(a.elem for a in accs)
        cap = extents.get(name.split(".", 1)[0])
        if cap is not None and (math.isnan(cap) or cap <= 0):
            cap = None
        refs_l = refs_s = 0.0
        foot_l = foot_s = 0.0
        for a in accs:
            execs = a.weight * threads
            refs = execs * a.elem
            if a.distinct is not None:
                distinct = a.distinct
            elif cap is not None:
                distinct = cap
            else:
                distinct = threads * model.gather_per_thread
            unique = min(distinct, execs)
            per = a.elem
            if a.distinct is None and model.gather_sector:
                per = max(a.elem, min(SECTOR, a.elem * 4))
            if cap is not None:
                unique = min(unique, cap)
            foot = unique * per
            if a.kind in ("load", "atomic"):
                refs_l += refs
                foot_l = max(foot_l, foot)
            if a.kind in ("store", "atomic"):
                refs_s += refs
                foot_s = max(foot_s, foot)
        buffers.append(
            BufferTraffic(name, elem, refs_l + refs_s, max(foot_l, foot_s), foot_l, foot_s)
        )
    buffers = _merge_fields(buffers)
    footprint = sum(b.footprint for b in buffers)
    references = sum(b.references for b in buffers)
    resident = footprint <= l2_bytes * model.fit_threshold
    loaded = sum(b.loaded for b in buffers)
    stored = sum(b.stored for b in buffers)
    if resident:
        loaded *= model.resident_fraction
        stored *= model.resident_write_fraction
    else:
        # re-references of a buffer miss once the buffer itself outgrows L2 (a small hot
        # table stays resident while larger buffers stream through)
        for b in buffers:
            if b.loaded > 0 and b.footprint > l2_bytes:
                reread = max(b.references - b.footprint, 0.0)
                loaded += reread * model.capacity_miss * (1.0 - l2_bytes / b.footprint)
    loaded += model.launch_floor + local_l
    stored += local_s
    return MemoryEstimate(
        bytes_loaded=loaded,
        bytes_stored=stored,
        footprint=footprint,
        references=references,
        l2_bytes=l2_bytes,
        resident=resident,
        buffers=tuple(buffers),
    )


def _local_memory(
    counts: ThreadCounts, threads: float, l2_bytes: float, resident: float | None
) -> tuple[float, float]:
    """Local-memory arrays: the threads resident at once each hold a copy; once those
    copies outgrow L2, that share of the references goes to DRAM."""
    loads = stores = 0.0
    live = min(threads, resident) if resident else threads
    for a in counts.accesses:
        if a.space != "localmem":
            continue
        size = counts.local_bytes.get(a.buffer)
        if not size:
            continue
        footprint = size * live
        if footprint <= l2_bytes:
            continue
        miss = 1.0 - l2_bytes / footprint
        refs = a.weight * threads * a.elem * miss
        if a.kind == "load":
            loads += refs
        else:
            stores += refs
    return loads, stores


def _merge_fields(buffers: list[BufferTraffic]) -> list[BufferTraffic]:
    """``b`` (whole elements) and ``b.x``, ``b.m`` (fields) are one buffer: its traffic is
    the larger of the whole-element traffic and the sum over the fields touched."""
    groups: dict[str, list[BufferTraffic]] = {}
    for b in buffers:
        groups.setdefault(b.buffer.split(".", 1)[0], []).append(b)
    out = []
    for base, group in groups.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        whole = [b for b in group if b.buffer == base]
        fields = [b for b in group if b.buffer != base]
        picked = [
            max(sum(getattr(b, a) for b in whole), sum(getattr(b, a) for b in fields))
            for a in ("footprint", "loaded", "stored")
        ]
        out.append(
            BufferTraffic(
                base,
                max(b.elem for b in group),
                sum(b.references for b in group),
                picked[0],
                picked[1],
                picked[2],
            )
        )
    return out
