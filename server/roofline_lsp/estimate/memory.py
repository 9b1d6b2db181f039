"""DRAM traffic of a launch: reuse across threads and the L2 cache.

From the counter's accesses (per-thread executions and the distinct elements each touches over
the launch) the model takes, per buffer:

* references: executions x threads x element size (what a cache-less GPU would move);
* footprint: the distinct bytes touched, capped by the buffer's allocated size when the host
  code shows it. Reuse is removed only where the index proves it: an index's distinct values
  follow from the thread and loop dimensions it depends on (an index loaded from memory too:
  a loaded value varies at most as its address does), accesses at known index ranges
  overlap only where the ranges do, and an index holding a value the walk could not follow
  is charged every reference (up to the allocation);
* DRAM bytes: the footprint once (compulsory misses), plus re-reads of the reused part when
  the whole working set overflows L2 (capacity misses, growing with footprint / L2), with
  stores written back once per byte written.

Measured traffic comes from replays with cold caches (Nsight Compute flushes them before each
profiled launch), so every byte read comes from DRAM at least once, even when the working set
fits in L2 (``CacheModel.resident_fraction`` = 1); written lines may stay in the write-back L2
(``resident_write_fraction``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from roofline_lsp.estimate.thread_counts import Access, ThreadCounts

# one access's share of a buffer: footprint bytes, index range (elements) if known, and
# whether its index holds a value the walk could not follow
Part = tuple[float, tuple[float, float] | None, bool]


@dataclass(frozen=True)
class CacheModel:
    """Constants of the cache model (documented and fitted in ``scripts/calibration.py``)."""

    resident_fraction: float = 1.0  # DRAM share of the reads of a working set fitting L2
    resident_write_fraction: float = 0.5  # ... and of its writes (write-back L2)
    launch_floor: float = 4096.0  # bytes every launch moves (code, parameters, runtime state)
    fit_threshold: float = 1.0  # working set / L2 below which it counts as resident
    capacity_miss: float = 0.02  # share of re-references missing L2 once it overflows


@dataclass(frozen=True)
class BufferTraffic:
    buffer: str
    elem: int
    references: float  # bytes referenced by all threads
    footprint: float  # distinct bytes touched
    loaded: float  # DRAM bytes read
    stored: float  # DRAM bytes written
    load_references: float  # bytes read by all threads (what can be read again)


@dataclass(frozen=True)
class MemoryEstimate:
    bytes_loaded: float
    bytes_stored: float
    footprint: float
    references: float
    l2_bytes: float
    resident: bool  # working set fits in L2
    buffers: tuple[BufferTraffic, ...]
    local_bytes: float = 0.0  # DRAM bytes of per-thread arrays in local memory

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
        parts_l: list[Part] = []
        parts_s: list[Part] = []
        for a in accs:
            execs = a.weight * threads
            refs = execs * a.elem
            # an index with no bound on its distinct values (one the walk could not
            # follow) is charged every reference, up to the allocation
            unique = execs if a.distinct is None else min(a.distinct, execs)
            if a.gathered and cap is None:
                # a gather (``x[col[j]]``) from a table of unknown size: indirectly
                # indexed data is about the size of the problem, an element per thread
                unique = min(unique, threads)
            if cap is not None:
                unique = min(unique, cap)
            foot = unique * a.elem
            part = (foot, a.interval, a.unfollowed)
            if a.kind in ("load", "atomic"):
                refs_l += refs
                parts_l.append(part)
            if a.kind in ("store", "atomic"):
                refs_s += refs
                parts_s.append(part)
        limit = cap * elem if cap is not None else math.inf
        foot_l = min(_union(parts_l, elem), limit)
        foot_s = min(_union(parts_s, elem), limit)
        buffers.append(
            BufferTraffic(name, elem, refs_l + refs_s, max(foot_l, foot_s), foot_l, foot_s, refs_l)
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
        # re-reads of a buffer miss once the buffer itself outgrows L2 (a small hot table
        # stays resident while larger buffers stream through); a store needs no read (L2
        # keeps per-byte masks), so only loads repeat: ``a[i] += x`` reads a[i] once
        for b in buffers:
            if b.loaded > 0 and b.footprint > l2_bytes:
                reread = max(b.load_references - b.loaded, 0.0)
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
        local_bytes=local_l + local_s,
    )


def _union(parts: list[Part], elem: int) -> float:
    """Distinct bytes of several accesses to one buffer. Accesses whose index ranges are
    known overlap only where the ranges do (``in[t]`` and ``in[t + 9 * n]`` are two arrays'
    worth, ``u[i - 1]``, ``u[i]``, ``u[i + 1]`` one): each group of overlapping ranges
    covers at most its union. Other accesses are assumed to cover the same elements as the
    largest of them (one array indexed several ways, a table gathered from), except those
    whose index holds a value the walk could not follow (``s[n * STATE_V + i]`` with
    ``STATE_V`` unknown): nothing shows they overlap, so their footprints add up (the caller
    caps the total by the allocation)."""
    free = max((f for f, iv, unf in parts if iv is None and not unf), default=0.0)
    free = max(free, sum(f for f, iv, unf in parts if iv is None and unf))
    ranged = sorted(((iv[0], iv[1], f) for f, iv, _ in parts if iv is not None), key=lambda r: r[0])
    total = 0.0
    group: tuple[float, float, float] | None = None  # lo, hi, summed footprint
    for lo, hi, f in ranged:
        if group is not None and lo <= group[1] + 1:
            group = (group[0], max(group[1], hi), group[2] + f)
            continue
        if group is not None:
            total += min(group[2], (group[1] - group[0] + 1) * elem)
        group = (lo, hi, f)
    if group is not None:
        total += min(group[2], (group[1] - group[0] + 1) * elem)
    return max(total, free)


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
                sum(b.load_references for b in group),
            )
        )
    return out
