"""The terms behind a verdict, as data: what the work is, the loops that dominate it, the
working set against L2, and remarks. Line references are fields, so a verdict that moves with
its kernel moves them (:func:`moved_term`); words are made only when a term is shown
(``present.explanations``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal


@dataclass(frozen=True)
class WorkTerm:
    """The work of one thread (CUDA) or one iteration of the offloaded loop nest."""

    per: Literal["thread", "iteration"]
    flops: tuple[tuple[str, float], ...]  # (precision, FLOP), those of half a FLOP or more
    int_ops: float


@dataclass(frozen=True)
class LoopTerm:
    """One of the loops that weigh most, with its work per iteration when known."""

    var: str | None
    line: int  # 1-based line of the loop statement
    trips: float
    trip_source: str  # where the trip count came from: "constant", "argument", "default"...
    # FLOP per iteration by precision ("fp64", "fp32", "fp16"), int ops and bytes referenced
    # per iteration; None when the loop's body could not be measured
    per_iteration: tuple[tuple[tuple[str, float], ...], float, float] | None = None


@dataclass(frozen=True)
class MemoryTerm:
    """The launch's working set against L2, the DRAM bytes the model keeps of every byte the
    threads reference, and those the display engine reads while the launch runs
    (``display_bytes`` over its ``seconds``; 0 on a GPU without a display)."""

    footprint: float
    resident: bool  # the working set fits in L2
    l2_bytes: float
    dram_bytes: float
    references: float
    local_bytes: float = 0.0  # of the DRAM bytes, those of per-thread arrays in local memory
    search_bytes: float = 0.0  # ... those of binary searches' probes that miss L2
    code_bytes: float = 0.0  # ... the kernel's compiled code, read once
    # ... a stencil's layers read again: those between two uses of an element exceed the
    # share of L2 that keeps them (``memory._layer_misses``)
    layer_bytes: float = 0.0
    layer_share: float = 0.5  # the share of L2 that keeps them
    display_bytes: float = 0.0
    seconds: float = 0.0
    contended: bool = False  # the time is that of atomic updates of one address in turn
    # host memory mapped into the device (zero-copy): the buffers, and the bytes their
    # accesses move over the host link instead of DRAM (not in ``dram_bytes``)
    host_buffers: tuple[str, ...] = ()
    host_bytes: float = 0.0


@dataclass(frozen=True)
class NoteTerm:
    """A remark in words, without line references (e.g. where the counts came from)."""

    text: str


# ``// roofline: trips=64`` on a loop's first line or just above it: that loop's trip count,
# not the value of a name
TRIPS_HINT = "trips"


@dataclass(frozen=True)
class AssumptionTerm:
    """A number the estimate assumed because the source did not give it, and what would
    settle it: the launch size (``kind="launch"``: ``value`` threads, ``line`` 0), a loop's
    trip count (``kind="trips"``: ``value`` trips of the loop on ``line`` over ``var``), or
    that the statements from ``line`` on cost nothing (``kind="rest"``, ``why="too long"``:
    a kernel too long to walk in full, ``Settings.max_nodes``).

    ``names``: the values a ``// roofline: name=...`` hint (or ``--args``) would supply (a
    loop without: its own ``// roofline: trips=...`` settles it); ``why``: ``"no launch"`` (no
    launch site found), ``"unknown values"`` (the launch or the bound uses values not found),
    ``"input"`` (... values the program sets at run time: read from a file or a stream, or
    by a call given their address; ``read`` names those host variables), ``"data"`` (a bound
    read from memory), ``"while"`` (a loop without a counted bound)."""

    kind: Literal["launch", "trips", "rest"]
    value: float
    why: Literal["no launch", "unknown values", "input", "data", "while", "too long"]
    names: tuple[str, ...] = ()
    line: int = 0
    var: str | None = None
    share: float = 1.0  # of the thread's work, the share that rests on the assumption
    read: tuple[str, ...] = ()  # the host variables set at run time it comes from ("input")


@dataclass(frozen=True)
class TypeTerm:
    """A template type parameter that no launch, argument or instantiation fixed, or a type
    no declaration in view defines (``kind="undeclared"``: ``dfloat``, given by a build
    flag): the estimate took it as ``assumed`` (``float``)."""

    param: str
    assumed: str
    kind: Literal["template", "undeclared"] = "template"


@dataclass(frozen=True)
class QueryTerm:
    """A runtime query whose answer the estimate took from the GPU's profile, where the
    machine's may differ: the occupancy API (``call`` ``cudaOccupancy...``: the SM's thread
    and block limits, not the kernel's registers or shared memory) or the number of GPUs
    (``...GetDeviceCount``: one, the verdict's)."""

    call: str


Term = WorkTerm | LoopTerm | MemoryTerm | NoteTerm | AssumptionTerm | TypeTerm | QueryTerm


def term_lines(term: Term) -> tuple[int, ...]:
    """The source lines ``term`` refers to."""
    if isinstance(term, LoopTerm) or (isinstance(term, AssumptionTerm) and term.line):
        return (term.line,)
    return ()


def moved_term(term: Term, delta: int) -> Term:
    """``term`` of a kernel moved by ``delta`` lines."""
    if isinstance(term, LoopTerm) and delta:
        return replace(term, line=term.line + delta)
    if isinstance(term, AssumptionTerm) and term.line and delta:
        return replace(term, line=term.line + delta)
    return term
