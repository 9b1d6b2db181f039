"""The counter's results: per-thread (OpenMP/OpenACC: per parallel iteration) work of one
kernel (:class:`ThreadCounts`) with its memory references (:class:`Access`) and loops
(:class:`Loop`), and the counter's knobs (:class:`Settings`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Access:
    """One memory reference of the kernel (after common-subexpression merging)."""

    buffer: str  # kernel parameter, global or host variable the pointer designates
    space: str  # "global" | "shared" | "local" | "constant"
    elem: int  # bytes per reference
    kind: str  # "load" | "store" | "atomic"
    weight: float  # executions per thread (loop-invariant loads hoisted)
    distinct: float | None  # distinct elements over the launch (None: no bound known)
    line: int
    index: str = ""  # index text (for explanations)
    interval: tuple[float, float] | None = None  # [lo, hi] of the index, in elements, if known
    unfollowed: bool = False  # the index holds a value the walk could not follow
    gathered: bool = False  # the index is a value read from memory (``x[col[j]]``)
    # elements between the addresses of consecutive threads of a warp (None: not known)
    lane_stride: float | None = None
    # the sequential loops of the thread the index moves with (a per-thread stream)
    streamed: frozenset[str] = frozenset()
    # the index as its symbolic terms and a constant offset (``k + tid + 128``: ("+k +tid", 128))
    offset: tuple[str, float] | None = None
    # consecutive elements the index is known to cover when part of it is read from memory
    # (``k + tid``, ``tid`` in [0, 7]: 8); None: as dense as the threads
    run: float | None = None
    # the index is the probe of a binary search (``a[mid]``) over this many elements, in
    # this many levels (trips): each thread's search takes its own path down the levels
    searched: tuple[float, float] | None = None
    # threads of a block whose index is the same (it does not depend on their ``threadIdx.y``
    # with 32 of them: 32): a per-thread stream they walk together needs one cached line
    sharers: float = 1.0
    # of ``weight``, the executions under a loop with a default trip count or a branch on a
    # value read from memory (``if (v != expected) atomicAdd(&errors, 1)``): a guess
    guessed: float = 0.0
    # an integer atomic add, min, max or bit operation, whose updates of one address by a
    # warp the compiler combines into one
    combined: bool = False
    # the index's value for the average thread (threads and blocks at their mid-point): two
    # accesses of one buffer with the same reach are the difference apart (a stencil's
    # ``u[i + nx * ny]`` is a plane ahead of ``u[i]``); None when not a number
    center: float | None = None
    # bytes between the addresses of consecutive threads of a warp where ``lane_stride``
    # leaves them out: the field ``a[i].x`` of a struct each thread has its own (the
    # struct's size apart); a warp's access touches their lines (``launch_time``), while the
    # buffer's DRAM traffic stays the struct's, whose fields the threads read in turn
    lane_bytes: float | None = None


# trip-count sources of a loop whose step is a run-time value (``i += blockDim.x *
# gridDim.x``): clang does not unroll those (their trip count needs a division), nvcc does
STRIDED = frozenset({"grid-stride"})


def control_passes(trips: float, unroll: float) -> float:
    """How often the loop control of a loop unrolled ``unroll`` times runs in ``trips``
    iterations: once per unrolled group, and every iteration of the remainder, which the
    compiler runs in a rolled loop of its own (two trips of a loop unrolled by 4 are two
    passes of the remainder loop, not half a group)."""
    if unroll <= 1.0:
        return trips
    if not math.isfinite(trips):
        return trips / unroll
    groups = math.floor(trips / unroll)
    return groups + (trips - groups * unroll)


@dataclass(frozen=True)
class Loop:
    line: int
    var: str | None
    trips: float
    source: str  # "constant" | "argument" | "launch" | "default" | "grid-stride" | ...
    weight: float  # executions of the loop statement per thread
    parallel: bool = False  # an OpenMP/OpenACC work-shared loop (a thread dimension)
    unrolled: bool = False
    end_line: int = 0
    # a defaulted trip count: the kernel parameters or host names its bound needs (a
    # ``// roofline: name=...`` hint gives them), and whether it depends on loaded data
    unknown_names: tuple[str, ...] = ()
    data_bound: bool = False
    # in a device function or macro inlined into the kernel: its lines are the callee's
    # (of another file, or a macro's text), its work is booked on the call's line
    inlined: bool = False
    forced: bool = False  # ``#pragma unroll`` asks for all of it
    macro: bool = False  # expanded from a macro: on its use line, with the statement's code


@dataclass(frozen=True)
class ThreadCounts:
    """Work of one thread (CUDA) or one parallel iteration (OpenMP/OpenACC)."""

    flops: dict[str, float]
    int_ops: float
    accesses: tuple[Access, ...]
    loops: tuple[Loop, ...]
    lines: dict[int, tuple[float, float, float, float]]  # fp64, fp32, fp16, int per line
    weights: dict[int, float]  # executions per thread of each line
    threads: float  # threads (CUDA, from the launch) or parallel iterations (OpenMP)
    dims: dict[str, float]  # extents of thread dimensions
    followed: tuple[str, ...]  # device functions and macros followed
    per: str = "thread"
    local_bytes: dict[str, float] = field(default_factory=dict)  # per-thread arrays in memory
    # lines of a branch the known values decide against (``if (d > 0)`` with d = 0): the
    # first and last line of its condition
    dead_lines: dict[int, tuple[int, int]] = field(default_factory=dict)
    # the line from which the walk stopped counting (``Settings.max_nodes``), 0 if it did not
    truncated_at: int = 0
    # the PTX type of the operands of its tensor-core multiply-adds (``flops["tensor"]``)
    tensor_kind: str = ""
    # integer instructions a thread's loop control gains (or loses) where the release build
    # unrolls a loop less than the counter assumes (``ptx_substitution.release_copies``): in
    # ``int_ops``, but off the thread's dependent chain (``launch_time``'s latency)
    release_control_ints: float = 0.0


@dataclass
class Settings:
    """Knobs of the counter (defaults documented in ``roofline.py``)."""

    default_trips: float = 16.0  # a loop whose trip count cannot be determined
    default_while: float = 16.0  # a while/do loop or range-for
    nested_default: float = 4.0  # each enclosing unknown-trip loop divides the default by this
    default_branch: float = 0.5  # a branch whose condition cannot be evaluated
    int_address: float = 1.0  # integer instructions per distinct global/shared access
    unroll_default: float = 4.0  # nvcc unrolls loops of unknown trip count by 4
    # ... and a grid- or block-stride loop (a run-time step) too; clang leaves those rolled
    unroll_strided: bool = True
    unroll_full_max: float = 32.0  # constant-trip loops up to this are unrolled completely
    # each entry of a loop unrolled with a run-time count splits off its remainder
    # (``costs.REMAINDER_SETUP``): clang's OpenMP builds
    split_remainder: bool = False
    int_entry: float = 2.0  # kernel prologue (global index, bound check)
    omp_iteration_ints: float = 15.0  # OpenMP work-shared loop: runtime loop control
    # iterations per thread of an offloaded loop of unknown size the launch is not sized to
    capped_trips: float = 8.0
    prec_sqrt: bool = True  # sqrtf is IEEE-rounded (nvcc's default), else the approximation
    max_inline_depth: int = 6
    inline_full_calls: int = 8  # calls of one function walked in full before reusing its cost
    # syntax nodes walked (macros expanded, calls inlined) before the rest of a kernel is
    # left uncounted: a 400-line stencil of array macros (sw4ck) walks ~130k in ~0.4 s
    max_nodes: int = 250_000
