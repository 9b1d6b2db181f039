"""How long a launch runs, and the DRAM traffic of the display engine during it.

A launch takes the longest of these times:

- **throughput**: its slowest roof, ``max(ops of each precision / peak, DRAM bytes /
  sustained bandwidth)`` over the launch totals; the compute roofs of the SMs its blocks
  occupy (a launch of 8 blocks runs on 8 of the 68 SMs of an RTX 3080, at 8/68 of its peak);
  and the data path between those SMs' L1 and shared memory and their threads, which moves
  128 bytes (a wavefront) a cycle: a warp whose threads read consecutive floats takes one,
  threads each reading a field of their own 64-byte struct take 16 (``l1_wavefronts``);
  and the warps themselves, each taking its SM ~11 cycles to start and retire (a launch of
  1.7 G threads that exit at once runs 6 ms);
- **latency**: its threads' instructions one after another. A warp waits
  ``dependent_cycles`` cycles on average between dependent instructions (ALU results take
  4-6 cycles, L1 hits ~30, L2 hits ~200), so a launch too small to fill the GPU (a few
  hundred threads walking a long loop) runs for ``instructions per thread x dependent_cycles
  / clock`` per wave of resident threads, however few operations it does in all (the
  threads that share the work: an offloaded loop of 100 iterations keeps 100 of a launch's
  65536 threads busy). A thread's instructions are its integer ops and half its FLOPs (an
  FMA is 2 FLOP in one instruction), less the loop control that issues beside them
  (``unchained_ints``); each also holds its warp while its pipe takes the
  warp's 32 threads, ``32 / lanes`` cycles for the SM's lanes of its precision (``peak / (2
  x clock x SMs)``): a quarter of a cycle for FP32 on an RTX 3080, 16 cycles for FP64 on its
  2 lanes an SM. A load from global memory holds the thread ``load_cycles`` more: its line
  comes from L2 (~200 cycles) or DRAM, so a thread walking memory (its own row of a
  matrix, a line for each of its loads) waits on memory more than on its arithmetic; a load
  of one address by the whole warp is an L1 hit after the first warp and waits no longer
  than an ALU result. Counted so, every instruction waits on the one before it; a long chain
  does not (an unrolled loop's iterations, independent sums, loads in flight overlap), a
  short one waits on more than its count (its first loads' DRAM latency): a thread's chain of
  ``c`` cycles is taken to run ``chain_pivot x (c / chain_pivot) ^ chain_exponent`` cycles.

- **launch**: starting the blocks and draining them takes a few microseconds however little
  a launch does (``launch_seconds``);
- **contention**: atomic updates of one address run one after another in L2, each taking
  ``atomic_cycles`` (:data:`ATOMIC_CYCLES`): 134 M threads each updating one counter take
  ~300 ms however few operations they do (``contended_updates``: the most updates one
  address gets).

The time matters to the verdict through the display: a card driving a display (the RTX 3080
of the eval labels, ``GpuProfile.display_frame_bytes``) has its display engine read a frame
from DRAM every refresh, and Nsight Compute counts those bytes in the kernel's DRAM traffic.
A launch is charged a frame once it runs a third of a refresh (:data:`FIRST_FRAME_SHARE`),
and one more each refresh after. That decides kernels that run long
on little data: a few threads spinning for 170 ms read 10 kB themselves but are measured with
200 MB, which puts their intensity below the ridge.

Pure analysis (no LSP).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from roofline_lsp.estimate.thread_counts import Access
from roofline_lsp.model.gpus import GpuProfile

__all__ = [
    "ATOMIC_CYCLES",
    "LaunchTime",
    "contended_updates",
    "display_bytes",
    "global_loads",
    "l1_wavefronts",
    "launch_time",
    "roof_time",
]

WARP = 32  # threads a warp instruction issues
LINE_BYTES = 128  # an L1 cache line, and what the SM's data path moves a cycle
BANK_BYTES = 4  # a shared memory bank's word (32 banks)
# cycles one atomic update of an address holds it in L2 (updates of one address serialise):
# on the dev set 134 M threads updating each of nine counters once ran 296 ms, 5 M float
# additions to one sum 11.0 ms, both 2.2 ns (3.2 cycles at 1.44 GHz) an update
ATOMIC_CYCLES = 3.2


@dataclass(frozen=True)
class LaunchTime:
    """A launch's estimated duration and the limit that sets it."""

    seconds: float
    limit: Literal["throughput", "latency", "contention", "launch"]


def launch_time(
    totals: Mapping[str, float],
    dram_bytes: float,
    gpu_threads: float,
    gpu: GpuProfile,
    *,
    dependent_cycles: float,
    threads_per_sm: int,
    contended: float = 0.0,
    atomic_cycles: float = 0.0,
    blocks: float = math.inf,
    dram_efficiency: float = 1.0,
    launch_seconds: float = 0.0,
    busy_threads: float | None = None,
    thread_ints: float = 0.0,
    loads: float = 0.0,
    load_cycles: float = 0.0,
    wavefronts: float = 0.0,
    warp_cycles: float = 0.0,
    unchained_ints: float = 0.0,
    chain_exponent: float = 1.0,
    chain_pivot: float = 1.0,
) -> LaunchTime:
    """The time of a launch of ``gpu_threads`` threads, ``busy_threads`` of them (all when
    None) doing ``totals`` (FLOP by precision, ``"int"`` ops; over the launch), each also
    running ``thread_ints`` integer ops of its own (an OpenMP runtime's set-up), ``loads``
    loads from global memory (over the launch) each waiting ``load_cycles``, and moving
    ``dram_bytes`` at ``dram_efficiency`` of the peak bandwidth, in ``blocks`` thread blocks
    (teams), whose busiest address takes ``contended`` atomic updates; no launch takes less
    than ``launch_seconds``; the SMs its blocks occupy pass one cache line a cycle between
    their L1 and their threads, ``wavefronts`` of them in all (:func:`l1_wavefronts`), and
    take ``warp_cycles`` to start and retire each of its warps. ``unchained_ints`` of the
    integer ops (over the launch) issue beside the threads' dependent chains and take no
    latency of their own: the loop control a release build adds where it unrolls a loop less
    than the counter assumes (negative where it removes some: the chain's cycles were
    calibrated on the counter's control). A thread's chain of ``c`` cycles runs
    ``chain_pivot x (c / chain_pivot) ^ chain_exponent`` (1: as counted)."""
    flops = {p: n for p, n in totals.items() if p != "int"}
    work_ints = totals.get("int", 0.0)
    int_ops = work_ints + thread_ints * gpu_threads
    busy = min(max(blocks, 1.0), gpu.sm_count) / gpu.sm_count
    throughput = max(
        roof_time(gpu, flops, int_ops, 0.0) / busy,
        dram_bytes / (gpu.dram_bandwidth * dram_efficiency),
        (wavefronts + gpu_threads / WARP * warp_cycles)
        / (busy * gpu.sm_count * gpu.clock_ghz * 1e9),
    )
    # the longest thread's chain: the work over the threads that share it, then its own
    threads = max(gpu_threads if busy_threads is None else busy_threads, 1.0)
    int_cycles = dependent_cycles + _issue_cycles(gpu, "int")
    chained = max(work_ints - unchained_ints, 0.0)
    cycles = chained * int_cycles if chained > 0 else 0.0
    for p, n in flops.items():
        if n > 0:
            cycles += n / 2 * (dependent_cycles + _issue_cycles(gpu, p))
    cycles += loads * load_cycles
    waves = math.ceil(threads / (gpu.sm_count * threads_per_sm))
    chain = cycles / threads + thread_ints * int_cycles
    if chain > 0 and chain_exponent != 1.0:
        chain = chain_pivot * (chain / chain_pivot) ** chain_exponent
    latency = chain * waves / (gpu.clock_ghz * 1e9)
    serial = contended * atomic_cycles / (gpu.clock_ghz * 1e9)
    if launch_seconds > max(serial, latency, throughput):
        return LaunchTime(launch_seconds, "launch")
    if serial > max(latency, throughput):
        return LaunchTime(serial, "contention")
    if latency > throughput:
        return LaunchTime(latency, "latency")
    return LaunchTime(throughput, "throughput")


def contended_updates(accesses: Iterable[Access], threads: float) -> float:
    """The most atomic updates one address of global memory receives over a launch of
    ``threads`` threads: an atomic access's executions over the distinct addresses its index
    takes (``atomicAdd(&sum, x)``: all of them on one), the accesses with the same index
    added up; 0 without atomics or when no access's addresses are known. The updates a
    warp's threads make of one address (a single address for the launch) count once when
    the compiler combines them (``Access.combined``)."""
    per_address: dict[tuple[str, str], float] = {}
    for a in accesses:
        if a.kind == "atomic" and a.space == "global" and a.distinct:
            key = (a.buffer, a.index)
            settled = max(a.weight - a.guessed, 0.0)
            if a.combined and a.distinct <= 1:
                settled /= WARP
            per_address[key] = per_address.get(key, 0.0) + settled * threads / max(a.distinct, 1.0)
    return max(per_address.values(), default=0.0)


def global_loads(accesses: Iterable[Access], threads: float) -> float:
    """The loads from global memory ``threads`` threads execute (each access's executions
    per thread) that wait on L2, the ones ``load_cycles`` charges to a thread's chain: not
    the loads of one address by a whole warp (``pos[j]`` in an n-body loop), whose line the
    first warp brings into the SM's L1 for the others."""
    return threads * sum(
        a.weight
        for a in accesses
        if a.space == "global" and a.kind == "load" and a.lane_stride != 0
    )


def l1_wavefronts(accesses: Iterable[Access], threads: float) -> float:
    """The wavefronts ``threads`` threads' warps pass through their SMs' L1 and shared
    memory for their accesses (the SM's data path moves 128 bytes, one wavefront, a cycle):
    a warp's access to global memory takes one for each 128-byte line its 32 threads touch
    (consecutive floats: 1; one address: 1; a thread's own 64-byte struct: 16; up to 32),
    an access to shared memory one for each 128 bytes and as many as the threads that
    share a bank (floats 32 apart: 32). Accesses whose stride between threads is not
    known take one."""
    total = 0.0
    for a in accesses:
        if a.space in ("global", "shared") and a.weight > 0:
            total += a.weight * _warp_wavefronts(a)
    return total * threads / WARP


def _warp_wavefronts(a: Access) -> float:
    """Wavefronts of one warp's execution of ``a`` (:func:`l1_wavefronts`)."""
    stride = abs(a.lane_stride) if a.lane_stride else 0.0
    if not math.isfinite(stride):
        return float(WARP)  # apart: a line each
    if a.space == "global":
        gap = stride * a.elem or a.lane_bytes or 0.0  # bytes between consecutive threads
        return float(min(WARP, max(1, math.ceil(WARP * gap / LINE_BYTES))))
    if not stride:
        return 1.0
    volume = max(1, math.ceil(WARP * a.elem / LINE_BYTES))
    words = stride * a.elem / BANK_BYTES  # banks between consecutive threads
    conflicts = math.gcd(round(words), WARP) if words >= 1 and words == round(words) else 1
    return float(max(volume, conflicts))


def _issue_cycles(gpu: GpuProfile, precision: str) -> float:
    """Cycles a warp's instruction of ``precision`` holds its pipe: 32 threads over the SM's
    lanes of it (a peak counts 2 ops a lane and clock)."""
    lanes = gpu.peak(precision) / (2 * gpu.clock_ghz * 1e9 * gpu.sm_count)
    return WARP / lanes


def roof_time(
    gpu: GpuProfile,
    flops: Mapping[str, float],
    int_ops: float,
    dram_bytes: float,
) -> float:
    """Seconds on the slowest roof of ``gpu`` for ``flops`` (by precision), ``int_ops`` and
    ``dram_bytes``: a launch's, or a thread's (advice weighs fixes with it)."""
    times = [dram_bytes / gpu.dram_bandwidth]
    for p, n in flops.items():
        if n > 0:
            times.append(n / gpu.peak(p))
    if int_ops > 0:
        times.append(int_ops / gpu.peak("int"))
    return max(times)


# the share of a refresh a launch runs before its DRAM traffic holds a display frame. On the
# eval labels (dev split, RTX 3080 at 60 Hz), launches of little traffic of their own show
# none up to 4.5 ms (13 launches of 2.1-4.5 ms) and one from 6.1 ms (matern 6.1 ms, expdist
# 6.3 ms, up to 19.6 ms), the second from 26 ms: the first frame comes at ~5.3 ms, 0.32 of
# a refresh, and each next one a refresh later
FIRST_FRAME_SHARE = 0.32


def display_bytes(gpu: GpuProfile, seconds: float) -> float:
    """DRAM bytes ``gpu``'s display engine reads during ``seconds``: a frame once the launch
    runs :data:`FIRST_FRAME_SHARE` of a refresh, then one per refresh (0 for a GPU without a
    display, or a launch of no finite time)."""
    if not gpu.display_frame_bytes or not gpu.display_hz or not math.isfinite(seconds):
        return 0.0
    frames = math.floor(seconds * gpu.display_hz + 1.0 - FIRST_FRAME_SHARE)
    return gpu.display_frame_bytes * frames
