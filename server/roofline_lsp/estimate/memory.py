"""DRAM traffic of a launch: reuse across threads and the L2 cache.

From the counter's accesses (per-thread executions and the distinct elements each touches over
the launch) the model takes, per buffer:

* references: executions x threads x element size (what a cache-less GPU would move);
* footprint: the distinct bytes touched, capped by the buffer's allocated size when the host
  code shows it. Reuse is removed only where the index proves it: an index's distinct values
  follow from the thread and loop dimensions it depends on (an index loaded from memory too:
  a loaded value varies at most as its address does), accesses at known index ranges
  overlap only where the ranges do, differently indexed accesses of a buffer of known size
  add up (to at most its size), and an index holding a value the walk could not follow
  is charged every reference (up to the allocation);
* DRAM bytes: the footprint once (compulsory misses), plus re-reads of the reused part when
  the whole working set overflows L2 (capacity misses, growing with footprint / L2) and a
  stencil's layers read again when the layers between two uses of an element overflow half
  of L2 (``_layer_misses``), with stores written back once per byte written;
* sectors: an access whose consecutive lanes are more than its own size apart (``a[i * n]``
  with i the lane) moves up to a 32 B sector per thread. Touched once, that is a sector per
  distinct element (up to the span the index reaches); walked by the thread over a loop
  (``a[i * n + j]`` over j, a per-thread row), the rest of the sector is used on its next
  iterations if its line is still cached: in L1 when the lines of the running threads fit
  there (threads of a block the index does not tell apart walk one line; rows closer than a
  line share it), else in the share of them L2 holds. A grid-stride loop is no such walk:
  a thread's next trip is the whole launch further on. An access in a branch one lane value takes
  (``if (iz == 0)`` with iz moving across lanes: a grid's face) is apart from every other
  thread's: a sector per element, on top of the buffer's footprint (``APART``).

Measured traffic comes from replays with cold caches (Nsight Compute flushes them before each
profiled launch), so every byte read comes from DRAM at least once, even when the working set
fits in L2 (``CacheModel.resident_fraction`` = 1); written lines may stay in the write-back L2
(``resident_write_fraction``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace

from roofline_lsp.estimate.thread_counts import Access, ThreadCounts

# one access's share of a buffer: footprint bytes, index range (elements) if known, whether
# its index holds a value the walk could not follow, the index as a symbolic part and a
# constant offset, the bytes the index reaches over the launch, and the consecutive
# elements it is known to cover when part of it is read from memory (``Access.run``)
Part = tuple[float, tuple[float, float] | None, bool, tuple[str, float] | None, float, float | None]


# the lane stride of an access in a branch that one lane value takes (``if (iz == 0)``
# with iz moving across lanes): the threads taking it are apart, each access a sector
APART = math.inf


@dataclass(frozen=True)
class CacheModel:
    """Constants of the cache model (documented and fitted in ``scripts/calibration.py``)."""

    resident_fraction: float = 1.0  # DRAM share of the reads of a working set fitting L2
    resident_write_fraction: float = 0.5  # ... and of its writes (write-back L2)
    # fill of L2 (working set / L2) up to which that share holds; from there to a full L2 the
    # written lines are evicted, and written back, as the rest fills: the share rises to 1
    dirty_fill: float = 0.5
    launch_floor: float = 4096.0  # bytes every launch moves (parameters, runtime state)
    fit_threshold: float = 1.0  # working set / L2 below which it counts as resident
    capacity_miss: float = 0.02  # share of re-references missing L2 once it overflows
    sector: float = 32.0  # bytes DRAM and L2 move per access of a thread (a sector)
    line: float = 128.0  # bytes a cache allocates for a thread's stream (a line)
    # share of L2 a stencil's layers may fill and still be reused (the layer condition's
    # safety factor of one half: Stengel et al., ICS 2015)
    layer_share: float = 0.5


@dataclass(frozen=True)
class BufferTraffic:
    buffer: str
    elem: int
    references: float  # bytes referenced by all threads
    footprint: float  # distinct bytes touched
    loaded: float  # DRAM bytes read
    stored: float  # DRAM bytes written
    load_references: float  # bytes read by all threads (what can be read again)
    # DRAM bytes (read, written) the sector model added for accesses whose lanes are more
    # than an element apart (0: their sectors are used whole); None: no access of a known
    # stride is
    uncoalesced: tuple[float, float] | None = None
    searched: float = 0.0  # of the bytes read, binary searches' probes missing L2
    # a field of an array of structs read by consecutive threads from consecutive structs
    # (``p[i].x``): the DRAM bytes of the sectors those reads fetch (up to a sector a
    # thread: a warp reading ``.x`` of 16-byte structs fetches all of them) and of the
    # structs they read; 0: not such a field
    sector_loaded: float = 0.0
    struct_loaded: float = 0.0


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
    search_bytes: float = 0.0  # DRAM bytes of binary searches' probes missing L2
    # per buffer with accesses a known stride of more than an element apart across lanes:
    # the DRAM bytes its partly used sectors add (0: neighbouring accesses use them whole)
    uncoalesced: Mapping[str, float] = field(default_factory=dict, compare=False)
    code_bytes: float = 0.0  # of the bytes loaded, the kernel's code (fetched cold)
    # of the bytes loaded, a stencil's layers read again because the layers between two
    # uses of one element do not fit in L2 (``_layer_misses``)
    layer_bytes: float = 0.0
    layer_share: float = 0.5  # the share of L2 the layers may fill (``CacheModel.layer_share``)
    # DRAM bytes a display engine reads while the launch runs (``launch_time``): not the
    # kernel's, but in the DRAM traffic a profiler counts for it
    display_bytes: float = 0.0
    # host memory the device reads and writes in place (zero-copy, ``without_host_memory``):
    # its buffers and the bytes they move over the host link, not in DRAM's
    host_buffers: tuple[str, ...] = ()
    host_bytes: float = 0.0

    @property
    def kernel_bytes(self) -> float:
        """The DRAM bytes the kernel itself moves."""
        return self.bytes_loaded + self.bytes_stored

    @property
    def dram_bytes(self) -> float:
        """All DRAM traffic during the launch: the kernel's and the display's."""
        return self.kernel_bytes + self.display_bytes


def without_host_memory(
    counts: ThreadCounts,
    host: Collection[str],
    traffic: Callable[[ThreadCounts], MemoryEstimate],
) -> MemoryEstimate:
    """``traffic`` of ``counts`` (``estimate_traffic`` with the launch's other arguments) with
    the buffers of ``host`` taken out: host memory mapped into the device (zero-copy:
    ``cudaHostGetDevicePointer``) is read and written over the host link, so its bytes are
    not DRAM's; they are kept apart as ``host_bytes``, what the buffers would move from
    DRAM."""
    whole = traffic(counts)
    mapped = {a.buffer for a in counts.accesses if a.space == "global" and a.buffer in host}
    if not mapped:
        return whole
    link = sum(b.loaded + b.stored for b in whole.buffers if b.buffer in mapped)
    rest = tuple(a for a in counts.accesses if a.buffer not in mapped)
    return replace(
        traffic(replace(counts, accesses=rest)),
        host_buffers=tuple(sorted(mapped)),
        host_bytes=link,
    )


def estimate_traffic(
    counts: ThreadCounts,
    extents: Mapping[str, float],
    l2_bytes: float,
    model: CacheModel | None = None,
    resident_threads: float | None = None,
    l1_bytes: float = 0.0,
    code_bytes: float = 0.0,
    element_bytes: Mapping[str, float] | None = None,
) -> MemoryEstimate:
    """DRAM bytes moved by one launch of ``counts.threads`` threads (``resident_threads``:
    how many run at once on the GPU, for per-thread local-memory arrays and streams;
    ``l1_bytes``: the L1 caches of all SMs together; ``code_bytes``: the kernel's compiled
    code, which a launch after a cache flush reads from DRAM once). ``extents`` count a
    buffer's elements as it is declared, of ``element_bytes`` bytes each (where known),
    which its accesses may read wider: ``*(char4 *)(data + i)`` reads 4 of ``data``'s
    chars."""
    model = model or CacheModel()
    threads = max(counts.threads, 1.0)
    running = min(threads, resident_threads) if resident_threads else threads

    def thrash(a: Access) -> float:
        # a thread walking its own row (``a[i * n + j]`` over j) comes back to a sector on
        # its next iterations: it is still cached if the lines of the running threads fit in
        # their SMs' L1, else in the share of them L2 holds; threads with the same index
        # (``sharers``) walk one stream, one line for them all, and rows closer together
        # than a line (``a[i * 6 + j]``: 24 B apart) share their lines
        gap = abs(a.lane_stride) * a.elem if a.lane_stride is not None else model.line
        lines = running / max(a.sharers, 1.0) * min(gap, model.line)
        return 0.0 if lines <= l1_bytes else min(max(1.0 - l2_bytes / lines, 0.0), 1.0)

    local_l, local_s = _local_memory(
        counts, threads, l2_bytes, resident_threads, model.resident_write_fraction
    )
    by_buffer: dict[str, list[Access]] = {}
    for a in counts.accesses:
        if a.space != "global":
            continue
        by_buffer.setdefault(a.buffer, []).append(a)
    buffers: list[BufferTraffic] = []
    walked_buffers: set[str] = set()
    for name, accs in by_buffer.items():
        elem = max(a.elem for a in accs)
        cap = _allocated(extents, name)
        if cap is not None and element_bytes and element_bytes.get(name):
            cap *= element_bytes[name] / elem  # in the accesses' elements
        refs_l = refs_s = 0.0
        parts_l: list[Part] = []
        parts_s: list[Part] = []
        sectors = _Sectors()
        touched = {"load": 0.0, "store": 0.0}  # sector bytes of strided accesses, first touch
        apart = {"load": 0.0, "store": 0.0}  # sector bytes of accesses lanes take apart
        probes = 0.0  # sector bytes of binary searches' probes missing L2
        for a in accs:
            execs = a.weight * threads
            refs = execs * a.elem
            unique = _elements(a, threads, cap)
            foot = unique * a.elem
            reach = a.distinct * a.elem if a.distinct is not None else math.inf
            part = (foot, a.interval, a.unfollowed, a.offset, reach, a.run)
            span = cap if cap is not None else _width(a.interval)
            if a.lane_stride == APART:
                # taken by one lane value (a grid's face): a sector per element, shared
                # with no other access (up to the span its index reaches)
                reach_n = span if span is not None else a.distinct
                if reach_n is not None:
                    extra = max(min(unique * model.sector, reach_n * a.elem) - foot, 0.0)
                    for kind in ("load", "store"):
                        if a.kind in (kind, "atomic"):
                            apart[kind] += extra
            else:
                sectors.add(a, _uncoalesced(a, execs, unique, foot, span, thrash(a), model))
            if a.lane_stride is not None and a.lane_stride != APART:
                first = unique * min(abs(a.lane_stride) * a.elem, model.sector)
                for kind in ("load", "store"):
                    if a.kind in (kind, "atomic"):
                        touched[kind] = max(touched[kind], first)
            scattered = _scattered_updates(a, execs, cap, l2_bytes, model) - foot
            if scattered > 0:
                apart["load"] += scattered
                apart["store"] += scattered
            if a.kind in ("load", "atomic"):
                refs_l += refs
                parts_l.append(part)
                probes += _search_misses(a, threads, l2_bytes, model)
            if a.kind in ("store", "atomic"):
                refs_s += refs
                parts_s.append(part)
        limit = cap * elem if cap is not None else math.inf
        foot_l = min(_union(parts_l, elem, cap is not None), limit)
        foot_s = min(_union(parts_s, elem, cap is not None), limit)
        if sectors.walked and (
            touched["load"] > foot_l * 1.001 or touched["store"] > foot_s * 1.001
        ):
            # walked rows whose sectors the thread's own accesses do not fill at once
            # (``in[2 * i]`` and ``in[2 * i + 1]`` do)
            walked_buffers.add(name)
        loaded = max(foot_l, sectors.total("load"))
        stored = max(foot_s, sectors.total("store"))
        struct_sectors, struct_bytes = _struct_reads(
            name, accs, foot_l / elem, threads, cap, model.sector, thrash
        )
        buffers.append(
            BufferTraffic(
                name,
                elem,
                refs_l + refs_s,
                max(foot_l, foot_s),
                loaded + apart["load"] + probes,
                stored + apart["store"],
                refs_l,
                (loaded - foot_l, stored - foot_s) if sectors.strided else None,
                probes,
                struct_sectors,
                struct_bytes,
            )
        )
    buffers = _merge_fields(buffers)
    footprint = sum(b.footprint for b in buffers)
    references = sum(b.references for b in buffers)
    resident = footprint <= l2_bytes * model.fit_threshold
    loaded = sum(b.loaded for b in buffers)
    stored = sum(b.stored for b in buffers)
    read_share = model.resident_fraction if resident else 1.0
    write_share = _write_share(footprint, l2_bytes, model) if resident else 1.0
    uncoalesced: dict[str, float] = {}
    for b in buffers:
        if b.uncoalesced is None:
            continue
        extra = b.uncoalesced[0] * read_share + b.uncoalesced[1] * write_share
        # a row walked by each thread whose lines stay cached moves no more DRAM bytes, yet
        # its sectors are still fetched from L2 again and again: not "used whole"
        if extra > 0 or b.buffer not in walked_buffers:
            uncoalesced[b.buffer] = extra
    loaded *= read_share
    stored *= write_share
    layers = 0.0
    if not resident:
        # re-reads of a buffer miss once the buffer itself outgrows L2 (a small hot table
        # stays resident while larger buffers stream through); a store needs no read (L2
        # keeps per-byte masks), so only loads repeat: ``a[i] += x`` reads a[i] once
        for b in buffers:
            if b.loaded > 0 and b.footprint > l2_bytes:
                reread = max(b.load_references - b.loaded, 0.0)
                loaded += reread * model.capacity_miss * (1.0 - l2_bytes / b.footprint)
        layers = _layer_misses(counts.accesses, extents, l2_bytes, model)
        loaded += layers
    loaded += model.launch_floor + local_l + code_bytes
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
        uncoalesced=uncoalesced,
        search_bytes=sum(b.searched for b in buffers),
        code_bytes=code_bytes,
        layer_bytes=layers,
        layer_share=model.layer_share,
    )


def _write_share(footprint: float, l2_bytes: float, model: CacheModel) -> float:
    """The share of a resident working set's written bytes that reach DRAM during the launch:
    ``resident_write_fraction`` while it fills at most ``dirty_fill`` of L2, then rising
    linearly to all of them as it fills the rest (a set-associative L2 evicts dirty lines
    before it is full). Dev kernels whose working set fills 85-100% of L2 had their DRAM
    bytes a median 1.35x under with a flat share (minisweep's face initialisations, 4.75 MB
    written into 5.24 MB: 2.4x under)."""
    fill = footprint / l2_bytes if l2_bytes > 0 else 1.0
    rise = min(max((fill - model.dirty_fill) / (1.0 - model.dirty_fill), 0.0), 1.0)
    return model.resident_write_fraction + (1.0 - model.resident_write_fraction) * rise


def _scattered_updates(
    a: Access, execs: float, cap: float | None, l2_bytes: float, model: CacheModel
) -> float:
    """Sector bytes read (and as many written back) by atomic updates at indices read from
    memory (``atomicAdd(&count[key[i]], 1)``) of a table larger than L2: each update misses
    L2 as often as it cannot hold the table (1 - L2 / table), and a miss moves a sector in
    and, once evicted dirty, out again. 0 for any other access."""
    if a.kind != "atomic" or not a.gathered or cap is None:
        return 0.0
    table = cap * a.elem
    if table <= l2_bytes:
        return 0.0
    return execs * model.sector * (1.0 - l2_bytes / table)


class _Sectors:
    """DRAM bytes of one buffer's accesses whose lanes are more than an element apart
    (``_uncoalesced``): the per-thread streams of one loop share their sectors (the largest
    counts) and streams of different loops add up; the others count as the largest."""

    def __init__(self) -> None:
        self.moved: dict[str, dict[object, float]] = {"load": {}, "store": {}}
        self.strided = False  # an access a known stride apart
        self.walked = False  # ... in a per-thread stream (its sectors may stay cached)

    def add(self, a: Access, moved: float | None) -> None:
        if moved is None:
            return
        self.strided = True
        self.walked = self.walked or bool(a.streamed)
        group = (a.streamed, a.lane_stride) if a.streamed else None
        for kind in ("load", "store"):
            if a.kind in (kind, "atomic"):
                by_group = self.moved[kind]
                by_group[group] = max(by_group.get(group, 0.0), moved)

    def total(self, kind: str) -> float:
        return sum(self.moved[kind].values())


def _allocated(extents: Mapping[str, float], buffer: str) -> float | None:
    """The elements the host allocated or mapped for ``buffer`` (its fields: the whole
    object's, ``p.x`` of ``p``), None when no positive size is known."""
    cap = extents.get(buffer.split(".", 1)[0])
    return None if cap is None or math.isnan(cap) or cap <= 0 else cap


def _layer_misses(
    accesses: tuple[Access, ...], extents: Mapping[str, float], l2_bytes: float, model: CacheModel
) -> float:
    """DRAM bytes a stencil reads again because its layers do not fit in L2 (the layer
    condition of Stengel, Treibig, Hager and Wellein, ICS 2015). Accesses of one buffer with
    the same reach (``u[i]``, ``u[i + nx]``, ``u[i + nx * ny]``) are their index centres
    apart: as the launch's threads advance through the index, the access at the higher
    offset touches an element first and the next lower one uses it again ``g`` elements
    later. In between, every stream of the launch touches ``g`` new elements per cluster of
    its offsets closer than ``g`` (plus the clusters' own spans). When that exceeds
    ``model.layer_share`` of L2, the element is gone: the lower access reads its layer from
    DRAM again, the elements both accesses reach. Accesses the thread walks in a loop of its
    own (a 2.5D stencil's z loop) are reused in time, not across threads, and are left out."""
    groups: dict[tuple[str, float], list[tuple[int, Access]]] = {}
    for a in accesses:
        c = a.center
        if (
            a.space != "global"
            or c is None
            or not math.isfinite(c)
            or a.streamed
            or a.gathered
            or a.unfollowed
            or not a.distinct
        ):
            continue
        groups.setdefault((a.buffer, a.distinct), []).append((round(c), a))
    # per group: its offsets, its loads' offsets, its element size
    layered = [
        (
            buffer,
            distinct,
            sorted({c for c, _ in members}),
            sorted({c for c, a in members if a.kind in ("load", "atomic")}),
            max(a.elem for _, a in members),
        )
        for (buffer, distinct), members in groups.items()
    ]
    # the streams that fill L2 between two uses: groups larger than a small table
    streams = [
        (offs, elem) for _b, distinct, offs, _l, elem in layered if distinct * elem * 64 > l2_bytes
    ]

    def window(g: float) -> float:
        total = 0.0
        for offs, elem in streams:
            clusters, spans, start = 1, 0.0, offs[0]
            for lo, hi in itertools.pairwise(offs):
                if hi - lo >= g:
                    clusters += 1
                    spans += lo - start
                    start = hi
            spans += offs[-1] - start
            total += elem * (clusters * g + spans)
        return total

    extra = 0.0
    for buffer, distinct, _offs, loads, elem in layered:
        cap = _allocated(extents, buffer)
        layer = min(distinct, cap) if cap is not None else distinct
        for lo, hi in itertools.pairwise(loads):
            g = hi - lo
            # the elements both reach: offsets as far apart as the elements each access
            # reaches are disjoint parts (a structure of arrays' components), none read twice
            shared = 1.0 - g / distinct
            if g >= _TILE_GAP and shared > 0 and window(g) > model.layer_share * l2_bytes:
                extra += layer * elem * shared
    return extra


def _search_misses(a: Access, threads: float, l2_bytes: float, model: CacheModel) -> float:
    """DRAM bytes of the probes of a binary search (``a[mid]``) that each thread runs down
    its own path, over an array of S bytes (W elements). Level l probes one of 2^l
    elements, W / 2^(l+1) apart. The top levels are shared by all threads: while their
    probes, a line each, fit in L2 (log2(L2 / line) levels), they hit there after the first
    touch. Each level below probes a sector of its own, log2(S / sector) levels in all,
    and the levels whose probes come closer than a sector add one more on average (a new
    sector half the time, then a quarter...). Those probes miss as often as L2 cannot hold
    the array (1 - L2 / S): none when it fits."""
    if a.searched is None:
        return 0.0
    width, levels = a.searched
    size = width * a.elem
    if size <= l2_bytes or levels <= 0:
        return 0.0
    below = math.log2(size / model.sector) + 1.0 - math.log2(l2_bytes / model.line)
    searches = a.weight / levels * threads  # searches of the launch
    return max(below, 0.0) * (1.0 - l2_bytes / size) * model.sector * searches


def _width(interval: tuple[float, float] | None) -> float | None:
    return None if interval is None else interval[1] - interval[0] + 1


def _uncoalesced(
    a: Access,
    execs: float,
    unique: float,
    foot: float,
    span: float | None,
    thrash: float,
    model: CacheModel,
) -> float | None:
    """DRAM bytes of an access whose consecutive lanes are ``lane_stride`` elements apart,
    when that is more than its own bytes: each thread's access moves up to a sector (32 B)
    of which it uses ``elem``. A thread that comes back to the sector on its next iterations
    (a per-thread stream: ``a[i * n + j]`` over j) misses it again as often as its line was
    evicted (``thrash``). An access that does not is charged a sector per distinct element,
    up to the ``span`` of elements its index can reach (other threads fill the sectors of a
    dense span; neighbouring accesses of one thread share one: the largest counts per
    buffer). None when there is nothing to say: a coalesced access, an unknown stride, no
    known span."""
    if a.lane_stride is None:
        return None
    gap = abs(a.lane_stride) * a.elem
    if gap <= a.elem:
        return None
    per = min(gap, model.sector)
    if a.streamed:
        return foot + max(execs * per - foot, 0.0) * thrash
    if span is None:
        return None
    return min(unique * per, span * a.elem)


def _union(parts: list[Part], elem: int, bounded: bool = False) -> float:
    """Distinct bytes of several accesses to one buffer. Accesses whose index ranges are
    known overlap only where the ranges do (``in[t]`` and ``in[t + 9 * n]`` are two arrays'
    worth, ``u[i - 1]``, ``u[i]``, ``u[i + 1]`` one): each group of overlapping ranges
    covers at most its union. Other accesses are grouped by index (:func:`_tiles`). In a
    buffer of known size (``bounded``) nothing shows that differently indexed groups overlap
    (fwt's ``d[i0]``, ``d[i1]``, ``d[i2]``, ``d[i3]``, four quarters of the array, with
    ``i1 = i0 + stride``): their footprints add up, and the caller caps the total by the
    allocation. In a buffer of unknown size the groups are assumed to cover the same
    elements as the largest of them (one array indexed several ways, a table gathered from:
    adding them would have no bound), except those whose index holds a value the walk could
    not follow (``s[n * STATE_V + i]`` with ``STATE_V`` unknown), which add up."""
    tiles = _tiles(
        [(f, off, r, run) for f, iv, unf, off, r, run in parts if iv is None and not unf]
    )
    free = sum(tiles) if bounded else max(tiles)
    free = max(free, sum(f for f, iv, unf, *_ in parts if iv is None and unf))
    ranged = sorted(
        ((iv[0], iv[1], f) for f, iv, *_ in parts if iv is not None), key=lambda r: r[0]
    )
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


# offsets at least a warp's worth of elements apart: unrolled copies of one access
# (``k + tid``, ``k + tid + 128``, ...), each touching elements the others do not
_TILE_GAP = 32.0


def _tiles(parts: list[tuple[float, tuple[str, float] | None, float, float | None]]) -> list[float]:
    """Footprints of accesses without a known range, one per way the buffer is indexed.
    Accesses with the same index on different paths (the arms of an ``if``/``else`` chain
    writing a cube's faces) touch the elements of the threads that take them: they add up,
    to at most what the index reaches. Those differing only by constant offsets a warp or
    more apart add up too (disjoint tiles); nearer offsets (``u[i - 1]``, ``u[i + 1]``)
    overlap, as differently indexed ones are assumed to, unless part of the index is read
    from memory and the rest covers fewer consecutive elements than the offsets are apart
    (``key[k + tid]`` and ``key[k + tid + 8]``, ``tid`` in [0, 7], ``k`` a segment's start
    read from memory: nothing shows the segments' elements are touched twice)."""
    same: dict[tuple[str, float], tuple[float, float]] = {}
    runs: dict[str, float] = {}
    out = [0.0]
    for f, off, reach, run in parts:
        if off is None:
            out.append(f)
        else:
            had, most = same.get(off, (0.0, reach))
            most = max(most, reach)  # what the widest of them reaches
            same[off] = (min(had + f, most), most)
            if run is not None:
                runs[off[0]] = min(runs.get(off[0], run), run)
    groups: dict[str, list[tuple[float, float]]] = {}
    for (sym, c), (f, _) in same.items():
        groups.setdefault(sym, []).append((c, f))
    for sym, members in groups.items():
        members.sort()
        gap = min(_TILE_GAP, runs.get(sym, _TILE_GAP))
        total, last, tile = 0.0, -math.inf, 0.0
        for c, f in members:
            if c - last >= gap:
                total, tile = total + tile, f
            else:
                tile = max(tile, f)
            last = c
        out.append(total + tile)
    return out


def _local_memory(
    counts: ThreadCounts,
    threads: float,
    l2_bytes: float,
    resident: float | None,
    write_fraction: float,
) -> tuple[float, float]:
    """Local-memory arrays: the threads resident at once each hold a copy; once those
    copies outgrow L2, that share of the references goes to DRAM. Copies that fit are
    written back like a global buffer that fits (``write_fraction`` of the lines written,
    once: later threads reuse the same slots)."""
    loads = stores = 0.0
    live = min(threads, resident) if resident else threads
    written: set[str] = set()
    for a in counts.accesses:
        if a.space != "localmem":
            continue
        size = counts.local_bytes.get(a.buffer)
        if not size:
            continue
        footprint = size * live
        if footprint <= l2_bytes:
            if a.kind != "load" and a.buffer not in written:
                written.add(a.buffer)
                stores += write_fraction * footprint
            continue
        miss = 1.0 - l2_bytes / footprint
        refs = a.weight * threads * a.elem * miss
        if a.kind == "load":
            loads += refs
        else:
            stores += refs
    return loads, stores


def _elements(a: Access, threads: float, cap: float | None) -> float:
    """The distinct elements access ``a`` touches over a launch of ``threads``, in a buffer
    of ``cap`` elements (None: size unknown)."""
    execs = a.weight * threads
    # an index with no bound on its distinct values (one the walk could not follow) is
    # charged every reference, up to the allocation
    unique = execs if a.distinct is None else min(a.distinct, execs)
    if a.gathered and cap is None:
        # a gather (``x[col[j]]``) from a table of unknown size: indirectly indexed data is
        # about the size of the problem, an element per thread
        unique = min(unique, threads)
    if cap is not None:
        unique = min(unique, cap)
    if a.searched is not None:  # a search's probes stay in the range it searches
        unique = min(unique, a.searched[0])
    return unique


def _struct_reads(
    name: str,
    accs: list[Access],
    structs: float,
    threads: float,
    cap: float | None,
    sector: float,
    thrash: Callable[[Access], float],
) -> tuple[float, float]:
    """For field ``name`` (``p.x``) read by consecutive threads from structs ``lane_bytes``
    apart, ``structs`` of them (its footprint's elements): the sectors those reads fetch and
    the struct bytes they lie in (:func:`_merge_fields` takes the sectors of all fields, up
    to the struct bytes). Each read counts at its own lanes' distance: the field walked
    along the rows (``AT[t + 370 * c].Re``, structs 8 B apart, the most structs read) reads
    whole structs; another read of it lanes further apart (the diagonal ``AT[371 * t].Re``,
    2968 B) fetches a sector per element, not the structs in between. A thread that walks
    its structs over a loop (``AT[187 * t + c].Re`` over c) uses the rest of each sector on
    its next iterations unless its line was evicted first (``thrash``, as for a plain
    buffer's walked rows). (0, 0) for a plain buffer or a field no thread reads from its own
    struct."""
    if "." not in name:
        return 0.0, 0.0
    # (elements read, lanes' distance in bytes, share of a sector's rest fetched again, the
    # field's bytes) of each read with lanes a struct apart
    wide = [
        (_elements(a, threads, cap), a.lane_bytes, thrash(a) if a.streamed else 1.0, a.elem)
        for a in accs
        if a.kind != "store" and a.lane_bytes is not None and a.lane_bytes > a.elem
    ]
    if not wide:
        return 0.0, 0.0
    spacing = max(wide, key=lambda w: w[0])[1]  # the lanes' distance of the most structs read
    sectors = size = 0.0
    for n, gap, again, elem in wide:
        per = min(gap, sector)
        sectors += n * (elem + (per - elem) * again)
        size += n * (gap if gap == spacing else per)
    # no more than the footprint's structs at the widest spacing (reads that overlap)
    widest = max(w[1] for w in wide)
    return min(sectors, structs * min(widest, sector)), min(size, structs * widest)


def _merge_fields(buffers: list[BufferTraffic]) -> list[BufferTraffic]:
    """``b`` (whole elements) and ``b.x``, ``b.m`` (fields) are one buffer: its traffic is
    the larger of the whole-element traffic and the sum over the fields touched. Fields that
    consecutive threads read from consecutive structs read whole sectors: up to a sector per
    field and thread, and at most the structs themselves (``.x`` of 16-byte structs: 16
    bytes a thread; ``.x``, ``.y``, ``.z`` of 28-byte ones: 28)."""
    groups: dict[str, list[BufferTraffic]] = {}
    for b in buffers:
        groups.setdefault(b.buffer.split(".", 1)[0], []).append(b)
    out = []
    for base, group in groups.items():
        whole = [b for b in group if b.buffer == base]
        fields = [b for b in group if b.buffer != base]
        if len(group) == 1 and not any(b.struct_loaded for b in fields):
            out.append(group[0])
            continue
        field_loaded = sum(b.loaded for b in fields)
        if any(b.struct_loaded for b in fields):
            # the sectors fetched, at most the structs they lie in
            sectors = sum(b.sector_loaded for b in fields)
            every = max(b.struct_loaded for b in fields)
            plain = sum(b.loaded for b in fields if not b.struct_loaded)
            field_loaded = max(field_loaded, plain + min(sectors, every))
        picked = [
            max(sum(getattr(b, a) for b in whole), sum(getattr(b, a) for b in fields))
            for a in ("footprint", "loaded", "stored")
        ]
        picked[1] = max(sum(b.loaded for b in whole), field_loaded)
        out.append(
            BufferTraffic(
                base,
                max(b.elem for b in group),
                sum(b.references for b in group),
                picked[0],
                picked[1],
                picked[2],
                sum(b.load_references for b in group),
                searched=min(sum(b.searched for b in group), picked[1]),
            )
        )
    return out
