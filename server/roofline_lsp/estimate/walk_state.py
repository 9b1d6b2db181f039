"""The counter's state and bookkeeping, shared by the walker layers.

The walker's mutable state is grouped by what it describes: the fixed inputs of the walk
(:class:`WalkInputs`), what has been counted so far (:class:`Tally`), where the walk is
(:class:`Cursor`: the weight, source line, scopes, enclosing loops), the loop dimensions
(:class:`Dimensions`), the OpenMP/OpenACC parallelism (:class:`Parallelism`) and the
device-function cost summaries (:class:`InlineCache`).

The walker itself is split by concern into a chain of classes, one module each
(``walk_branches`` <- ``walk_references`` <- ``walk_expressions`` <- ``walk_groups`` <-
``walk_calls`` <- ``walk_loops`` <- ``walk_statements`` <- ``counting.ThreadCounter``);
:class:`WalkerBase` declares the few methods a lower layer calls on a higher one.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from tree_sitter import Node

from roofline_lsp.estimate import costs
from roofline_lsp.estimate.thread_counts import Loop, Settings
from roofline_lsp.estimate.value_domain import (
    BLOCK_SET,
    DATA,
    THREAD_SET,
    Val,
    Var,
    carried,
    converted,
)
from roofline_lsp.syntax.datatypes import PRECISION_OF_KIND, DataType, parse_type
from roofline_lsp.syntax.declarations import (
    StructTemplate,
    TemplateInstance,
    instance_fields,
    template_instance,
)
from roofline_lsp.syntax.expr import NAME, text


class FunctionLookup(Protocol):
    def get(self, name: str) -> Node | None: ...


Macros = dict[str, tuple[tuple[str, ...] | None, str]]
# ``#include "x.h"`` inside a kernel body: (header text, including file) -> (its path, its parse)
IncludeResolver = Callable[[str, str], tuple[str, Node] | None]
AccessKey = tuple[str, str, str, int]  # buffer, kind, index text, line


# dependence on a value the walk could not follow (an unknown name, the fields of an object
# built by a constructor): always with DATA, and not assumed to repeat across accesses
UNFOLLOWED = "?unfollowed"

# the scope name holding a template parameter pack's length (``...I`` for ``int... I``)
PACK = "..."


@dataclass
class AccessRecord:
    """An access being counted (its weight grows as identical accesses are merged)."""

    buffer: str
    space: str
    elem: int
    kind: str
    weight: float
    distinct: float | None
    line: int
    index: str
    interval: tuple[float, float] | None = None  # the index's [lo, hi] when known
    unfollowed: bool = False  # the index holds a value the walk could not follow
    gathered: bool = False  # the index is a value read from memory (``x[col[j]]``)
    # elements between the addresses of consecutive threads of a warp (None: not known),
    # and the sequential loops of the thread the index moves with (a per-thread stream)
    lane_stride: float | None = None
    streamed: frozenset[str] = frozenset()
    # the index as its symbolic terms and a constant offset (``k + tid + 128``: ("+k +tid", 128))
    offset: tuple[str, float] | None = None
    run: float | None = None  # consecutive elements the index covers (``dense_run``)
    # (elements, levels) of the binary search whose probe the index is
    searched: tuple[float, float] | None = None
    sharers: float = 1.0  # threads of a block with the same index (``Access.sharers``)
    guessed: float = 0.0  # of the weight, what a default trip count or branch share gave
    combined: bool = False  # ``Access.combined``
    center: float | None = None  # ``Access.center``
    lane_bytes: float | None = None  # ``Access.lane_bytes``


# per-call costs of an inlined function: ops, accesses (key, record, weight), its value
InlineSummary = tuple[list[float], list[tuple[AccessKey, AccessRecord, float]], Val]


@dataclass(frozen=True)
class WalkInputs:
    """What the walk is given: the program around the kernel and the launch."""

    functions: FunctionLookup
    macros: Macros
    lookup_host: Callable[[str], float | None]
    aliases: dict[str, str]
    structs: dict[str, dict[str, str]]  # struct name -> field name -> type
    struct_sizes: dict[str, int]  # struct name -> bytes (array fields counted whole)
    globals: dict[str, Var]
    settings: Settings
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    offload: bool
    constants: frozenset[str]
    include: IncludeResolver | None = None
    file: str = ""  # the kernel's file (``#include`` paths are relative to it)
    # the template parameters around the kernel (``dim`` of ``template <int dim>``): a
    # value a hint can give, not one read from memory
    template_names: frozenset[str] = frozenset()
    # texture references by name -> their declared type (``texture<float4, 2>``)
    texture_types: Mapping[str, str] = field(default_factory=dict)
    # an offload region's variables whose memory it writes (their host values do not hold)
    written: frozenset[str] = frozenset()
    # a CUDA kernel's pointer parameters whose memory the host filled from values it knows
    # (``cudaMemcpy(d_p, &p, ...)``): their reads are those values, as an offload region's
    copied: frozenset[str] = frozenset()
    # struct templates by name: parameter names, static members (``instantiate``)
    struct_templates: Mapping[str, StructTemplate] = field(default_factory=dict)
    # member types of each struct (template) and explicit specialization
    # (``IOType<uint8_t, 16>``: ``{"Type": "uint4"}``), for ``template_instance``
    member_types: Mapping[str, dict[str, str]] = field(default_factory=dict)
    # locals declared const with a number (``const double dt = 0.5``): compile-time constants
    literal_constants: frozenset[str] = frozenset()
    # the floating type of file-scope constants (``const double dt = 0.1``: double)
    constant_types: Mapping[str, DataType] = field(default_factory=dict)
    # elements the host allocated or mapped per buffer (``cudaMalloc(&d_a, n * 4)``: n)
    extents: Mapping[str, float] = field(default_factory=dict)
    # each struct's array members and their element counts (``Declarations.struct_arrays``)
    struct_arrays: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # a kernel's callable parameters the launch passes a lambda for (``for_each<<<g,
    # b>>>(n, [=] __device__(int i) { y[i] = a * x[i]; })``): the lambda, parsed from the
    # launch's text; what it captures reads as the host's names
    passed_lambdas: Mapping[str, Node] = field(default_factory=dict)
    # the host's declared types of the names those lambdas use (``float *a``)
    captured_types: Mapping[str, str] = field(default_factory=dict)


def instantiate(
    var: Var,
    type_text: str,
    structs: dict[str, dict[str, str]],
    templates: Mapping[str, StructTemplate],
) -> None:
    """A variable of a struct template's instantiation (``Param<float> p``): its fields'
    types with the arguments in (``p.src`` is a ``float *``), as ``structs`` entry
    ``Param<float>``, which ``var`` names (``var.tname``)."""
    if "<" not in type_text:
        return  # no template's arguments (most declarations: no pattern to match)
    instance = instance_fields(type_text, structs, templates)
    if instance is not None:
        structs.setdefault(*instance)
        var.tname = instance[0]


@dataclass
class Tally:
    """What has been counted: weighted ops, per-line costs and weights, accesses, loops."""

    ops: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0])  # fp64 fp32 fp16 int
    lines: dict[int, list[float]] = field(default_factory=dict)
    weights: dict[int, float] = field(default_factory=dict)
    accesses: dict[AccessKey, AccessRecord] = field(default_factory=dict)
    loop_records: list[Loop] = field(default_factory=list)
    followed: list[str] = field(default_factory=list)
    local_sizes: dict[str, float] = field(default_factory=dict)  # per-thread arrays: bytes
    local_dynamic: set[str] = field(default_factory=set)  # ... indexed dynamically somewhere
    inferred: list[str] = field(default_factory=list)  # parameters sized from the launch
    # names an index multiplies by a constant: whether each is an unknown value the same for
    # every thread (a structure of arrays' component stride, ``nijk * 2``)
    strides: dict[str, bool] = field(default_factory=dict)
    dead_lines: dict[int, tuple[int, int]] = field(default_factory=dict)  # ThreadCounts'
    truncated_at: int = 0  # ThreadCounts'
    tensor: float = 0.0  # tensor-core FLOPs (``tensor_ops``), weighted
    tensor_kind: str = ""  # ... and the PTX type of their operands


@dataclass
class Frame:
    returns: list[Val] = field(default_factory=list)
    # how the caller uses a returned reference: ``domain.f(i) = v`` stores to the element
    # ``return m_f[i];`` names ("store"), a read loads it ("load")
    kind: str = "load"
    # the pure values this call has computed, with the blocks that computed them
    # (``WalkerBase.computed_before``)
    computed: dict[tuple[object, ...], set[int]] = field(default_factory=dict)
    # where the object a method runs on lives ("local": the thread's own variable); an
    # address the method returns that designates no buffer is inside that object
    # (``return reinterpret_cast<uint4 *>(val.data);``). None: not a method, or not known
    own_space: str | None = None
    # the struct template instance that object is (its member types and constants)
    instance: TemplateInstance | None = None


@dataclass
class Cursor:
    """Where the walk is: the current statement's weight (executions per thread), its
    source line, the scopes, the enclosing loops and inlined calls."""

    w: float = 1.0
    line: int = 0
    line_base: int | None = None  # inside macro expansions: the call's line
    macro_line: int | None = None  # ... of a macro's expansion (whose parse has no lines)
    scopes: list[dict[str, Var]] = field(default_factory=lambda: [{}])
    # loop stack: (dim id, trips, parallel)
    loops: list[tuple[str, float, bool]] = field(default_factory=list)
    # ... and the buffers each stores elements of (their loads vary with the loop)
    loop_stores: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    seen: list[set[tuple[str, str, str]]] = field(default_factory=lambda: [set()])
    frames: list[Frame] = field(default_factory=lambda: [Frame()])
    call_stack: list[str] = field(default_factory=list)
    unknown_depth: int = 0  # enclosing loops whose trip count is a default
    # the ids of the ``if (test) break;`` statements that open loops counted by that test
    # (``for (;;) { if (j >= m) break; ... }``): the count includes them, no branch to weigh
    counted_exits: set[int] = field(default_factory=set)
    guessed_depth: int = 0  # enclosing branches on a value read from memory
    combining: bool = False  # walking a combinable atomic's target (``Access.combined``)
    nodes: int = 0
    pending_unroll: float | None = None
    # an ``omp``/``acc atomic`` pragma applies to the next statement; ``atomic``: walking it
    pending_atomic: bool = False
    atomic: bool = False
    include_stack: list[str] = field(default_factory=list)  # headers being walked
    # the expression whose value goes straight into a float (``ExpressionWalker.stored_as``)
    narrowed: frozenset[int] = frozenset()
    # an index ``p + c`` being walked: its constant is the memory operand's immediate
    # (``[R + 4]``), no add of its own
    offset_index: int | None = None
    # in a branch taken by one lane value (``if (iz == 0)`` with iz moving across lanes):
    # the threads that take it are far apart, each access its own sector
    pinned_lane: bool = False
    # assignments per variable name: a pure value computed before one is computed again
    versions: dict[str, int] = field(default_factory=dict)
    # the element of a pack expansion being walked (``I=2``): its accesses are apart from
    # the other elements' (``x[i + I]``)
    pack_element: str = ""

    @property
    def guessing(self) -> bool:
        """Whether how often the statement runs is a guess: inside a loop of default trips
        or a branch on data read from memory (``Access.guessed``)."""
        return bool(self.unknown_depth or self.guessed_depth)


@dataclass
class Dimensions:
    """Extents of the thread dimensions and of the loop dimensions met so far."""

    dims: dict[str, float]
    loop_counter: int = 0
    unrolled_dims: set[str] = field(default_factory=set)
    # grid-stride loops: a thread's next trip is the whole launch further on, so it never
    # comes back to a sector it touched (not a per-thread stream)
    strided_dims: set[str] = field(default_factory=set)
    # the loops that are binary searches (``mid = (lo + hi) / 2``): the elements searched
    # and the trips (its levels)
    searches: dict[str, tuple[float, float]] = field(default_factory=dict)


def teams_only(words: set[str]) -> bool:
    """An OpenMP pragma's words share a loop among teams only (``teams distribute`` without
    ``parallel for``): a nested ``parallel for`` shares each team's iterations."""
    return "distribute" in words and not words & {"for", "loop"}


@dataclass
class Parallelism:
    """OpenMP/OpenACC: the team shape, pending constructs and parallel units of the region."""

    teams: float
    team_threads: float
    # the dimension consecutive threads of a warp differ in: threadIdx.x, or the counter of
    # the work-shared loop being walked (its iterations go to consecutive threads)
    lane: str = "tx"
    team_level: bool = False  # inside an OpenMP teams region, outside parallel regions
    pending_region: str | None = None  # "parallel" | "teams" | "single"
    pending_parallel: int = 0  # collapse levels of a work-shared loop pragma
    pending_distribute: bool = False
    # ``teams distribute`` without ``parallel for``: the loop's iterations go to the teams
    # (their threads share a nested ``parallel for``), one team each when its bound is unknown
    pending_teams_only: bool = False
    # types of the region's ``reduction`` variables: each iteration of its work-shared loop
    # also folds them into the team's partial results (a warp shuffle tree)
    reductions: tuple[DataType, ...] = ()
    parallel_dims: list[str] = field(default_factory=list)
    # the loops whose iterations go to the teams only: their counters are block indices
    team_dims: set[str] = field(default_factory=set)
    # OpenMP: iterations assumed for a work-shared loop whose bound is unknown (the runtime
    # sizes the launch to the loop: teams x threads; ``roofline._parallel_default``)
    parallel_default: float | None = None
    parallel_assumed: bool = False  # parallel_default is a guess, not the launch's size
    parallel_product: float = 1.0
    max_parallel: float = 1.0  # parallel units of the region (iterations or threads)
    team_mult: float = 1.0  # the teams multiplier in force (a distribute loop removes it)
    # the threads multiplier of the enclosing ``parallel`` region: a work-shared ``for`` in
    # it divides its iterations among those threads (``target parallel`` + ``omp for``)
    thread_mult: float = 1.0
    auto_loops: bool = False  # OpenACC kernels region: the compiler shares outermost loops


@dataclass
class InlineCache:
    """Calls per device function and per-signature cost summaries."""

    inline_calls: dict[str, int] = field(default_factory=dict)
    summaries: dict[tuple[object, ...], InlineSummary] = field(default_factory=dict)
    call_operators: dict[int, dict[str, Node]] = field(default_factory=dict)  # by tree root
    # a block's lambdas by name (``walk_calls._lambda_named``), by the block's node id
    lambdas: dict[int, dict[str, list[tuple[int, Node]]]] = field(default_factory=dict)


class VarState(NamedTuple):
    """A variable in scope at one point of the walk: the object, its name, what it holds
    then (value, dependences, lane slope, range) and its assignments so far."""

    var: Var
    name: str
    val: float | None
    deps: frozenset[str]
    slope: float | None
    rng: tuple[float, float] | None
    version: int

    @classmethod
    def of(cls, var: Var, name: str, version: int) -> VarState:
        """What ``var`` holds now."""
        return cls(var, name, var.val, var.deps, var.slope, var.rng, version)


class WalkerBase:
    """State and bookkeeping of the walk (booking costs on lines, scopes, types)."""

    def __init__(
        self,
        *,
        functions: FunctionLookup,
        macros: Macros,
        lookup: Callable[[str], float | None],
        aliases: dict[str, str],
        structs: dict[str, dict[str, str]],
        struct_sizes: dict[str, int],
        globals_: dict[str, Var],
        settings: Settings,
        dims: dict[str, float],
        block: tuple[int, int, int],
        grid: tuple[int, int, int],
        offload: bool = False,
        constants: frozenset[str] = frozenset(),
        include: IncludeResolver | None = None,
        file: str = "",
    ) -> None:
        self.inputs = WalkInputs(
            functions=functions,
            macros=macros,
            lookup_host=lookup,
            aliases=aliases,
            structs=structs,
            struct_sizes=struct_sizes,
            globals=globals_,
            settings=settings,
            block=block,
            grid=grid,
            offload=offload,
            constants=constants,
            include=include,
            file=file,
        )
        self.type_cache: dict[str, DataType] = {}
        # type names the walk has bound (a kernel's local ``typedef TxN_t<T, 4> Vec;``, the
        # member types of the struct template instance a method runs on), over ``aliases``
        self.local_types: dict[str, str] = {}
        self.local_type_cache: dict[str, DataType] = {}
        self.tally = Tally()
        self.cursor = Cursor()
        self.dimensions = Dimensions(dict(dims))
        self.par = Parallelism(teams=float(grid[0]), team_threads=float(block[0]))
        self.inlining = InlineCache()

    # -- implemented by the walker layers above ----------------------------------------------
    def expr(self, node: Node) -> Val:
        raise NotImplementedError

    def identifier(self, name: str, node: Node) -> Val:
        raise NotImplementedError

    def call(self, node: Node, kind: str = "load") -> Val:
        raise NotImplementedError

    def in_macro(self, name: str, tree: Node, expression: bool) -> Val:
        raise NotImplementedError

    def through_pointer(self, ptr: Node, kind: str) -> Val:
        raise NotImplementedError

    def overloaded(self, op: str, args: list[Node], vals: list[Val]) -> Val | None:
        raise NotImplementedError

    def subscript_operator(self, node: Node, kind: str) -> Val | None:
        raise NotImplementedError

    def stmt(self, node: Node) -> float:
        raise NotImplementedError

    def declaration(self, node: Node) -> None:
        raise NotImplementedError

    # -- bookkeeping ------------------------------------------------------------------------
    def set_line(self, node: Node) -> None:
        if self.cursor.line_base is None:
            self.cursor.line = node.start_point.row + 1
        if (
            self.cursor.line not in self.tally.weights
            or self.tally.weights[self.cursor.line] < self.cursor.w
        ):
            self.tally.weights[self.cursor.line] = self.cursor.w

    def add(self, idx: int, n: float, w: float | None = None) -> None:
        if n == 0:
            return
        v = n * (self.cursor.w if w is None else w)
        self.tally.ops[idx] += v
        row = self.tally.lines.get(self.cursor.line)
        if row is None:
            row = self.tally.lines[self.cursor.line] = [0.0, 0.0, 0.0, 0.0]
        row[idx] += v

    def add_flop(self, t: DataType, n: float, w: float | None = None) -> None:
        p = PRECISION_OF_KIND.get(t.kind)
        if p == "fp64":
            self.add(0, n * t.lanes, w)
        elif p == "fp32":
            self.add(1, n * t.lanes, w)
        elif p == "fp16":
            self.add(2, n * t.lanes, w)

    def add_int(self, n: float, w: float | None = None) -> None:
        self.add(3, n, w)

    def add_math(self, t: DataType, name: str, w: float | None = None, side: bool = True) -> None:
        """A library function or an IEEE division (``name`` ``"div"``) in ``t``'s
        precision: its FLOPs and integer instructions (``costs.MATH_*``), and the FP32 FLOPs an
        fp64 sequence runs on the side (not a reciprocal ``1.0 / x``: ``side`` False)."""
        fp64 = t.kind == "f64"
        if name == "sqrt" and not fp64 and not self.inputs.settings.prec_sqrt:
            f, i = costs.SQRT_APPROX_F32
        else:
            f, i = (costs.MATH_F64 if fp64 else costs.MATH_F32)[name]
        self.add_flop(t, f, w)
        self.add_int(i, w)
        if fp64 and side:
            self.add(1, costs.F64_FP32_SIDE.get(name, 0.0) * t.lanes, w)

    def hoisted_weight(self, deps: frozenset[str]) -> float:
        """Weight of a computation depending on ``deps``: loop-invariant work is hoisted out
        of the sequential loops it does not depend on (not out of parallel loops). A loop
        unrolled completely is no barrier: each copy of its body sees a constant index, and
        the copies' invariant work leaves the loops around it."""
        w = self.cursor.w
        for dim, t, parallel in reversed(self.cursor.loops):
            if parallel:
                break
            if dim in deps or carried(dim) in deps:
                if dim in self.dimensions.unrolled_dims:
                    continue
                break
            if t > 0:
                w /= t
        return w

    # -- scopes -----------------------------------------------------------------------------
    def var(self, name: str) -> Var | None:
        for scope in reversed(self.cursor.scopes):
            v = scope.get(name)
            if v is not None:
                return v
        return self.inputs.globals.get(name)

    def names_in_scope(self) -> frozenset[str]:
        """Every name :meth:`var` can find."""
        return frozenset(self.inputs.globals).union(*self.cursor.scopes)

    def declare(self, name: str, v: Var) -> None:
        self.cursor.scopes[-1][name] = v
        self.assigned(name)

    def values(self) -> dict[int, VarState]:
        """What the variables in scope hold now (to join the arms of a branch)."""
        versions = self.cursor.versions
        return {
            id(v): VarState.of(v, name, versions.get(name, 0))
            for scope in self.cursor.scopes
            for name, v in scope.items()
        }

    def join_values(
        self, before: dict[int, VarState], taken: dict[int, VarState], share: float
    ) -> None:
        """After an ``if``: each variable's value joined over its two paths, the arm walked
        first (``taken``: the variables as it left them, with probability ``share``) and
        the other arm, or no arm (``before`` the test). A value only one path knows is
        unknown: ``x = theta_S`` in the ``else`` of ``x = f(psi[i])`` does not make x the
        constant (a ``sqrt(x)`` after it is not folded away); two numbers give their mean
        (``val`` is exact or mean)."""
        for key, first in taken.items():
            v = first.var
            if key not in before or v.space == "shared":
                # first assigned in the arm: no value on the other path; a ``__shared__``
                # value one thread sets (``if (lid == 0) k = ...``) is every thread's
                continue
            # the other path: as the second arm left the variable, or as it was before the test
            reassigned = self.cursor.versions.get(first.name, 0) != first.version
            other = VarState.of(v, first.name, first.version) if reassigned else before[key]
            if first.val == other.val:
                v.val = first.val
            elif first.val is None or other.val is None:
                v.val = None
            else:
                v.val = share * first.val + (1 - share) * other.val
            # what it varies with, how it moves across a warp's lanes and its range: those of
            # the path most executions take (a clamp at the edge, ``if (k > w - 1) k = w -
            # 1``, leaves k the thread's own index for all threads but the last)
            major = first if share >= 0.5 else other
            v.deps, v.slope, v.rng = major.deps, major.slope, major.rng

    def assigned(self, name: str) -> None:
        """``name`` holds a new value: what was computed from the old one is stale."""
        self.cursor.versions[name] = self.cursor.versions.get(name, 0) + 1

    def computed_before(self, node: Node, kind: str) -> bool:
        """Whether the compiler already has the value of ``node`` (an expensive pure
        operation: a math function's call, a floating-point division, ``kind``): the same
        text computed before in this call by a block that holds ``node`` (it dominates it:
        not in a branch or loop body ``node`` is not in), reading only variables (no
        memory) none of which was assigned since. Common-subexpression elimination:
        cooling's ``pow((T/1e3),(-0.2))``, four times in one block, is one call. Records it
        when not."""
        if not _pure(node):
            return False
        blocks = []
        up = node.parent
        while up is not None:
            if up.type in _BLOCKS:
                blocks.append(up.id)
            up = up.parent
        if not blocks:
            return False
        body = text(node)
        state = []
        for name in dict.fromkeys(NAME.findall(body)):
            v = self.var(name)
            state.append((self.cursor.versions.get(name, 0), None if v is None else v.val))
        key = (kind, " ".join(body.split()), tuple(state))
        done = self.cursor.frames[-1].computed.setdefault(key, set())
        if done.intersection(blocks):
            return True
        done.add(blocks[0])
        return False

    def uniform_before(self, node: Node) -> bool:
        """Whether the value of ``node``, the same for every thread and loop trip (integer
        arithmetic on kernel parameters: ``ni * nj`` of a macro expanded at every access),
        was computed before in this call with the same variables: the compiler computes
        it once, wherever it appears (loop-invariant code motion and common-subexpression
        elimination). Records it when not."""
        body = " ".join(text(node).split())
        names = dict.fromkeys(NAME.findall(body))
        key = ("uniform", body, tuple(self.cursor.versions.get(n, 0) for n in names))
        computed = self.cursor.frames[-1].computed
        if key in computed:
            return True
        computed[key] = set()
        return False

    def value_of(self, name: str) -> float | None:
        v = self.var(name)
        if v is not None:
            return v.val if not v.deps else None
        return self.inputs.lookup_host(name)

    def extent(self, deps: frozenset[str]) -> float | None:
        """Distinct values a quantity depending on ``deps`` takes over the launch."""
        if DATA in deps:
            return None
        return self.reach(deps)

    def each_update(self) -> frozenset[str]:
        """The dimensions an atomic update's old value varies over: every thread and trip
        that runs it sees the address as the update before left it (``pos =
        atomicAdd(&count, 1)``, ``#pragma omp atomic capture``: a slot of its own)."""
        return (
            frozenset(
                d for d in self.dimensions.dims if d in THREAD_SET or d in self.par.parallel_dims
            )
            | frozenset(d for d, _n, _par in self.cursor.loops)
            | {DATA}
        )

    def reach(self, deps: frozenset[str]) -> float | None:
        """At most how many distinct values a quantity depending on ``deps`` takes over the
        launch: the product of the thread and loop dimensions it depends on. A value loaded
        from memory depends on its address's dimensions (memory does not change under it), so
        that product bounds a data-dependent index too; only a value the walk could not
        follow has no bound (None)."""
        if UNFOLLOWED in deps:
            return None
        e = 1.0
        for d in deps:
            e *= self.dimensions.dims.get(d, 1.0)
        return e

    # -- types ------------------------------------------------------------------------------
    def type_of(self, type_text: str) -> DataType:
        if self.local_types and any(w in self.local_types for w in NAME.findall(type_text)):
            t = self.local_type_cache.get(type_text)
            if t is None:
                scoped = ChainMap(self.local_types, self.inputs.aliases)
                t = self.local_type_cache[type_text] = parse_type(type_text, scoped)
            return t
        t = self.type_cache.get(type_text)
        if t is None:
            t = self.type_cache[type_text] = parse_type(type_text, self.inputs.aliases)
        return t

    def bind_local_types(self, types: Mapping[str, str]) -> dict[str, str]:
        """Make ``types`` names the walk knows (over the ones it had); the ones it had,
        to restore."""
        saved = self.local_types
        self.local_types = {**saved, **types}
        self.local_type_cache = {}
        return saved

    def restore_local_types(self, saved: dict[str, str]) -> None:
        self.local_types = saved
        self.local_type_cache = {}

    def bound_text(self, type_text: str) -> str:
        """``type_text`` with the names the walk has bound replaced: local types by their
        text, the kernel's template parameters by their arguments, constants by their value
        (``TxN_t<data_t, veclen_>`` -> ``TxN_t<unsigned char, 16>``)."""

        def bound(m: re.Match[str]) -> str:
            w = m.group(0)
            if w in self.local_types:
                return self.local_types[w]
            held = self.var(w)
            if held is not None and held.val is not None and not held.deps and held.const:
                return _number_text(held.val)
            if w in self.inputs.template_names:
                v = self.inputs.lookup_host(w)  # ``veclen_`` of ``<unsigned char, 16>``
                return _number_text(v) if v is not None else self.inputs.aliases.get(w, w)
            return w

        return NAME.sub(bound, type_text)

    def template_instance(self, type_text: str) -> TemplateInstance | None:
        """The struct template instance ``type_text`` (or the local type it names) is, its
        names bound (``declarations.template_instance``); None: not one."""
        full = self.bound_text(type_text.strip())
        if "<" not in full:
            return None
        return template_instance(full, self.inputs.struct_templates, self.inputs.member_types)

    def chosen_per_block(self, deps: frozenset[str]) -> bool:
        """A value that varies only from block to block (team to team): with the block
        index, or the counter of a loop whose iterations go to the teams."""
        return bool(deps) and deps <= BLOCK_SET | self.par.team_dims

    def type_bytes(self, ty: DataType) -> float:
        """The bytes of a value of type ``ty`` (a pointer's 8, a struct the program declares
        by its size)."""
        if ty.pointer:
            return 8.0
        if ty.kind == "unknown" and ty.name in self.inputs.struct_sizes:
            return float(self.inputs.struct_sizes[ty.name])
        return float(ty.size)

    def retyped(self, v: Val, ty: DataType, val: float | None) -> Val:
        """``v`` cast to ``ty`` (:func:`converted`), a pointer's lane stride counted in the
        new pointee's elements: ``(float4 *)(in + 4 * i)`` moves 1 float4 a lane, not 4. A
        pointee of a size the model does not know keeps the stride as it was."""
        out = converted(v, ty, val)
        if out.slope and ty.pointer and v.type.pointer:
            old, new = self.element_bytes(v.type.deref()), self.element_bytes(ty.deref())
            if old and new:
                out.slope = out.slope * old / new
        return out

    def element_bytes(self, ty: DataType) -> float | None:
        """:meth:`type_bytes`, None for a type of unknown size (a template parameter)."""
        if ty.kind == "unknown" and not ty.pointer and ty.name not in self.inputs.struct_sizes:
            return None
        return self.type_bytes(ty)

    def struct_size(self, st: DataType) -> int:
        """The bytes of one ``st`` that holds a field (0: a struct the program does not
        declare), how far apart consecutive threads' structs lie in ``p[i].x``."""
        return self.inputs.struct_sizes.get(st.name, 0) if st.kind == "unknown" else st.size

    def lookup_num(self, s: str) -> float | None:
        """A number written out (``64``, ``0x40``) or a host value (``N``, ``n / 2``)."""
        try:
            return float(int(s, 0))
        except ValueError:
            return self.inputs.lookup_host(s)

    def expr_quiet(self, node: Node) -> Val:
        """Evaluate without counting (trip counts, probabilities)."""
        saved_ops, saved_lines, saved_acc = self.tally.ops, self.tally.lines, self.tally.accesses
        self.tally.ops, self.tally.lines, self.tally.accesses = [0.0] * 4, {}, {}
        saved_seen = self.cursor.seen
        self.cursor.seen = [set()]
        # what it computes serves nothing after it (it books no cost): a throwaway record
        frame = self.cursor.frames[-1]
        saved_computed, frame.computed = frame.computed, {}
        try:
            return self.expr(node)
        finally:
            self.tally.ops, self.tally.lines, self.tally.accesses = (
                saved_ops,
                saved_lines,
                saved_acc,
            )
            self.cursor.seen = saved_seen
            frame.computed = saved_computed


# where a computation's value is available to code after it (it dominates that code): the
# rest of its block, or of a statement part that may not run (a branch or loop body without
# braces, a ternary)
_BLOCKS = frozenset(
    {
        "compound_statement",
        "function_definition",
        "lambda_expression",
        "if_statement",
        "else_clause",
        "for_statement",
        "for_range_loop",
        "while_statement",
        "do_statement",
        "case_statement",
        "conditional_expression",
    }
)
# what a pure value may be made of: no memory read (a store between two reads of ``a[i]``
# changes it), no call but math functions (checked by the caller), no side effect
_PURE = frozenset(
    {
        "identifier",
        "number_literal",
        "binary_expression",
        "parenthesized_expression",
        "call_expression",
        "argument_list",
        "cast_expression",
        "type_descriptor",
        "primitive_type",
        "type_identifier",
        "qualified_identifier",
        "namespace_identifier",
        "unary_expression",
        "conditional_expression",
    }
)


def _pure(node: Node, budget: int = 64) -> bool:
    """``node`` reads no memory and changes nothing (at most ``budget`` nodes deep)."""
    todo = [node]
    while todo:
        n = todo.pop()
        budget -= 1
        if budget < 0 or n.type not in _PURE:
            return False
        if n.type == "unary_expression":
            op = n.child_by_field_name("operator")
            if op is None or op.type in ("*", "&"):
                return False
        if n.type == "call_expression" and n is not node:
            fn = n.child_by_field_name("function")
            name = text(fn).removeprefix("std::")
            if name not in costs.MATH_F64 and name.removesuffix("f") not in costs.MATH_F32:
                return False
        todo.extend(n.named_children)
    return True


def _number_text(v: float) -> str:
    """A value as C writes it in a template argument (``16``, not ``16.0``)."""
    return str(int(v)) if v == int(v) else repr(v)
