"""The DRAM traffic model (``memory.py``) on hand-built access lists."""

from __future__ import annotations

import math

import pytest

from roofline_lsp.estimate.memory import (
    CacheModel,
    MemoryEstimate,
    estimate_traffic,
    without_host_memory,
)
from roofline_lsp.estimate.thread_counts import Access, ThreadCounts

L2 = 5 * 1024 * 1024
MODEL = CacheModel(launch_floor=0.0)


def counts(threads: float, *accesses: Access) -> ThreadCounts:
    return ThreadCounts(
        flops={"fp64": 0.0, "fp32": 0.0, "fp16": 0.0},
        int_ops=0.0,
        accesses=accesses,
        loops=(),
        lines={},
        weights={},
        threads=threads,
        dims={},
        followed=(),
    )


def acc(buffer: str, kind: str, weight: float, distinct: float | None, elem: int = 4) -> Access:
    return Access(buffer, "global", elem, kind, weight, distinct, 1)


def test_streaming_kernel_moves_its_footprint() -> None:
    # 1M threads read a[i] and write b[i]: 4 MiB each way
    m = estimate_traffic(
        counts(2**20, acc("a", "load", 1, 2**20), acc("b", "store", 1, 2**20)), {}, L2, MODEL
    )
    assert m.bytes_loaded == 4 * 2**20 and m.bytes_stored == 4 * 2**20
    assert m.footprint == 8 * 2**20 and not m.resident


def test_reuse_across_threads_is_counted_once() -> None:
    # a 3-point stencil: three loads of the same 1M elements are one footprint
    a = [acc("u", "load", 1, 2**20) for _ in range(3)]
    m = estimate_traffic(counts(2**20, *a), {}, L2, MODEL)
    assert m.references == 3 * 4 * 2**20
    assert m.bytes_loaded == 4 * 2**20


def test_broadcast_and_allocation_cap() -> None:
    # every thread reads the same 64 elements (distinct 64), and a gathered table capped by
    # its allocation (1000 elements)
    m = estimate_traffic(
        counts(2**20, acc("w", "load", 64, 64), acc("t", "load", 8, None)),
        {"t": 1000.0},
        L2,
        MODEL,
    )
    assert m.bytes_loaded == pytest.approx(64 * 4 + 1000 * 4)
    assert m.resident


def test_capacity_misses_when_a_reused_buffer_outgrows_l2() -> None:
    # 64 MiB read 16 times (loop over it): 1x compulsory + capacity_miss (2%) of the 15
    # re-reads x (1 - L2/F)
    f = 64 * 2**20
    m = estimate_traffic(counts(2**20, acc("a", "load", 16 * 16, 2**24)), {}, L2, MODEL)
    expected = f + 15 * f * 0.02 * (1 - L2 / f)
    assert m.bytes_loaded == pytest.approx(expected)
    # a small table re-read as often stays in L2: no capacity misses
    m2 = estimate_traffic(
        counts(2**20, acc("a", "load", 16, 2**24), acc("t", "load", 256, 4096)), {}, L2, MODEL
    )
    assert m2.bytes_loaded == pytest.approx(f + 4096 * 4)


def test_repeated_stores_and_read_modify_writes_read_nothing_again() -> None:
    # 16M threads each update a[i] 100 times (the load hoisted, the store repeated) over a
    # 64 MiB buffer that outgrows L2: a store needs no read, so DRAM reads the buffer once
    # and writes it once; before, the 99 extra stores counted as capacity re-reads
    f = 64 * 2**20
    m = estimate_traffic(
        counts(2**24, acc("a", "load", 1, 2**24), acc("a", "store", 100, 2**24)), {}, L2, MODEL
    )
    assert m.bytes_loaded == pytest.approx(f)
    assert m.bytes_stored == pytest.approx(f)
    # but a buffer both re-read (4 loads a thread) and written still re-reads its loads:
    # 3 re-reads of 64 MiB x 2% x (1 - L2/F)
    m2 = estimate_traffic(
        counts(2**24, acc("a", "load", 4, 2**24), acc("a", "store", 1, 2**24)), {}, L2, MODEL
    )
    assert m2.bytes_loaded == pytest.approx(f + 3 * f * 0.02 * (1 - L2 / f))


def test_fields_of_one_buffer_merge() -> None:
    # p[i] (16-byte struct) and p[j].x / p[j].y (4-byte fields) are one buffer
    m = estimate_traffic(
        counts(
            1000,
            acc("p", "load", 1, 1000, elem=16),
            acc("p.x", "load", 10, 1000),
            acc("p.y", "load", 10, 1000),
        ),
        {},
        L2,
        MODEL,
    )
    assert [b.buffer for b in m.buffers] == ["p"]
    assert m.bytes_loaded == pytest.approx(16 * 1000)


def test_a_diagonal_read_beside_rows_of_structs_moves_a_sector_each() -> None:
    # chemv's AT (8-byte complex structs): 512 threads read .re and .im of adjacent structs
    # along 512 rows (lanes 8 B apart: 512 x 512 structs, 2 MiB, read whole), and .re of one
    # diagonal struct each (lanes 513 structs = 4104 B apart: a 32 B sector per element,
    # 16 KiB). Loads: 2 MiB + 16 KiB, not a sector for every struct of the rows (the
    # diagonal's distance is not the rows')
    def field(name: str, weight: float, distinct: float, lane_bytes: float) -> Access:
        return Access(name, "global", 4, "load", weight, distinct, 1, lane_bytes=lane_bytes)

    m = estimate_traffic(
        counts(
            512,
            field("AT.re", 512, 512 * 512, 8),
            field("AT.im", 512, 512 * 512, 8),
            field("AT.re", 1, 512, 513 * 8),
        ),
        {},
        L2,
        MODEL,
    )
    assert [b.buffer for b in m.buffers] == ["AT"]
    assert m.bytes_loaded == pytest.approx(512 * 512 * 8 + 512 * 32)


def test_a_thread_walking_its_structs_reads_them_whole() -> None:
    # 384 threads each walk their own row of 8-byte structs (.re and .im of AT[187 * t + c]
    # over 2930 trips of c: lanes 187 structs apart, 1,125,120 structs, 9 MB). A lane's read
    # fetches a 32 B sector, and the thread reads the rest of it on its next three trips:
    # the lines of 384 threads stay cached, so the structs are read once (9 MB), not a sector
    # per struct and field (36 MB)
    def field(name: str) -> Access:
        return Access(
            name, "global", 4, "load", 2930, 384 * 2930, 1, streamed=frozenset({"c"}),
            lane_bytes=187 * 8,
        )  # fmt: skip

    m = estimate_traffic(counts(384, field("AT.re"), field("AT.im")), {}, L2, MODEL)
    assert m.bytes_loaded == pytest.approx(384 * 2930 * 8)


def test_resident_writes_stay_in_l2() -> None:
    # a 1 MiB working set (fits the 5 MiB L2): reads reach DRAM, half the writes do
    m = estimate_traffic(
        counts(2**18, acc("a", "load", 1, 2**18), acc("b", "store", 1, 2**18)), {}, L2, MODEL
    )
    assert m.resident
    assert m.bytes_loaded == 2**20
    assert m.bytes_stored == 0.5 * 2**20


@pytest.mark.parametrize(
    ("stored_mib", "share"),
    [
        # 2 MiB of 5 MiB (40% of L2, under the half that keeps its dirty lines): half
        (2, 0.5),
        # 3.75 MiB (75%, halfway from 50% to a full L2): 0.5 + 0.5 * 0.5 of them
        (3.75, 0.75),
        # 5 MiB (a full L2): all of them, as if it had overflowed
        (5, 1.0),
    ],
)
def test_written_lines_are_evicted_as_the_working_set_fills_l2(
    stored_mib: float, share: float
) -> None:
    # a write-only working set: what stays dirty in L2 at the end of the launch shrinks from
    # half of it (while it fills half of L2 or less) to nothing as it fills L2
    n = stored_mib * 2**18  # 4-byte elements
    m = estimate_traffic(counts(n, acc("b", "store", 1, n)), {}, L2, MODEL)
    assert m.resident
    assert m.bytes_stored == pytest.approx(share * stored_mib * 2**20)


def test_launch_floor() -> None:
    m = estimate_traffic(counts(1, acc("a", "store", 1, 1)), {}, L2, CacheModel())
    assert m.bytes_loaded == CacheModel().launch_floor


def ranged(buffer: str, kind: str, lo: float, hi: float, elem: int = 4) -> Access:
    n = hi - lo + 1
    return Access(buffer, "global", elem, kind, 1, n, 1, interval=(lo, hi))


def test_disjoint_index_ranges_add_up_and_overlapping_ones_merge() -> None:
    # 1M threads read a[t] and a[t + 2M] (two disjoint 4 MiB ranges: 8 MiB) and b[t - 1],
    # b[t], b[t + 1] (one range of 1M + 2 elements)
    n = 2**20
    m = estimate_traffic(
        counts(
            n,
            ranged("a", "load", 0, n - 1),
            ranged("a", "load", 2 * n, 3 * n - 1),
            ranged("b", "load", -1, n - 2),
            ranged("b", "load", 0, n - 1),
            ranged("b", "load", 1, n),
        ),
        {},
        L2,
        MODEL,
    )
    foot = {b.buffer: b.footprint for b in m.buffers}
    assert foot == {"a": pytest.approx(8 * n), "b": pytest.approx(4 * (n + 2))}


def test_cold_cache_reads_the_whole_footprint_even_when_it_fits_l2() -> None:
    # labels come from replays with flushed caches: a 1 MiB working set that fits the 5 MiB
    # L2 is still read from DRAM once; only writes may stay in the write-back L2 (half)
    n = 2**18
    m = estimate_traffic(
        counts(n, acc("x", "load", 1, n), acc("y", "store", 1, n)), {}, L2, CacheModel()
    )
    assert m.resident
    assert m.bytes_loaded == pytest.approx(4 * n + 4096)
    assert m.bytes_stored == pytest.approx(0.5 * 4 * n)


@pytest.mark.parametrize(("run", "footprint"), [(None, 2**16 * 4), (8.0, 4 * 2**16 * 4)])
def test_offsets_of_a_loaded_base_overlap_only_within_the_run_it_covers(
    run: float | None, footprint: float
) -> None:
    # 2^16 threads read x[k + lane + c], c in {0, 8, 16, 24}, 2^16 distinct elements each:
    # as dense as the threads (no run), offsets under a warp apart are neighbours of one
    # run, 256 kB; with a run of 8 (lane in [0, 7], k read from memory) they are four
    # disjoint runs, 1 MiB
    parts = [
        Access("x", "global", 4, "load", 1, 2**16, 1, offset=("+k +lane", float(c)), run=run)
        for c in (0, 8, 16, 24)
    ]
    m = estimate_traffic(counts(2**16, *parts), {}, L2, MODEL)
    assert m.footprint == pytest.approx(footprint)


def test_binary_search_probes_miss_below_the_levels_l2_holds() -> None:
    # 2^20 threads each search a 64 MiB float array (2^24 elements, 25 levels): a[mid] is
    # referenced 25 times per thread. Probes below the top log2(5 MiB / 128 B) = 15.32
    # levels miss L2, a sector each: log2(64 MiB / 32 B) + 1 = 22 levels probe their own
    # sector, so 22 - 15.32 = 6.68 per search, as often as L2 cannot hold the array
    # (1 - 5/64 = 0.922): 2^20 x 6.68 x 0.922 x 32 B = 206 MB on top of the 100 distinct
    # elements the walk knows of (400 B)
    probe = Access("a", "global", 4, "load", 25.0, 100.0, 1, searched=(2.0**24, 25.0))
    m = estimate_traffic(counts(2**20, probe), {}, L2, MODEL)
    per_search = (math.log2(64 * 2**20 / 32) + 1 - math.log2(L2 / 128)) * (1 - 5 / 64) * 32
    assert m.search_bytes == pytest.approx(2**20 * per_search)
    assert m.bytes_loaded == pytest.approx(400 + 2**20 * per_search)
    assert m.search_bytes == pytest.approx(206e6, rel=0.01)
    # over an array L2 holds (4 MiB) every level stays there after its first touch
    small = Access("a", "global", 4, "load", 20.0, 100.0, 1, searched=(2.0**20, 20.0))
    assert estimate_traffic(counts(2**20, small), {}, L2, MODEL).search_bytes == 0
    # an index the walk cannot bound (charged every reference: 2^20 x 20 x 4 B = 84 MB)
    # touches no more than the range searched: 4 MiB, all in L2
    unbounded = Access("a", "global", 4, "load", 20.0, None, 1, searched=(2.0**20, 20.0))
    assert estimate_traffic(counts(2**20, unbounded), {}, L2, MODEL).bytes_loaded == 4 * 2**20


def test_differently_indexed_accesses_add_up_to_the_allocation_when_it_is_known() -> None:
    # fwt's butterfly: d[i0], d[i1], d[i2], d[i3] with i1 = i0 + stride (stride a run-time
    # value), each 1M distinct floats. Nothing shows they overlap: with the allocation known
    # (4M elements) they add up to it, 16 MiB; without it (no bound on a sum) they are
    # taken as one array indexed four ways, 4 MiB
    quarters = [
        Access("d", "global", 4, "load", 1, 2**20, 1, offset=(f"+i{q}", 0.0)) for q in range(4)
    ]
    known = estimate_traffic(counts(2**20, *quarters), {"d": 4.0 * 2**20}, L2, MODEL)
    assert known.bytes_loaded == pytest.approx(16 * 2**20)
    unknown = estimate_traffic(counts(2**20, *quarters), {}, L2, MODEL)
    assert unknown.bytes_loaded == pytest.approx(4 * 2**20)
    # the same four in a larger allocation: 16 MiB, not the allocation
    larger = estimate_traffic(counts(2**20, *quarters), {"d": 64.0 * 2**20}, L2, MODEL)
    assert larger.bytes_loaded == pytest.approx(16 * 2**20)


def test_same_index_accesses_add_up_to_what_the_widest_of_them_reaches() -> None:
    # convolutionSeparable's rows kernel: every thread reads src[i * 16] in its main loop
    # (2^20 threads x 8 trips: the whole 8M-float image, 32 MiB) and twice more behind the
    # halo guards (a thread in eight: 1M distinct each). One index, one footprint: the
    # image's 32 MiB. The halo loads reach less, which must not cap the sum below what the
    # main loop reads alone (it did: 4 MiB, the last one's reach)
    n = 2**20
    src = [
        Access("src", "global", 4, "load", w, d, 1, offset=("+i * 16", 0.0))
        for w, d in ((8.0, 8.0 * n), (1.0, n / 8), (1.0, n / 8))
    ]
    m = estimate_traffic(counts(n, *src), {}, L2, MODEL)
    assert m.footprint == pytest.approx(32 * 2**20)
    (buf,) = m.buffers
    assert buf.loaded == pytest.approx(32 * 2**20)


def _layer(center: float, kind: str = "load", buffer: str = "u", n: float = 2**24) -> Access:
    return Access(buffer, "global", 4, kind, 1, n, 1, center=center)


@pytest.mark.parametrize(("plane", "misses"), [(2**16, 0), (2**18, 2)])
def test_stencil_layers_are_read_again_when_they_overflow_half_of_l2(
    plane: int, misses: int
) -> None:
    # A 7-point stencil's z neighbours u[i - P], u[i], u[i + P] over 2^24 threads (64 MiB of
    # floats), writing v[i]. The access at i + P touches an element first; u[i] uses it again
    # P elements later, u[i - P] P after that. In between, u's three layers (offsets P
    # apart) and v's one advance P elements each: 4 layers x P x 4 B. With P = 2^16 that is
    # 1 MiB, within half of the 5 MiB L2: no layer read again. With P = 2^18 it is 4 MiB >
    # 2.5 MiB: u[i] and u[i - P] each read their layer again, the elements both reach
    # (1 - P / 2^24 of the 2^24): 2 x 64 MiB x 63/64 = 126 MiB, on top of the 64 MiB
    # footprint and the capacity misses of the other re-reads (2% of 128 MiB x (1 - L2 / 64
    # MiB))
    n = 2**24
    accesses = (
        _layer(n / 2 - plane),
        _layer(n / 2),
        _layer(n / 2 + plane),
        _layer(n / 2, "store", "v"),
    )
    m = estimate_traffic(counts(n, *accesses), {}, L2, MODEL)
    extra = misses * 4 * n * (1 - plane / n)
    assert m.layer_bytes == pytest.approx(extra)
    capacity = 2 * 4 * n * 0.02 * (1 - L2 / (4 * n))
    assert m.bytes_loaded == pytest.approx(4 * n + extra + capacity)


def test_components_of_a_structure_of_arrays_are_not_layers() -> None:
    # s[i], s[i + n], s[i + 2n] over n threads: three components, each reaching its own n
    # elements, far apart in the window, yet disjoint: nothing is read twice
    n = 2**24
    m = estimate_traffic(
        counts(n, *(_layer(n / 2 + k * n, buffer="s", n=n) for k in range(3))), {}, L2, MODEL
    )
    assert m.layer_bytes == 0.0


def test_host_memory_read_in_place_is_not_dram_traffic() -> None:
    # c[i] = a[i] + b[i] over 1M threads, a and b host memory mapped into the device: a's
    # and b's 8 MiB cross the host link, kept apart; c's 4 MiB alone fit the 5 MiB L2 (80%
    # of it), 0.5 + 0.5 * (0.8 - 0.5) / 0.5 = 0.8 of them written back during the kernel
    # (the write-back share as the working set fills L2): 3.2 MiB of DRAM
    def traffic(c: ThreadCounts) -> MemoryEstimate:
        return estimate_traffic(c, {}, L2, MODEL)

    k = counts(
        2**20, acc("a", "load", 1, 2**20), acc("b", "load", 1, 2**20), acc("c", "store", 1, 2**20)
    )
    m = without_host_memory(k, {"a", "b", "x"}, traffic)
    assert m.bytes_loaded == 0.0 and m.resident
    assert m.bytes_stored == pytest.approx(0.8 * 4 * 2**20)
    assert m.host_buffers == ("a", "b") and m.host_bytes == 8 * 2**20
    # nothing mapped: the plain estimate
    assert without_host_memory(k, set(), traffic) == traffic(k)
