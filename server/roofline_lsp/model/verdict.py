"""Result types shared by every verdict source (static estimator, LLM, measured profile)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from roofline_lsp.model.terms import Term

Bound = Literal["compute", "bandwidth", "unknown"]
VerdictSource = Literal["static", "llm", "profile"]
# Precisions of the roofline: floating point by width, and integer instructions. A kernel
# with tensor-core multiply-adds has one more, "tensor", against its operands' tensor-core
# peak (``GpuProfile.tensor_peak``).
PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "fp16", "int")


@dataclass(frozen=True)
class LineInstructions:
    """What the compiled code (PTX) of one source line holds, per execution, that advice
    confirms its rules on: long divisions or remainders, float-to-double conversions, fp64
    FLOPs and global-memory loads."""

    divisions: int = 0
    to_fp64: int = 0
    fp64_flops: int = 0
    global_loads: int = 0


@dataclass(frozen=True)
class Counts:
    """Work of one thread (CUDA) or one iteration of the offloaded loop nest (OpenMP/OpenACC)."""

    flops: dict[str, float]  # keyed by "fp64", "fp32", "fp16" (and "tensor")
    int_ops: float
    bytes_loaded: float  # DRAM bytes after the reuse and cache model
    bytes_stored: float
    # DRAM bytes the display engine reads during the launch, per thread (a profiler counts
    # them for the kernel on a card driving a display; ``estimate/launch_time.py``)
    display_bytes: float = 0.0
    per: Literal["thread", "iteration"] = "thread"
    threads: float | None = None  # threads or iterations per launch when known
    counts_from: Literal["source", "ptx"] = "source"
    ptx_flops_only: bool = False  # from PTX the FLOPs only, the integer ops from the source
    # where the launch size came from: the caller's inputs ("given"), the source ("source"),
    # assumed to cover the kernel's bounds check exactly ("guard"), or assumed ("assumed")
    launch_from: Literal["given", "source", "guard", "assumed"] = "source"
    # per source line, by its offset from the kernel's first line (so counts move with their
    # kernel): the operations booked on it per thread (fp64, fp32, fp16 FLOP, int ops) and
    # how many times it runs per thread. What advice weighs a fix on one line with; not
    # part of the verdict (not compared)
    line_ops: dict[int, tuple[float, float, float, float]] = field(
        default_factory=dict, compare=False, repr=False
    )
    line_runs: dict[int, float] = field(default_factory=dict, compare=False, repr=False)
    # with PTX counts, each line's compiled instructions (same keys); empty otherwise
    line_ptx: dict[int, LineInstructions] = field(default_factory=dict, compare=False, repr=False)
    # per buffer read or written with consecutive threads more than an element apart: the
    # DRAM bytes per thread its partly used sectors add (0: neighbouring accesses use them)
    sector_bytes: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    @property
    def dram_bytes(self) -> float:
        return self.bytes_loaded + self.bytes_stored + self.display_bytes

    def ops(self, precision: str) -> float:
        return self.int_ops if precision == "int" else self.flops.get(precision, 0.0)


@dataclass(frozen=True)
class Suggestion:
    line: int  # 1-based, within the kernel
    message: str


@dataclass(frozen=True)
class Verdict:
    kernel: str
    gpu: str  # canonical GPU profile name
    bound: Bound
    source: VerdictSource
    confidence: float  # 0..1
    ai: dict[str, float | None]  # arithmetic intensity per precision (ops per DRAM byte)
    ridge: dict[str, float]  # the GPU's ridge point per precision
    deciding: str | None  # the precision that decides the verdict
    # words that came with the verdict from outside the estimator: the LLM's rationale, the
    # measured profile's summary, why the estimator gave up; "" for an estimate, whose
    # explanation is made from its terms (``present.explanations``)
    rationale: str = ""
    terms: tuple[Term, ...] = ()  # what the verdict rests on, as data
    counts: Counts | None = None
    suggestions: tuple[Suggestion, ...] = ()
    extra: dict[str, object] = field(default_factory=dict, compare=False)

    @property
    def margin(self) -> float | None:
        """How far the deciding AI is from its ridge point (ratio, >1 means above the ridge)."""
        if self.deciding is None:
            return None
        a = self.ai.get(self.deciding)
        r = self.ridge.get(self.deciding)
        if a is None or not r:
            return None
        return a / r


def precisions_of(v: Verdict) -> tuple[str, ...]:
    """The roofline precisions of verdict ``v``: ``PRECISIONS`` and any other it has a ridge
    for (``tensor``)."""
    return (*PRECISIONS, *(p for p in v.ridge if p not in PRECISIONS))


def classify_bound(
    ai: dict[str, float | None], ridge: dict[str, float]
) -> tuple[Bound, str | None]:
    """The roofline rule: compute-bound iff some precision's AI reaches its ridge point.

    Returns the bound and the deciding precision: the one furthest above its ridge when
    compute-bound, the one closest to its ridge when bandwidth-bound.
    """
    ratios = {p: a / ridge[p] for p, a in ai.items() if a is not None and ridge.get(p) and a > 0}
    if not ratios:
        return "bandwidth", None
    best = max(ratios, key=lambda p: ratios[p])
    return ("compute" if ratios[best] >= 1.0 else "bandwidth"), best
