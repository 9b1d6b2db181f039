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
    """The launch's working set against L2, and the DRAM bytes the model keeps of every
    byte the threads reference."""

    footprint: float
    resident: bool  # the working set fits in L2
    l2_bytes: float
    dram_bytes: float
    references: float


@dataclass(frozen=True)
class NoteTerm:
    """A remark in words, without line references (e.g. where the counts came from)."""

    text: str


Term = WorkTerm | LoopTerm | MemoryTerm | NoteTerm


def term_lines(term: Term) -> tuple[int, ...]:
    """The source lines ``term`` refers to."""
    return (term.line,) if isinstance(term, LoopTerm) else ()


def moved_term(term: Term, delta: int) -> Term:
    """``term`` of a kernel moved by ``delta`` lines."""
    if isinstance(term, LoopTerm) and delta:
        return replace(term, line=term.line + delta)
    return term
