"""Per-thread operation and memory-access counting on the tree-sitter AST.

The counter walks a kernel body (CUDA: per thread; OpenMP/OpenACC: the whole region, divided by
the iterations of its parallel loops at the end) with a *weight*: how many times the current
statement runs per thread. Loops multiply the weight by their trip count, branches by their
probability, early ``return``/``continue`` scale what follows. Each statement's cost is booked
under its source line (``ThreadCounts.lines`` / ``weights``), so per-line costs from another
source (compiler output) can replace the source-level ones later.

Values are tracked just enough to count well: a variable's type (precision), the *dimensions*
it depends on (thread/block indices, loop iterations, loaded data) and its value (exact, or
the mean over threads for thread-dependent values), which give trip counts, branch
probabilities, loop-invariant hoisting and how many distinct elements each memory access
touches across the launch (``Access.distinct``) for the memory model.

Device functions and ``declare target`` functions are inlined (with their pointer arguments
bound to the caller's buffers), function-like and expression macros expanded and parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from tree_sitter import Node

from roofline_lsp.estimate import costs
from roofline_lsp.syntax.datatypes import (
    BOOL,
    DOUBLE,
    FLOAT,
    HALF,
    INT,
    LONG,
    PRECISION_OF_KIND,
    UNKNOWN,
    VOID,
    DataType,
    parse_type,
    promote,
)
from roofline_lsp.syntax.expr import (
    declarator_stars,
    declared_name,
    is_float_literal,
    literal,
    loop_header,
    text,
    trips,
    while_header,
)
from roofline_lsp.syntax.parsing import parse


class FunctionLookup(Protocol):
    def get(self, name: str) -> Node | None: ...


THREAD_DIMS = ("tx", "ty", "tz", "bx", "by", "bz")
DATA = "?"  # dependence on loaded data (indirect indices)
AXES = "xyz"


@dataclass(frozen=True)
class Access:
    """One memory reference of the kernel (after common-subexpression merging)."""

    buffer: str  # kernel parameter, global or host variable the pointer designates
    space: str  # "global" | "shared" | "local" | "constant"
    elem: int  # bytes per reference
    kind: str  # "load" | "store" | "atomic"
    weight: float  # executions per thread (loop-invariant loads hoisted)
    distinct: float | None  # distinct elements over the launch (None: data-dependent)
    line: int
    index: str = ""  # index text (for explanations)


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


class Var:
    __slots__ = ("type", "deps", "val", "space", "buffer", "arrdims", "const", "rng")

    def __init__(
        self,
        type_: DataType,
        deps: frozenset[str] = frozenset(),
        val: float | None = None,
        space: str | None = None,
        buffer: str | None = None,
        arrdims: int = 0,
        const: bool = False,
        rng: tuple[float, float] | None = None,
    ) -> None:
        self.type = type_
        self.deps = deps
        self.val = val
        self.space = space
        self.buffer = buffer
        self.arrdims = arrdims
        self.const = const
        self.rng = rng


class Val:
    """An expression's value: type, dependences, numeric value (exact or mean), pointer."""

    __slots__ = ("type", "deps", "val", "buffer", "space", "rng")

    def __init__(
        self,
        type_: DataType,
        deps: frozenset[str] = frozenset(),
        val: float | None = None,
        buffer: str | None = None,
        space: str | None = None,
        rng: tuple[float, float] | None = None,
    ) -> None:
        self.type = type_
        self.deps = deps
        self.val = val
        self.buffer = buffer
        self.space = space
        self.rng = rng  # [lo, hi] over threads and iterations, for integer values


NOTHING = frozenset[str]()
_CMP = frozenset({"<", ">", "<=", ">=", "==", "!="})
_ARITH = frozenset({"+", "-", "*", "/", "%"})
_BITS = frozenset({"&", "|", "^", "<<", ">>"})
_MATH_NAMES = set(costs.MATH_F32) | set(costs.MATH_F64)
_THREAD_SET = frozenset(THREAD_DIMS)
_OMP_IDS = frozenset(
    [
        "omp_get_thread_num",
        "omp_get_team_num",
        "omp_get_num_threads",
        "omp_get_num_teams",
        "omp_get_max_threads",
        "omp_get_team_size",
    ]
)


@dataclass
class Settings:
    """Knobs of the counter (defaults documented in ``roofline.py``)."""

    default_trips: float = 16.0  # a loop whose trip count cannot be determined
    default_while: float = 16.0  # a while/do loop or range-for
    nested_default: float = 4.0  # each enclosing unknown-trip loop divides the default by this
    default_branch: float = 0.5  # a branch whose condition cannot be evaluated
    int_address: float = 1.0  # integer instructions per distinct global/shared access
    unroll_default: float = 4.0  # nvcc unrolls loops of unknown trip count by 4
    unroll_full_max: float = 32.0  # constant-trip loops up to this are unrolled completely
    int_entry: float = 2.0  # kernel prologue (global index, bound check)
    omp_iteration_ints: float = 15.0  # OpenMP work-shared loop: runtime loop control
    max_inline_depth: int = 6
    inline_full_calls: int = 8  # calls of one function walked in full before reusing its cost
    max_nodes: int = 60000


@dataclass
class Frame:
    returns: list[Val] = field(default_factory=list)


class Counter:
    """Walk one kernel and produce its :class:`ThreadCounts`."""

    def __init__(
        self,
        *,
        functions: FunctionLookup,
        macros: dict[str, tuple[tuple[str, ...] | None, str]],
        lookup: Callable[[str], float | None],
        aliases: dict[str, str],
        structs: dict[str, dict[str, str]],
        globals_: dict[str, Var],
        settings: Settings,
        dims: dict[str, float],
        block: tuple[int, int, int],
        grid: tuple[int, int, int],
        offload: bool = False,
        constants: frozenset[str] = frozenset(),
    ) -> None:
        self.functions = functions
        self.constants = constants
        self.type_cache: dict[str, DataType] = {}
        self.local_sizes: dict[str, float] = {}  # per-thread arrays: bytes
        self.unrolled_dims: set[str] = set()
        self.team_level = False  # inside an OpenMP teams region, outside parallel regions
        self.macros = macros
        self.lookup_host = lookup
        self.aliases = aliases
        self.structs = structs
        self.globals = globals_
        self.s = settings
        self.dims = dict(dims)
        self.block = block
        self.grid = grid
        self.offload = offload
        self.scopes: list[dict[str, Var]] = [{}]
        self.w = 1.0
        # loop stack: (dim id, trips, parallel)
        self.loops: list[tuple[str, float, bool]] = []
        self.loop_records: list[Loop] = []
        self.seen: list[set[tuple[str, str, str]]] = [set()]
        self.ops = [0.0, 0.0, 0.0, 0.0]  # fp64 fp32 fp16 int (weighted)
        self.lines: dict[int, list[float]] = {}
        self.weights: dict[int, float] = {}
        self.accesses: dict[tuple[str, str, str, int], list] = {}
        self.line = 0
        self.line_base: int | None = None  # inside macro expansions: the call's line
        self.frames: list[Frame] = [Frame()]
        self.call_stack: list[str] = []
        self.followed: list[str] = []
        self.nodes = 0
        self.loop_counter = 0
        self.pending_unroll: float | None = None
        self.pending_parallel: int = 0  # collapse levels of a work-shared loop pragma
        self.threads_parallel = 1.0
        self.parallel_dims: list[str] = []
        # OpenMP: iterations assumed for a work-shared loop whose bound is unknown (the
        # runtime sizes the launch to the loop: teams x threads)
        self.parallel_default: float | None = None
        self.parallel_product = 1.0
        self.max_parallel = 1.0  # parallel units of the region (iterations or threads)
        self.pending_region: str | None = None  # "parallel" | "teams" | "single"
        self.unknown_depth = 0  # enclosing loops whose trip count is a default
        self.inferred: list[str] = []  # parameters sized from the launch (bound checks)
        self.inline_calls: dict[str, int] = {}
        self.summaries: dict[tuple[object, ...], tuple[list[float], list, Val]] = {}  # type: ignore[type-arg]
        self.pending_distribute = False
        self.team_mult = 1.0  # the teams multiplier in force (a distribute loop removes it)
        self.teams = float(grid[0])
        self.team_threads = float(block[0])

    # -- bookkeeping ------------------------------------------------------------------------
    def set_line(self, node: Node) -> None:
        if self.line_base is None:
            self.line = node.start_point.row + 1
        if self.line not in self.weights or self.weights[self.line] < self.w:
            self.weights[self.line] = self.w

    def add(self, idx: int, n: float, w: float | None = None) -> None:
        if n == 0:
            return
        v = n * (self.w if w is None else w)
        self.ops[idx] += v
        row = self.lines.get(self.line)
        if row is None:
            row = self.lines[self.line] = [0.0, 0.0, 0.0, 0.0]
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

    def hoisted_weight(self, deps: frozenset[str]) -> float:
        """Weight of a computation depending on ``deps``: loop-invariant work is hoisted out
        of the sequential loops it does not depend on (not out of parallel loops)."""
        w = self.w
        for dim, t, parallel in reversed(self.loops):
            if parallel or dim in deps:
                break
            if t > 0:
                w /= t
        return w

    # -- scopes -----------------------------------------------------------------------------
    def var(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                return v
        return self.globals.get(name)

    def declare(self, name: str, v: Var) -> None:
        self.scopes[-1][name] = v

    def value_of(self, name: str) -> float | None:
        v = self.var(name)
        if v is not None:
            return v.val if not v.deps else None
        return self.lookup_host(name)

    def extent(self, deps: frozenset[str]) -> float | None:
        """Distinct values a quantity depending on ``deps`` takes over the launch."""
        if DATA in deps:
            return None
        e = 1.0
        for d in deps:
            e *= self.dims.get(d, 1.0)
        return e

    # -- types ------------------------------------------------------------------------------
    def type_of(self, type_text: str) -> DataType:
        t = self.type_cache.get(type_text)
        if t is None:
            t = self.type_cache[type_text] = parse_type(type_text, self.aliases)
        return t

    # -- statements -------------------------------------------------------------------------
    def run(self, body: Node) -> float:
        return self.stmt(body)

    def stmt(self, node: Node) -> float:
        """Count a statement; return the fraction of executions that continue after it."""
        self.nodes += 1
        if self.nodes > self.s.max_nodes:
            return 1.0
        t = node.type
        if self.pending_region is not None and t not in ("preproc_call", "comment"):
            kind = self.pending_region
            self.pending_region = None
            return self.region(kind, node)
        if t == "compound_statement":
            return self.block_stmts(node.named_children, scoped=True)
        if t == "expression_statement":
            self.set_line(node)
            for c in node.named_children:
                self.expr(c)
            return 1.0
        if t == "declaration":
            self.set_line(node)
            self.declaration(node)
            return 1.0
        if t == "if_statement":
            return self.if_stmt(node)
        if t == "for_statement":
            self.for_stmt(node)
            return 1.0
        if t in ("while_statement", "do_statement", "for_range_loop"):
            self.while_stmt(node)
            return 1.0
        if t == "return_statement":
            self.set_line(node)
            for c in node.named_children:
                v = self.expr(c)
                self.frames[-1].returns.append(v)
            return 0.0
        if t in ("break_statement", "continue_statement", "goto_statement"):
            return 0.0
        if t == "switch_statement":
            return self.switch_stmt(node)
        if t in ("labeled_statement", "attributed_statement"):
            cont = 1.0
            for c in node.named_children:
                if c.type not in ("statement_identifier", "attribute_declaration"):
                    cont = self.stmt(c)
            return cont
        if t in ("preproc_if", "preproc_ifdef"):
            kids = [
                c
                for c in node.named_children
                if c.type not in ("preproc_else", "preproc_elif", "preproc_elifdef")
                and node.field_name_for_named_child(node.named_children.index(c))
                not in ("condition", "name")
            ]
            return self.block_stmts(kids, scoped=False)
        if t == "preproc_call":
            self.pragma(node)
            return 1.0
        if t in ("case_statement",):
            return self.block_stmts(node.named_children[1:], scoped=False)
        if t == "else_clause":
            return self.block_stmts(node.named_children, scoped=False)
        if t in ("try_statement", "seh_try_statement"):
            body = node.child_by_field_name("body")
            return self.stmt(body) if body is not None else 1.0
        if t in ("type_definition", "alias_declaration", "static_assert_declaration"):
            return 1.0
        if t.endswith("_expression"):
            self.set_line(node)
            self.expr(node)
        return 1.0

    def region(self, kind: str, node: Node) -> float:
        """An OpenMP ``parallel`` (every thread of the team runs it), ``teams`` (every team)
        or ``single``/``master`` (one thread) construct."""
        saved_w, saved_pp, saved_tm = self.w, self.parallel_product, self.team_mult
        saved_level = self.team_level
        self.team_level = kind == "teams"
        if kind == "parallel":
            f = self.team_threads
        elif kind == "teams":
            f = self.teams
            self.team_mult *= f
        else:
            f = 1.0 / max(self.team_threads, 1.0)
        self.w *= f
        if kind != "single":
            self.parallel_product *= f
            self.max_parallel = max(self.max_parallel, self.parallel_product)
        try:
            return self.stmt(node)
        finally:
            self.w, self.parallel_product, self.team_mult = saved_w, saved_pp, saved_tm
            self.team_level = saved_level

    def block_stmts(self, stmts: list[Node], scoped: bool) -> float:
        if scoped:
            self.scopes.append({})
        saved_w = self.w
        cont = 1.0
        skip = False
        for i, c in enumerate(stmts):
            if skip:
                skip = False
                continue
            if c.type == "comment":
                continue
            if self.w <= 0:
                break
            if c.type == "expression_statement" and i + 1 < len(stmts):
                loop = loop_macro(c, stmts[i + 1], self.macros)
                if loop is not None:
                    c = loop
                    skip = True
            k = self.stmt(c)
            if k < 1.0:
                cont *= k
                self.w = saved_w * cont
        self.w = saved_w
        if scoped:
            self.scopes.pop()
        return cont

    def pragma(self, node: Node) -> None:
        arg = text(node.child_by_field_name("argument")).strip()
        if not text(node).lstrip("# \t").startswith("pragma"):
            return
        words = arg.split()
        if not words:
            return
        if words[0] == "unroll":
            n = None
            if len(words) > 1:
                n = self.lookup_num(" ".join(words[1:]).strip("()"))
            self.pending_unroll = n if n else math.inf
        elif words[0] in ("omp", "acc") and self.offload:
            rest = set(words[1:])
            workshare = {"for", "distribute", "loop"} & rest or (
                words[0] == "acc" and ("loop" in rest or "kernels" in rest)
            )
            if workshare:
                m = re.search(r"collapse\s*\(\s*(\d+)\s*\)", arg)
                self.pending_parallel = int(m.group(1)) if m else 1
                self.pending_distribute = "distribute" in rest or "gang" in rest
            elif "parallel" in rest:
                self.pending_region = "parallel"
            elif "teams" in rest:
                self.pending_region = "teams"
            elif rest & {"single", "master", "masked"}:
                self.pending_region = "single"

    def lookup_num(self, s: str) -> float | None:
        try:
            return float(int(s, 0))
        except ValueError:
            return self.lookup_host(s)

    def if_stmt(self, node: Node) -> float:
        self.set_line(node)
        cond = node.child_by_field_name("condition")
        p = self.s.default_branch
        if cond is not None:
            inner = cond.child_by_field_name("value") or (
                cond.named_children[-1] if cond.named_children else cond
            )
            self.expr(inner)
            p = self.probability(inner)
        cons = node.child_by_field_name("consequence")
        alt = node.child_by_field_name("alternative")
        saved = self.w
        cont_a = cont_b = 1.0
        if cons is not None and p > 0:
            self.w = saved * p
            self.scopes.append({})
            cont_a = self.stmt(cons)
            self.scopes.pop()
        if alt is not None and p < 1:
            self.w = saved * (1 - p)
            self.scopes.append({})
            cont_b = self.stmt(alt)
            self.scopes.pop()
        self.w = saved
        return p * cont_a + (1 - p) * cont_b

    def switch_stmt(self, node: Node) -> float:
        self.set_line(node)
        cond = node.child_by_field_name("condition")
        if cond is not None:
            self.expr(cond)
        body = node.child_by_field_name("body")
        if body is None:
            return 1.0
        cases = [c for c in body.named_children if c.type == "case_statement"]
        if not cases:
            return 1.0
        saved = self.w
        self.w = saved / len(cases)
        for c in cases:
            self.scopes.append({})
            self.block_stmts(
                [x for x in c.named_children if x != c.child_by_field_name("value")], False
            )
            self.scopes.pop()
        self.w = saved
        return 1.0

    def while_stmt(self, node: Node) -> None:
        self.set_line(node)
        n = self.default(self.s.default_while)
        source = "default"
        self.pending_unroll = None
        self.pending_parallel = 0
        cond = node.child_by_field_name("condition")
        body = node.child_by_field_name("body")
        var_name = None
        if node.type == "for_range_loop":
            right = node.child_by_field_name("right")
            if right is not None:
                self.expr(right)
        else:
            hdr = while_header(node)
            if hdr is not None:
                trip, src, _start = self.trip_count(hdr)
                if src != "default":
                    n, source, var_name = trip, src, hdr.var
                    if node.type == "do_statement":
                        n = max(n, 1.0)
        dim = self.new_loop_dim(n)
        self.loop_records.append(
            Loop(
                node.start_point.row + 1,
                var_name,
                n,
                source,
                self.w,
                end_line=node.end_point.row + 1,
            )
        )
        if var_name:
            v = self.var(var_name)
            if v is not None:
                v.deps = v.deps | {dim}
        saved = self.w
        self.loops.append((dim, n, False))
        self.seen.append(set())
        self.w = saved * n
        self.scopes.append({})
        if node.type == "for_range_loop":
            left = node.child_by_field_name("declarator")
            if left is not None:
                self.declare(
                    declared_name(left), Var(FLOAT, frozenset({dim, DATA}))
                )  # element type unknown
        if cond is not None:
            self.expr(cond)  # the test runs every iteration (while loops are not unrolled)
        unknown = source == "default"
        self.unknown_depth += unknown
        self.mark_loop_carried(body, dim, var_name)
        if body is not None:
            self.stmt(body)
        self.unknown_depth -= unknown
        self.scopes.pop()
        self.seen.pop()
        self.loops.pop()
        self.w = saved

    def default(self, base: float) -> float:
        """Trips assumed for a loop whose count is unknown: nested unknown loops get fewer
        (the work of a thread is bounded; 32 x 32 x 32 unknown trips would not be)."""
        k = self.unknown_depth
        return max(base / self.s.nested_default**k, 2.0) if k else base

    def mark_loop_carried(self, body: Node | None, dim: str, skip: str | None) -> None:
        """Variables assigned in a loop body vary with the loop from its first iteration."""
        if body is None:
            return
        for name in assigned_names(body):
            if name == skip:
                continue
            v = self.var(name)
            if v is not None and not v.buffer:
                v.deps = v.deps | {dim}
                v.val = None
                v.rng = None

    def new_loop_dim(self, trips_: float) -> str:
        self.loop_counter += 1
        dim = f"L{self.loop_counter}"
        self.dims[dim] = max(trips_, 1.0)
        return dim

    def for_stmt(self, node: Node) -> None:
        self.set_line(node)
        unroll = self.pending_unroll
        parallel = self.pending_parallel > 0
        self.pending_unroll = None
        collapse_left = self.pending_parallel - 1 if parallel else 0
        self.pending_parallel = 0
        distribute = self.pending_distribute and parallel
        self.pending_distribute = False
        self.scopes.append({})
        init = node.child_by_field_name("initializer")
        if init is not None:
            if init.type == "declaration":
                self.declaration(init)
            else:
                self.expr(init)
        hdr = loop_header(node)
        n, source, start_val = self.trip_count(hdr)
        if parallel and (source == "default" or n < 1) and self.parallel_default:
            n = max(self.parallel_default / self.parallel_product, 1.0)
            source = "launch"
        var_name = hdr.var if hdr else None
        dim = self.new_loop_dim(n)
        unrolled = False
        if unroll is not None:
            unrolled = unroll == math.inf or (unroll >= n and source == "constant")
        elif source == "constant" and n <= self.s.unroll_full_max and not parallel:
            unrolled = True
        self.loop_records.append(
            Loop(
                node.start_point.row + 1,
                var_name,
                n,
                source,
                self.w,
                parallel,
                unrolled,
                node.end_point.row + 1,
            )
        )
        if unrolled:
            self.unrolled_dims.add(dim)
        # the loop variable: depends on the loop dimension; mean value over the iterations
        if var_name:
            v = self.var(var_name)
            base_deps = v.deps if v is not None else NOTHING
            mean = None
            geo: tuple[float, float] | None = None
            if hdr is not None and start_val is not None and hdr.step_op in ("+", "-"):
                step = self.step_value(hdr)
                if step is not None:
                    sign = 1 if hdr.step_op == "+" else -1
                    mean = start_val + sign * step * max(n - 1, 0) / 2
            elif hdr is not None and start_val is not None and n >= 1 and source != "default":
                step = self.step_value(hdr)
                if step is not None and step > 0:
                    f = step if hdr.step_op in ("*", "/") else 2.0**step
                    if hdr.step_op in ("/", ">>"):
                        f = 1 / f
                    k = int(n)
                    vals = [start_val * f**i for i in range(min(k, 64))]
                    if vals:
                        mean = sum(vals) / len(vals)
                        geo = (min(vals), max(vals))
            vt = v.type if v is not None else INT
            rng = None
            if mean is not None and hdr is not None and hdr.step_op in ("+", "-"):
                step = self.step_value(hdr)
                if step is not None and start_val is not None:
                    end = start_val + (1 if hdr.step_op == "+" else -1) * step * max(n - 1, 0)
                    rng = (min(start_val, end), max(start_val, end))
                    sv = self.var(var_name)
                    if sv is not None and sv.rng is not None and base_deps:
                        rng = (
                            rng[0] + sv.rng[0] - (sv.val or 0),
                            rng[1] + sv.rng[1] - (sv.val or 0),
                        )
            if geo is not None and not base_deps:
                rng = geo
            self.declare(var_name, Var(vt, base_deps | {dim}, mean, rng=rng))
        saved = self.w
        saved_product, saved_tm = self.parallel_product, self.team_mult
        self.loops.append((dim, n, parallel))
        self.w = saved * n
        saved_level = self.team_level
        if parallel:
            self.team_level = False
            self.parallel_dims.append(dim)
            if distribute and self.team_mult > 1:
                # iterations are shared among the teams that all reached this loop
                self.w /= self.team_mult
                self.parallel_product /= self.team_mult
                self.team_mult = 1.0
            self.parallel_product *= max(n, 1.0)
            self.max_parallel = max(self.max_parallel, self.parallel_product)
        self.seen.append(set())
        cond = node.child_by_field_name("condition")
        update = node.child_by_field_name("update")
        # loop control: the test and the increment run once per unrolled group of iterations
        # (nvcc unrolls unknown-count loops by 4, small constant ones completely)
        if parallel:
            factor = 1.0
            self.add_int(self.s.omp_iteration_ints)
        elif unrolled:
            factor = math.inf
        else:
            factor = max(unroll if unroll else self.s.unroll_default, 1.0)
        saved_inner = self.w
        self.w = saved_inner / factor
        if cond is not None:
            self.expr(cond)
        if update is not None:
            # the increment's cost; the loop variable keeps its per-iteration description
            lv = self.var(var_name) if var_name else None
            kept = (lv.deps, lv.val, lv.rng) if lv is not None else None
            self.expr(update)
            if lv is not None and kept is not None:
                lv.deps, lv.val, lv.rng = kept
        self.w = saved_inner
        body = node.child_by_field_name("body")
        if body is not None:
            if collapse_left > 0:
                inner = body
                if body.type == "compound_statement":
                    kids = [c for c in body.named_children if c.type != "comment"]
                    inner = kids[0] if len(kids) == 1 else body
                if inner.type == "for_statement":
                    self.pending_parallel = collapse_left
            unknown = source == "default"
            self.unknown_depth += unknown
            self.mark_loop_carried(body, dim, var_name)
            self.stmt(body)
            self.unknown_depth -= unknown
        self.seen.pop()
        self.loops.pop()
        self.w = saved
        self.parallel_product, self.team_mult = saved_product, saved_tm
        self.team_level = saved_level
        self.scopes.pop()

    def step_value(self, hdr) -> float | None:  # type: ignore[no-untyped-def]
        if hdr.step is None:
            return 1.0
        v = self.expr_quiet(hdr.step)
        return v.val

    def trip_count(self, hdr) -> tuple[float, str, float | None]:  # type: ignore[no-untyped-def]
        """Trips per execution of the loop, where the number came from, and the start's
        (mean) value."""
        if hdr is None or hdr.bound is None and hdr.step_op not in (">>", "/"):
            return self.default(self.s.default_trips), "default", None
        start = self.var(hdr.var) if hdr.var else None
        sv: float | None = None
        sdeps: frozenset[str] = NOTHING
        if hdr.start is not None:
            sval = self.expr_quiet(hdr.start)
            sv, sdeps = sval.val, sval.deps
        elif start is not None:
            sv, sdeps = start.val, start.deps
        bound = self.expr_quiet(hdr.bound) if hdr.bound is not None else Val(INT, NOTHING, 0.0)
        step = self.expr_quiet(hdr.step) if hdr.step is not None else Val(INT, NOTHING, 1.0)
        if sv is None or bound.val is None or step.val is None:
            return self.default(self.s.default_trips), "default", sv
        if DATA in bound.deps or DATA in step.deps or DATA in sdeps:
            return self.default(self.s.default_trips), "default", sv
        varying = bool(sdeps or bound.deps or step.deps)
        n = trips(sv, bound.val, hdr.bound_op, step.val, hdr.step_op, exact=not varying)
        if n is None:
            return self.default(self.s.default_trips), "default", sv
        thread_start = any(d in THREAD_DIMS or d in self.parallel_dims for d in sdeps)
        if thread_start and hdr.step_op == "+":
            # strided by the thread count (grid-/block-stride) or per-thread ranges
            n += 0.5
            source = "grid-stride" if step.val > 1 else "thread range"
        else:
            source = self.value_source(hdr)
        if n > 1e9:
            n = 1e9
        return n, source, sv

    def value_source(self, hdr) -> str:  # type: ignore[no-untyped-def]
        names = set(re.findall(r"[A-Za-z_]\w*", text(hdr.bound) + " " + text(hdr.start)))
        if names & {"blockDim", "gridDim"}:
            return "launch"
        for nm in names:
            if nm in self.constants or nm in self.aliases:
                continue
            v = self.var(nm)
            if v is not None or self.lookup_host(nm) is not None:
                return "argument"
        return "constant"

    def expr_quiet(self, node: Node) -> Val:
        """Evaluate without counting (trip counts, probabilities)."""
        saved_ops, saved_lines, saved_acc = self.ops, self.lines, self.accesses
        self.ops, self.lines, self.accesses = [0.0] * 4, {}, {}
        saved_seen = self.seen
        self.seen = [set()]
        try:
            return self.expr(node)
        finally:
            self.ops, self.lines, self.accesses = saved_ops, saved_lines, saved_acc
            self.seen = saved_seen

    # -- declarations -----------------------------------------------------------------------
    def declaration(self, node: Node) -> None:
        type_node = node.child_by_field_name("type")
        base_text = text(type_node)
        head = text(node)[: (type_node.start_byte - node.start_byte) if type_node else 0]
        # OpenMP: variables declared in a teams region outside its parallel regions are
        # shared by the team (in shared memory)
        shared = "__shared__" in head or "__shared__" in base_text or self.team_level
        const = "const" in head or "constexpr" in head
        for d in node.children_by_field_name("declarator"):
            name = declared_name(d)
            if not name:
                continue
            stars = declarator_stars(d)
            vt = self.type_of(base_text + " " + stars.replace("[]", "*"))
            value_node = d.child_by_field_name("value") if d.type == "init_declarator" else None
            arrdims = stars.count("[]")
            if base_text == "auto" or base_text.endswith(" auto"):
                vt = UNKNOWN
            if arrdims and not shared:
                self.local_array_size(name, d, vt)
            if value_node is not None and arrdims:
                for c in value_node.named_children:
                    self.expr(c)
                space = "shared" if shared else "local"
                self.declare(name, Var(vt, NOTHING, None, space, name, arrdims))
                continue
            if value_node is not None:
                if value_node.type in ("initializer_list", "argument_list"):
                    deps: frozenset[str] = NOTHING
                    last = None
                    for c in value_node.named_children:
                        last = self.expr(c)
                        deps = deps | last.deps
                    val = (
                        last.val
                        if last is not None and len(value_node.named_children) == 1
                        else None
                    )
                    self.declare(name, Var(vt, deps, val, const=const))
                    continue
                v = self.expr(value_node)
                if vt is UNKNOWN or vt.kind == "unknown" and v.type.kind != "unknown":
                    vt = v.type
                if vt.pointer and v.buffer:
                    self.declare(
                        name, Var(vt, v.deps, None, v.space, v.buffer, arrdims, const=const)
                    )
                    continue
                val = v.val
                if val is not None and vt.kind == "int":
                    val = float(math.trunc(val)) if not v.deps else val
                self.declare(name, Var(vt, v.deps, val, const=const, rng=v.rng))
                continue
            if arrdims:
                space = "shared" if shared else "local"
                self.declare(name, Var(vt, NOTHING, None, space, name, arrdims))
            elif shared:
                self.declare(name, Var(vt, NOTHING, None, "shared", name))
            else:
                self.declare(name, Var(vt, NOTHING, None))

    def local_array_size(self, name: str, decl: Node, vt: DataType) -> None:
        """Bytes of a per-thread array (``float acc[64]``), for local-memory traffic."""
        n = 1.0
        d: Node | None = (
            decl.child_by_field_name("declarator") if decl.type == "init_declarator" else decl
        )
        while d is not None and d.type == "array_declarator":
            size = d.child_by_field_name("size")
            v = self.expr_quiet(size).val if size is not None else None
            if v is None or v <= 0:
                return
            n *= v
            d = d.child_by_field_name("declarator")
        self.local_sizes[name] = n * (vt.size if not vt.pointer or vt.pointer > 1 else vt.size)

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node: Node) -> Val:
        self.nodes += 1
        t = node.type
        if t == "identifier":
            return self.identifier(text(node), node)
        if t == "number_literal":
            k = is_float_literal(node)
            ty = FLOAT if k == "f32" else DOUBLE if k == "f64" else INT
            return Val(ty, NOTHING, literal(node))
        if t == "binary_expression":
            return self.binary(node)
        if t == "assignment_expression":
            return self.assignment(node)
        if t == "subscript_expression":
            return self.memory(node, "load")
        if t == "field_expression":
            return self.field(node, "load")
        if t == "call_expression":
            return self.call(node)
        if t == "parenthesized_expression":
            last = Val(VOID)
            for c in node.named_children:
                last = self.expr(c)
            return last
        if t == "update_expression":
            return self.update(node)
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            a = self.expr(node.child_by_field_name("argument") or node)
            o = op.type if op is not None else ""
            if o == "!":
                return Val(BOOL, a.deps, None if a.val is None else float(not a.val))
            if o == "~":
                self.add_int(costs.INT_OP, self.hoisted_weight(a.deps))
                return Val(a.type, a.deps, None if a.val is None else float(~int(a.val)))
            if o == "-":
                if a.type.kind == "int" and a.val is None:
                    self.add_int(costs.INT_OP, self.hoisted_weight(a.deps))
                return Val(a.type, a.deps, None if a.val is None else -a.val, a.buffer, a.space)
            return a
        if t == "pointer_expression":
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            if arg is None:
                return Val(UNKNOWN)
            if op is not None and op.type == "&":
                if arg.type == "subscript_expression":
                    return self.memory(arg, "address")
                a = self.expr(arg) if arg.type != "identifier" else self.identifier(text(arg), arg)
                return Val(a.type.pointer_to(), a.deps, None, a.buffer or text(arg), a.space)
            return self.deref(arg, "load")
        if t == "conditional_expression":
            cond = node.child_by_field_name("condition")
            cv = self.expr(cond) if cond is not None else Val(BOOL)
            p = self.probability(cond) if cond is not None else 0.5
            saved = self.w
            self.w = saved * (p if p > 0 else 0.0)
            a = self.expr(node.child_by_field_name("consequence") or node)
            self.w = saved * (1 - p)
            b = self.expr(node.child_by_field_name("alternative") or node)
            self.w = saved
            ty = promote(a.type, b.type)
            val = a.val if cv.val is not None and cv.val and not cv.deps else None
            if cv.val is not None and not cv.val and not cv.deps:
                val = b.val
            deps = a.deps | b.deps | cv.deps
            return Val(ty, deps, val, a.buffer or b.buffer, a.space or b.space)
        if t == "cast_expression":
            ty = self.type_of(text(node.child_by_field_name("type")))
            v = self.expr(node.child_by_field_name("value") or node)
            val = v.val
            if val is not None and ty.kind == "int" and not ty.pointer and not v.deps:
                val = float(math.trunc(val))
            return Val(ty, v.deps, val, v.buffer, v.space, v.rng)
        if t == "sizeof_expression":
            tn = node.child_by_field_name("type")
            if tn is not None:
                ty = self.type_of(text(tn))
                return Val(LONG, NOTHING, float(8 if ty.pointer else ty.size))
            vn = node.child_by_field_name("value")
            if vn is not None and vn.type in ("identifier", "parenthesized_expression"):
                nm = text(vn).strip("() ")
                var = self.var(nm)
                if var is not None:
                    return Val(LONG, NOTHING, float(var.type.size))
            return Val(LONG, NOTHING, 4.0)
        if t in ("true", "false"):
            return Val(BOOL, NOTHING, float(t == "true"))
        if t in ("null", "nullptr"):
            return Val(INT, NOTHING, 0.0)
        if t == "comma_expression":
            self.expr(node.child_by_field_name("left") or node)
            return self.expr(node.child_by_field_name("right") or node)
        if t == "qualified_identifier":
            name = text(node).rsplit("::", 1)[-1]
            return self.identifier(name, node)
        if t in ("initializer_list", "argument_list"):
            last = Val(VOID)
            for c in node.named_children:
                last = self.expr(c)
            return last
        if t in ("char_literal", "string_literal", "concatenated_string", "raw_string_literal"):
            return Val(INT, NOTHING, None)
        if t == "template_function":
            return self.identifier(text(node.child_by_field_name("name")), node)
        if t in ("new_expression", "delete_expression", "lambda_expression", "this"):
            return Val(UNKNOWN)
        if t == "compound_literal_expression":
            vn = node.child_by_field_name("value")
            if vn is not None:
                self.expr(vn)
            return Val(self.type_of(text(node.child_by_field_name("type"))))
        if t == "gnu_asm_expression":
            self.add_int(2.0)
            return Val(INT)
        if t == "condition_clause":
            vn = node.child_by_field_name("value")
            return self.expr(vn) if vn is not None else Val(BOOL)
        last = Val(UNKNOWN)
        for c in node.named_children:
            last = self.expr(c)
        return last

    def identifier(self, name: str, node: Node) -> Val:
        v = self.var(name)
        if v is not None:
            if v.buffer is not None:
                return Val(v.type, v.deps, v.val, v.buffer, v.space)
            return Val(v.type, v.deps, v.val, rng=v.rng)
        if name == "warpSize":
            return Val(INT, NOTHING, 32.0)
        hv = self.lookup_host(name)
        if hv is not None:
            return Val(FLOAT if hv != int(hv) else INT, NOTHING, hv)
        m = self.macros.get(name)
        if m is not None and m[0] is None and name not in self.call_stack:
            tree = _macro_tree(m[1], expression=True)
            if tree is not None:
                return self.in_macro(name, tree, expression=True)
        return Val(UNKNOWN, frozenset({DATA}) if not name.isupper() else NOTHING)

    # -- arithmetic -------------------------------------------------------------------------
    def binary(self, node: Node) -> Val:
        op_node = node.child_by_field_name("operator")
        op = op_node.type if op_node is not None else ""
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None:
            return Val(UNKNOWN)
        if op in ("&&", "||"):
            a = self.expr(left)
            p = self.probability(left)
            saved = self.w
            self.w = saved * (p if op == "&&" else 1 - p)
            b = self.expr(right)
            self.w = saved
            return Val(BOOL, a.deps | b.deps, _fold(op, a.val, b.val, a.deps | b.deps))
        a = self.expr(left)
        b = self.expr(right)
        deps = a.deps | b.deps
        val = _fold(op, a.val, b.val, deps, integer=a.type.kind == "int" == b.type.kind)
        w = self.hoisted_weight(deps)
        if op in _CMP:
            ty = promote(a.type, b.type)
            if (ty.kind in ("int", "bool", "unknown") or ty.pointer) and val is None:
                self.add_int(costs.INT_OP * (2 if ty.size > 4 else 1), w)
            return Val(BOOL, deps, val)
        if a.type.pointer and op in ("+", "-") and not b.type.pointer:
            if val is None:
                self.add_int(2.0, w)
            return Val(a.type, deps, None, a.buffer, a.space)
        if b.type.pointer and op == "+":
            self.add_int(2.0, w)
            return Val(b.type, deps, None, b.buffer, b.space)
        ty = promote(a.type, b.type)
        if val is not None and not deps:
            return Val(ty, deps, val)
        if ty.is_float:
            if op in ("+", "-", "*"):
                self.add_flop(ty, 1.0, w)
            elif op == "/":
                if b.val is not None and _pow2(b.val):
                    self.add_flop(ty, 1.0, w)
                else:
                    table = costs.MATH_F64 if ty.kind == "f64" else costs.MATH_F32
                    f, i = table["div"]
                    self.add_flop(ty, f, w)
                    self.add_int(i, w)
            elif op == "%":
                f, i = costs.MATH_F64["fmod"] if ty.kind == "f64" else costs.MATH_F32["fmod"]
                self.add_flop(ty, f, w)
                self.add_int(i, w)
            return Val(ty, deps, val)
        if ty.kind in ("int", "bool", "unknown"):
            if val is None or deps:
                self.add_int(self.int_cost(op, a, b, ty, left, right), w)
            return Val(ty if ty.kind != "bool" else INT, deps, val, rng=_range(op, a, b))
        if ty.kind == "f16":
            self.add_flop(ty, 1.0, w)
        return Val(ty, deps, val)

    def int_cost(self, op: str, a: Val, b: Val, ty: DataType, left: Node, right: Node) -> float:
        wide = 2.0 if ty.size > 4 else 1.0
        if op in ("+", "-"):
            # a*b + c is one IMAD; a + b + c is one IADD3
            for side in (left, right):
                s = side
                while s.type == "parenthesized_expression" and s.named_children:
                    s = s.named_children[0]
                if s.type == "binary_expression":
                    o = s.child_by_field_name("operator")
                    if o is not None and o.type in ("*", "+", "-", "<<"):
                        return 0.0 if wide == 1 else 1.0
            if a.val is not None and not a.deps or b.val is not None and not b.deps:
                return costs.INT_OP * wide * 0.5
            return costs.INT_OP * wide
        if op == "*":
            return costs.INT_OP * (wide if wide == 1 else 3.0)
        if op in ("/", "%"):
            d = b.val if not b.deps else None
            if d is not None and _pow2(d):
                return costs.INT_DIV_POW2 * wide * 0.5
            if d is not None:
                return costs.INT_DIV_CONST * wide
            return costs.INT_DIV_VAR64 if wide > 1 else costs.INT_DIV_VAR
        return costs.INT_OP * wide

    # -- memory -----------------------------------------------------------------------------
    def memory(self, node: Node, kind: str) -> Val:
        """A subscript chain ``a[i][j]``: one access of the element type."""
        chain: list[Node] = []
        base = node
        while base.type == "subscript_expression":
            idx = base.child_by_field_name("indices") or base.child_by_field_name("index")
            if idx is not None:
                chain.append(idx)
            arg = base.child_by_field_name("argument")
            if arg is None:
                break
            base = arg
        deps: frozenset[str] = NOTHING
        key_parts = []
        idx_vals: list[Val] = []
        for idx in reversed(chain):
            for c in idx.named_children:
                v = self.expr(c)
                deps = deps | v.deps
                idx_vals.append(v)
                key_parts.append(text(c))
        if base.type == "identifier":
            bname = text(base)
            var = self.var(bname)
            buffer: str | None
            space: str | None
            if var is None:
                bv = self.identifier(bname, base)
                bt, space, buffer, arrdims = bv.type, bv.space or "global", bv.buffer, 0
            else:
                bt, space, arrdims = var.type, var.space, var.arrdims
                buffer = var.buffer or bname
                deps = deps | (var.deps if var.buffer else NOTHING)
                if space is None:
                    space = "global" if bt.pointer else "local"
                if buffer is None:
                    buffer = bname
        else:
            bv = self.expr(base) if base.type != "field_expression" else self.field(base, "address")
            bt, space, buffer, arrdims = bv.type, bv.space or "global", bv.buffer, 0
            deps = deps | bv.deps
            if buffer is None:
                buffer = text(base)
        levels = len(chain)
        elem_t = bt
        for _ in range(levels):
            elem_t = elem_t.deref()
        if not bt.pointer and bt.kind not in ("unknown",):
            # subscripting a non-pointer: vector component or a local array we did not see
            space = space if space in ("shared", "local", "constant") else "local"
        if kind == "address":
            return Val(elem_t.pointer_to(), deps, None, buffer, space)
        if elem_t.pointer and levels and arrdims >= levels:
            # partial subscript of a multi-dimensional array: an address, not a load
            return Val(elem_t, deps, None, buffer, space)
        # pointer tables (float **p; p[i][j]) load the row pointer too
        if levels >= 2 and bt.pointer - arrdims >= 2 and space == "global":
            self.record((buffer or "?") + "[]", "global", 8, "load", deps, "|".join(key_parts[:1]))
        elem = elem_t.size if not elem_t.pointer else 8
        if elem_t.kind == "unknown" and elem_t.name in self.structs:
            elem = _struct_size(self.structs[elem_t.name], self.aliases)
        span = None
        if len(idx_vals) == 1 and idx_vals[0].rng is not None and idx_vals[0].deps == deps:
            # the index alone spans [lo, hi] (the base pointer does not move with threads)
            lo, hi = idx_vals[0].rng
            span = hi - lo + 1
        self.record(buffer or "?", space or "global", elem, kind, deps, "|".join(key_parts), span)
        loaded_deps = deps | {DATA}
        return Val(elem_t, loaded_deps, None, buffer if elem_t.pointer else None, space)

    def record(
        self,
        buffer: str,
        space: str,
        elem: int,
        kind: str,
        deps: frozenset[str],
        key: str,
        span: float | None = None,
    ) -> None:
        """Book one access (merged with an identical one in the same loop body)."""
        if space == "local":
            # a per-thread array indexed dynamically (by a rolled loop or by data) cannot
            # live in registers: it is in local memory (cached in L1/L2, backed by DRAM)
            if buffer not in self.local_sizes or not any(
                d == DATA or (d.startswith("L") and d not in self.unrolled_dims) for d in deps
            ):
                return
            buffer, space = "local:" + buffer, "localmem"
        ck = (buffer, key, kind)
        seen = self.seen[-1]
        # loop-invariant loads are hoisted, except from shared memory (written by other
        # threads between iterations)
        w = self.hoisted_weight(deps) if kind == "load" and space != "shared" else self.w
        if ck in seen and kind == "load":
            return
        seen.add(ck)
        address = (buffer, key, "")  # one address computation serves a load and a store
        if space in ("global", "shared", "constant") and address not in seen:
            seen.add(address)
            self.add_int(self.s.int_address * (0.5 if space == "shared" else 1.0), w)
        distinct = self.extent(deps)
        if span is not None and distinct is not None:
            distinct = min(distinct, max(span, 1.0))
        akey = (buffer, kind, key, self.line)
        rec = self.accesses.get(akey)
        if rec is None:
            self.accesses[akey] = [buffer, space, elem, kind, w, distinct, self.line, key]
        else:
            rec[4] += w

    def deref(self, arg: Node, kind: str) -> Val:
        v = self.expr(arg)
        t = v.type.deref() if v.type.pointer else v.type
        buffer = v.buffer or text(arg)
        space = v.space or ("global" if v.type.pointer else "local")
        if kind != "address":
            self.record(
                buffer, space, t.size if not t.pointer else 8, kind, v.deps, "*" + text(arg)
            )
        return Val(t, v.deps | {DATA}, None, buffer if t.pointer else None, space)

    def field(self, node: Node, kind: str) -> Val:
        arg = node.child_by_field_name("argument")
        fname = text(node.child_by_field_name("field"))
        op = node.child_by_field_name("operator")
        arrow = op is not None and op.type == "->"
        if arg is None:
            return Val(UNKNOWN)
        if arg.type == "identifier" and not arrow:
            an = text(arg)
            if an in ("threadIdx", "blockIdx", "blockDim", "gridDim") and self.var(an) is None:
                return self.builtin(an, fname)
        if arrow:
            base = self.expr(arg)
            st = base.type.deref()
            ft = self.field_type(st, fname)
            if kind == "address":
                return Val(ft.pointer_to(), base.deps, None, base.buffer, base.space)
            if base.type.pointer:
                self.record(
                    (base.buffer or text(arg)) + "." + fname,
                    base.space or "global",
                    ft.size if not ft.pointer else 8,
                    kind,
                    base.deps,
                    "->",
                )
            return Val(
                ft, base.deps | {DATA}, None, base.buffer if ft.pointer else None, base.space
            )
        if arg.type == "subscript_expression":
            # a[i].x: an access to the element's field
            inner = self.memory(arg, "address")
            st = inner.type.deref()
            ft = self.field_type(st, fname)
            if kind != "address":
                self.record(
                    (inner.buffer or "?") + "." + fname,
                    inner.space or "global",
                    ft.size if not ft.pointer else 8,
                    kind,
                    inner.deps,
                    text(arg) + "." + fname,
                )
            return Val(
                ft, inner.deps | {DATA}, None, inner.buffer if ft.pointer else None, inner.space
            )
        base = self.expr(arg)
        ft = self.field_type(base.type, fname)
        if base.type.pointer and not ft.pointer:
            return Val(ft, base.deps, None)
        return Val(ft, base.deps, None, base.buffer if ft.pointer else None, base.space)

    def field_type(self, st: DataType, fname: str) -> DataType:
        if st.lanes > 1 and fname in ("x", "y", "z", "w"):
            return st.lane()
        if st.kind == "unknown" and st.name in self.structs:
            ft = self.structs[st.name].get(fname)
            if ft is not None:
                return self.type_of(ft)
        if st.lanes > 1:
            return st.lane()
        if st.kind == "unknown":
            return UNKNOWN
        return st

    def builtin(self, an: str, f: str) -> Val:
        axis = AXES.index(f) if f in AXES else 0
        if an == "threadIdx":
            n = self.block[axis]
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"t" + f}), (n - 1) / 2, rng=(0.0, n - 1.0))
        if an == "blockIdx":
            n = self.grid[axis]
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"b" + f}), (n - 1) / 2, rng=(0.0, n - 1.0))
        if an == "blockDim":
            return Val(INT, NOTHING, float(self.block[axis]))
        return Val(INT, NOTHING, float(self.grid[axis]))

    # -- assignments ------------------------------------------------------------------------
    def assignment(self, node: Node) -> Val:
        op_node = node.child_by_field_name("operator")
        op = op_node.type if op_node is not None else "="
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None:
            return Val(UNKNOWN)
        r = self.expr(right)
        compound = op != "="
        if left.type in ("subscript_expression", "field_expression", "pointer_expression"):
            is_var_field = left.type == "field_expression" and self.is_local_struct(left)
            if is_var_field:
                lv = self.field(left, "address")
                if compound:
                    self.arith_assign(op, lv.type, r)
                return lv
            if compound:
                cur = self.lvalue(left, "load")
                self.arith_assign(op, cur.type, r)
            lv = self.lvalue(left, "store")
            return Val(lv.type, lv.deps | r.deps, None)
        if left.type == "identifier":
            name = text(left)
            var = self.var(name)
            if var is None:
                self.scopes[0][name] = Var(r.type, r.deps, r.val, r.space, r.buffer)
                return r
            if compound:
                self.arith_assign(op, var.type, r)
                new_val = (
                    _fold(op[:-1], var.val, r.val, var.deps | r.deps)
                    if var.val is not None
                    else None
                )
                deps = var.deps | r.deps
            else:
                new_val = r.val
                deps = r.deps
            if self.loops and not self.loops[-1][2]:
                deps = deps | {self.loops[-1][0]}
                if self.loops[-1][0] not in r.deps:
                    new_val = None if compound else new_val
            var.deps = deps
            var.val = new_val
            var.rng = r.rng if not compound and deps == r.deps else None
            if var.type.pointer and r.buffer:
                var.buffer, var.space = r.buffer, r.space
            return Val(var.type, deps, new_val)
        self.expr(left)
        return r

    def is_local_struct(self, left: Node) -> bool:
        arg = left.child_by_field_name("argument")
        op = left.child_by_field_name("operator")
        if arg is None or arg.type != "identifier" or op is None or op.type == "->":
            return False
        v = self.var(text(arg))
        return v is not None and not v.type.pointer and v.space in (None, "local")

    def lvalue(self, left: Node, kind: str) -> Val:
        if left.type == "subscript_expression":
            return self.memory(left, kind)
        if left.type == "field_expression":
            return self.field(left, kind)
        arg = left.child_by_field_name("argument")
        return self.deref(arg, kind) if arg is not None else Val(UNKNOWN)

    def arith_assign(self, op: str, t: DataType, r: Val) -> None:
        base = op[:-1]
        w = self.w
        if t.is_float or (t.kind == "unknown" and r.type.is_float):
            tt = t if t.is_float else r.type
            if base == "/":
                table = costs.MATH_F64 if tt.kind == "f64" else costs.MATH_F32
                f, i = table["div"]
                if r.val is not None and _pow2(r.val):
                    f, i = 1.0, 0.0
                self.add_flop(tt, f, w)
                self.add_int(i, w)
            elif base in ("+", "-", "*"):
                self.add_flop(tt, 1.0, w)
        elif t.kind == "int":
            if base in ("/", "%"):
                d = r.val if not r.deps else None
                if d is not None and _pow2(d):
                    self.add_int(costs.INT_DIV_POW2 * 0.5, w)
                elif d is not None:
                    self.add_int(costs.INT_DIV_CONST, w)
                else:
                    self.add_int(costs.INT_DIV_VAR, w)
            else:
                self.add_int(costs.INT_OP * (2 if t.size > 4 and base == "*" else 1), w)

    def update(self, node: Node) -> Val:
        arg = node.child_by_field_name("argument")
        if arg is None:
            return Val(UNKNOWN)
        if arg.type == "identifier":
            v = self.var(text(arg))
            if v is not None:
                if v.type.is_float:
                    self.add_flop(v.type, 1.0)
                else:
                    self.add_int(costs.INT_OP * (2 if v.type.pointer else 1))
                if self.loops and not self.loops[-1][2]:
                    v.deps = v.deps | {self.loops[-1][0]}
                    v.val = None
                    v.rng = None
                return Val(v.type, v.deps, v.val, v.buffer, v.space)
            return Val(INT)
        cur = self.lvalue(arg, "load")
        if cur.type.is_float:
            self.add_flop(cur.type, 1.0)
        else:
            self.add_int(costs.INT_OP)
        self.lvalue(arg, "store")
        return cur

    # -- calls ------------------------------------------------------------------------------
    def call(self, node: Node) -> Val:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [c for c in (args_node.named_children if args_node else []) if c.type != "comment"]
        fname = ""
        if fn is not None:
            if fn.type == "template_function":
                fname = text(fn.child_by_field_name("name"))
            elif fn.type == "field_expression":
                fname = text(fn.child_by_field_name("field"))
                obj = fn.child_by_field_name("argument")
                if obj is not None and fname not in ("sync",):
                    self.expr(obj)
            else:
                fname = text(fn)
        short = fname.rsplit("::", 1)[-1].strip()
        if short in costs.ATOMICS:
            return self.atomic(short, args)
        if short in _OMP_IDS:
            return self.omp_id(short)
        if short in ("tex1Dfetch", "tex1D", "tex2D", "tex3D", "tex2DLayered", "texfetch"):
            vals = [self.expr(a) for a in args]
            deps = NOTHING
            for v in vals[1:]:
                deps = deps | v.deps
            self.record(text(args[0]) if args else "tex", "global", 4, "load", deps, "tex")
            return Val(FLOAT, deps | {DATA})
        if short in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv") and args:
            return (
                self.deref(args[0], "load")
                if args[0].type != "pointer_expression"
                else (self.expr(args[0]))
            )
        if (
            short in ("static_cast", "reinterpret_cast", "const_cast", "bit_cast")
            and fn is not None
        ):
            targs = fn.child_by_field_name("arguments")
            ty = self.type_of(text(targs).strip("<>")) if targs is not None else UNKNOWN
            v = self.expr(args[0]) if args else Val(ty)
            return Val(ty, v.deps, v.val, v.buffer, v.space)
        if short in ("float", "double", "int", "unsigned", "long", "half", "size_t") and args:
            v = self.expr(args[0])
            ty = self.type_of(short)
            return Val(
                ty, v.deps, v.val if ty.kind != "int" or v.val is None else float(int(v.val))
            )
        # user functions first (they may shadow library names)
        fnode = self.functions.get(short)
        if (
            fnode is not None
            and short not in self.call_stack
            and (len(self.call_stack) < self.s.max_inline_depth)
        ):
            return self.inline(short, fnode, args)
        m = self.macros.get(short)
        if m is not None and m[0] is not None and short not in self.call_stack:
            return self.expand_macro(short, m, args, node)
        vals = [self.expr(a) for a in args]
        deps = NOTHING
        for v in vals:
            deps = deps | v.deps
        w = self.hoisted_weight(deps)
        if short in costs.FREE_CALLS or short.startswith(("make_", "__shfl", "__float2", "__int2")):
            ty = _call_type(short, vals)
            return Val(ty, deps, None)
        if short in costs.FAST_INTRINSICS:
            f, i = costs.FAST_INTRINSICS[short]
            ty = DOUBLE if short.startswith(("__d", "__fma_rn")) else FLOAT
            self.add_flop(ty, f, w)
            self.add_int(i, w)
            return Val(ty, deps)
        if short in costs.HALF_INTRINSICS:
            self.add_flop(HALF, costs.HALF_INTRINSICS[short], w)
            return Val(HALF, deps)
        if short in costs.INT_INTRINSICS:
            if short in ("min", "max", "abs") and vals and any(v.type.is_float for v in vals):
                ty = _widest(vals)
                return Val(ty, deps, _fold_call(short, vals))
            ty = _widest(vals) if vals else INT
            val = _fold_call(short, vals)
            if val is None:
                self.add_int(costs.INT_INTRINSICS[short] * (2 if ty.size > 4 else 1), w)
            return Val(ty if ty.kind == "int" else INT, deps, val)
        base, prec = _math_name(short, vals)
        if base is not None:
            table = costs.MATH_F64 if prec == "f64" else costs.MATH_F32
            f, i = table[base]
            ty = DOUBLE if prec == "f64" else FLOAT
            val = _fold_call(base, vals)
            if val is None or deps:
                self.add_flop(ty, f, w)
                self.add_int(i, w)
            return Val(ty, deps, val)
        # unknown function: a small cost
        self.add_int(2.0, w)
        return Val(_widest(vals) if vals else UNKNOWN, deps | {DATA})

    def omp_id(self, short: str) -> Val:
        if short == "omp_get_thread_num":
            n = self.team_threads
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"tx"}), (n - 1) / 2, rng=(0.0, n - 1))
        if short == "omp_get_team_num":
            n = self.teams
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"bx"}), (n - 1) / 2, rng=(0.0, n - 1))
        if short in ("omp_get_num_threads", "omp_get_max_threads", "omp_get_team_size"):
            return Val(INT, NOTHING, self.team_threads)
        return Val(INT, NOTHING, self.teams)

    def atomic(self, short: str, args: list[Node]) -> Val:
        if not args:
            return Val(INT)
        target = args[0]
        vals = [self.expr(a) for a in args[1:]]
        if target.type == "pointer_expression":
            inner = target.child_by_field_name("argument")
            op = target.child_by_field_name("operator")
            if inner is not None and op is not None and op.type == "&":
                if inner.type == "subscript_expression":
                    lv = self.memory(inner, "atomic")
                elif inner.type == "field_expression":
                    lv = self.field(inner, "atomic")
                else:
                    lv = self.expr(inner)
                    self.record(
                        lv.buffer or text(inner),
                        lv.space or "global",
                        lv.type.size,
                        "atomic",
                        lv.deps,
                        text(inner),
                    )
            else:
                lv = self.deref(target, "atomic")
        else:
            pv = self.expr(target)
            t = pv.type.deref() if pv.type.pointer else pv.type
            self.record(
                pv.buffer or text(target),
                pv.space or "global",
                t.size,
                "atomic",
                pv.deps,
                "*" + text(target),
            )
            lv = Val(t, pv.deps)
        t = lv.type if lv.type.kind != "unknown" else (vals[0].type if vals else INT)
        if short.startswith("atomicAdd") and t.is_float:
            self.add_flop(t, 1.0)
        else:
            self.add_int(1.0)
        return Val(t, lv.deps | {DATA})

    def inline(self, name: str, fnode: Node, args: list[Node]) -> Val:
        from roofline_lsp.detect.bindings import function_params

        params = function_params(fnode)
        vals = [self.expr(a) for a in args]
        scope: dict[str, Var] = {}
        for i, (ptype, pname) in enumerate(params):
            if not pname:
                continue
            pt = self.type_of(ptype)
            if i < len(vals):
                v = vals[i]
                if pt.kind == "unknown" and v.type.kind != "unknown":
                    pt = v.type if not pt.pointer else v.type
                if (pt.pointer or "&" in ptype) and v.buffer:
                    scope[pname] = Var(
                        pt if pt.pointer else v.type,
                        v.deps,
                        None,
                        v.space,
                        v.buffer,
                        ptype.count("[]"),
                    )
                elif "&" in ptype and i < len(args):
                    # a reference to the caller's variable: writes go to it
                    src = self.var(text(args[i]))
                    if src is not None:
                        scope[pname] = src
                        continue
                    scope[pname] = Var(pt, v.deps, v.val)
                else:
                    scope[pname] = Var(pt, v.deps, v.val)
            else:
                scope[pname] = Var(pt)
        ret_t = self.type_of(_return_type(fnode))
        body = fnode.child_by_field_name("body")
        if body is None:
            return Val(ret_t)
        if name not in self.followed:
            self.followed.append(name)
        # a function met again with the same kind of arguments: reuse its cost per call
        key = (name, tuple(_signature(v) for v in vals))
        n_calls = self.inline_calls.get(name, 0) + 1
        self.inline_calls[name] = n_calls
        summary = self.summaries.get(key)
        if summary is not None and n_calls > self.s.inline_full_calls:
            return self.apply_summary(summary)
        w0 = self.w
        ops0 = list(self.ops)
        acc0 = {k: r[4] for k, r in self.accesses.items()}
        saved_scopes = self.scopes
        self.scopes = [saved_scopes[0], scope]
        self.call_stack.append(name)
        self.frames.append(Frame())
        saved_line, saved_base = self.line, self.line_base
        self.line_base = self.line  # book the callee's cost on the call's line
        try:
            self.stmt(body)
        finally:
            frame = self.frames.pop()
            self.call_stack.pop()
            self.scopes = saved_scopes
            self.line, self.line_base = saved_line, saved_base
        deps = NOTHING
        for r in frame.returns:
            deps = deps | r.deps
        val = frame.returns[0].val if len(frame.returns) == 1 else None
        if ret_t.kind == "unknown" and frame.returns:
            ret_t = frame.returns[0].type
        buf = next((r.buffer for r in frame.returns if r.buffer), None)
        result = Val(ret_t, deps, val, buf)
        if w0 > 0:
            ops_d = [(a - b) / w0 for a, b in zip(self.ops, ops0, strict=True)]
            acc_d = [
                (k, list(r), (r[4] - acc0.get(k, 0.0)) / w0)
                for k, r in self.accesses.items()
                if r[4] != acc0.get(k, 0.0)
            ]
            self.summaries[key] = (ops_d, acc_d, result)
        return result

    def apply_summary(self, summary: tuple[list[float], list, Val]) -> Val:  # type: ignore[type-arg]
        ops_d, acc_d, result = summary
        w = self.w
        for i, d in enumerate(ops_d):
            self.add(i, d, w)
        for k, template, dw in acc_d:
            rec = self.accesses.get(k)
            if rec is None:
                rec = list(template)
                rec[4] = 0.0
                self.accesses[k] = rec
            rec[4] += dw * w
        return result

    def expand_macro(
        self, name: str, m: tuple[tuple[str, ...] | None, str], args: list[Node], node: Node
    ) -> Val:
        params, body = m
        assert params is not None
        arg_texts = [text(a) for a in args]
        expanded = _substitute(body, params, arg_texts)
        stmt_ctx = node.parent is not None and node.parent.type == "expression_statement"
        tree = _macro_tree(expanded, expression=not stmt_ctx)
        if tree is None:
            for a in args:
                self.expr(a)
            return Val(UNKNOWN)
        return self.in_macro(name, tree, expression=not stmt_ctx)

    def in_macro(self, name: str, tree: Node, expression: bool) -> Val:
        if name not in self.followed:
            self.followed.append(name)
        self.call_stack.append(name)
        saved_base = self.line_base
        self.line_base = self.line
        try:
            if expression:
                return self.expr(tree)
            self.stmt(tree)
            return Val(VOID)
        finally:
            self.call_stack.pop()
            self.line_base = saved_base

    # -- branch probabilities ---------------------------------------------------------------
    def probability(self, cond: Node | None) -> float:
        """Fraction of executions for which ``cond`` holds (thread-uniform model: a
        thread-dependent value is spread evenly over its range)."""
        if cond is None:
            return self.s.default_branch
        t = cond.type
        if t == "parenthesized_expression" and cond.named_children:
            return self.probability(cond.named_children[-1])
        if t == "condition_clause":
            v = cond.child_by_field_name("value")
            return self.probability(v) if v is not None else self.s.default_branch
        if t == "unary_expression":
            op = cond.child_by_field_name("operator")
            if op is not None and op.type == "!":
                return 1.0 - self.probability(cond.child_by_field_name("argument"))
        if t == "binary_expression":
            op_node = cond.child_by_field_name("operator")
            bop = op_node.type if op_node is not None else ""
            left = cond.child_by_field_name("left")
            right = cond.child_by_field_name("right")
            if bop == "&&":
                return self.probability(left) * self.probability(right)
            if bop == "||":
                pa, pb = self.probability(left), self.probability(right)
                return 1 - (1 - pa) * (1 - pb)
            if bop in _CMP and left is not None and right is not None:
                if bop in ("<", "<=", ">", ">="):
                    self.infer_size(left, right)
                va = self.expr_quiet(left)
                vb = self.expr_quiet(right)
                return self.compare_probability(bop, va, vb)
        cv = self.expr_quiet(cond)
        if cv.val is not None and not cv.deps:
            return 1.0 if cv.val else 0.0
        return self.s.default_branch

    def infer_size(self, left: Node, right: Node) -> None:
        """``if (i < n)`` with ``i`` a thread index and ``n`` an unknown kernel parameter:
        launches are sized to the problem, so ``n`` is about the end of ``i``'s range."""
        for name_node, other in ((right, left), (left, right)):
            if name_node.type != "identifier":
                continue
            var = self.var(text(name_node))
            if var is None or not var.const or var.val is not None or var.type.kind != "int":
                continue
            v = self.expr_quiet(other)
            if not v.deps or v.val is None or not v.deps <= _THREAD_SET:
                continue
            ext = self.extent(v.deps)
            if ext is None or ext <= 1:
                continue
            var.val = math.floor(v.val - (ext - 1) / 2 + ext)
            self.inferred.append(text(name_node))
            return

    def compare_probability(self, op: str, a: Val, b: Val) -> float:
        if a.val is not None and b.val is not None and not a.deps and not b.deps:
            return 1.0 if _fold(op, a.val, b.val, NOTHING) else 0.0
        # normalise to: x OP c with x varying
        if b.deps and not a.deps:
            a, b = b, a
            op = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}[op]
        if b.deps and (DATA in b.deps or b.deps & _THREAD_SET or b.deps & a.deps):
            return self.s.default_branch  # both sides vary together: no simple model
        if not a.deps or b.val is None:
            return self.s.default_branch
        # a bound that varies only with an enclosing loop is taken at its mean
        if a.rng is not None:
            lo, hi = a.rng
            count = max(hi - lo + 1, 1.0)
            c = b.val
            if op in ("==", "!="):
                p = (1.0 / count) if lo <= c <= hi else 0.0
                return p if op == "==" else 1 - p
            if op in ("<", "<="):
                n = c - lo + (1 if op == "<=" else 0)
            else:
                n = hi - c + (1 if op == ">=" else 0)
            return min(1.0, max(0.0, n / count))
        if a.val is None:
            return self.s.default_branch
        ext = self.extent(a.deps)
        if ext is None or ext <= 1:
            return self.s.default_branch
        lo = a.val - (ext - 1) / 2
        c = b.val
        if op in ("==", "!="):
            inside = lo <= c <= lo + ext - 1
            p = (1.0 / ext) if inside else 0.0
            return p if op == "==" else 1 - p
        if op in ("<", "<="):
            n = c - lo + (1 if op == "<=" else 0)
            return min(1.0, max(0.0, n / ext))
        n = lo + ext - 1 - c + (1 if op == ">=" else 0)
        return min(1.0, max(0.0, n / ext))

    # -- result -----------------------------------------------------------------------------
    def result(self, threads: float, scale: float = 1.0) -> ThreadCounts:
        """Counts per thread: everything divided by ``scale`` (OpenMP: the parallel
        iterations of the region)."""
        inv = 1.0 / scale if scale > 0 else 1.0
        accesses = tuple(
            Access(b, sp, el, k, w * inv, d, ln, key)
            for (b, sp, el, k, w, d, ln, key) in self.accesses.values()
        )
        lines = {
            ln: (r[0] * inv, r[1] * inv, r[2] * inv, r[3] * inv) for ln, r in self.lines.items()
        }
        return ThreadCounts(
            flops={"fp64": self.ops[0] * inv, "fp32": self.ops[1] * inv, "fp16": self.ops[2] * inv},
            int_ops=self.ops[3] * inv,
            accesses=accesses,
            loops=tuple(replace(lp, weight=lp.weight * inv) for lp in self.loop_records),
            lines=lines,
            weights={ln: w * inv for ln, w in self.weights.items()},
            threads=threads,
            dims={
                d: e for d, e in self.dims.items() if d in THREAD_DIMS or d in self.parallel_dims
            },
            followed=tuple(self.followed),
            per="iteration" if self.offload else "thread",
            local_bytes={"local:" + k: v for k, v in self.local_sizes.items()},
        )


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _fold(
    op: str, a: float | None, b: float | None, deps: frozenset[str], integer: bool = False
) -> float | None:
    """Fold a binary operation on exact values or on means (linear operators only)."""
    if a is None or b is None:
        return None
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if deps and op not in ("+", "-", "*", "/", ">>", "<<"):
            return None
        if op == "/":
            if b == 0:
                return None
            return float(math.trunc(a / b)) if integer and not deps else a / b
        if op == "%":
            return float(math.fmod(int(a), int(b))) if b else None
        if op == "<<":
            return a * 2.0 ** int(b) if 0 <= b < 63 else None
        if op == ">>":
            return float(int(a) >> int(b)) if 0 <= b < 63 and not deps else a / 2.0 ** int(b)
        if op == "&":
            return float(int(a) & int(b))
        if op == "|":
            return float(int(a) | int(b))
        if op == "^":
            return float(int(a) ^ int(b))
        if op == "<":
            return float(a < b)
        if op == ">":
            return float(a > b)
        if op == "<=":
            return float(a <= b)
        if op == ">=":
            return float(a >= b)
        if op == "==":
            return float(a == b)
        if op == "!=":
            return float(a != b)
        if op == "&&":
            return float(bool(a) and bool(b))
        if op == "||":
            return float(bool(a) or bool(b))
    except (OverflowError, ValueError):
        return None
    return None


_ASSIGNED_CACHE: dict[tuple[int, int], frozenset[str]] = {}


def assigned_names(body: Node) -> frozenset[str]:
    """Variables assigned anywhere in ``body`` (loop-carried values of a loop body)."""
    key = (body.start_byte, body.end_byte)
    hit = _ASSIGNED_CACHE.get(key)
    if hit is not None:
        return hit
    out: set[str] = set()
    stack = [body]
    while stack:
        n = stack.pop()
        t = n.type
        if t == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                out.add(text(left))
        elif t == "update_expression":
            arg = n.child_by_field_name("argument")
            if arg is not None and arg.type == "identifier":
                out.add(text(arg))
        if t not in ("number_literal", "string_literal", "comment", "identifier"):
            stack.extend(n.named_children)
    result = frozenset(out)
    if len(_ASSIGNED_CACHE) > 20000:
        _ASSIGNED_CACHE.clear()
    _ASSIGNED_CACHE[key] = result
    return result


def _signature(v: Val) -> tuple[object, ...]:
    if v.buffer:
        return (v.buffer, v.space, v.type.kind)
    return (v.type.kind, v.val if not v.deps else None, bool(v.deps))


def _bounds(v: Val) -> tuple[float, float] | None:
    if v.rng is not None:
        return v.rng
    if v.val is not None and not v.deps:
        return (v.val, v.val)
    return None


def _range(op: str, a: Val, b: Val) -> tuple[float, float] | None:
    """Interval arithmetic for integer index expressions (None when unknown)."""
    if a.rng is None and b.rng is None:
        return None
    ra, rb = _bounds(a), _bounds(b)
    if ra is None or rb is None:
        if op in ("%", "&") and rb is not None and rb[0] == rb[1] and rb[0] > 0:
            return (0.0, rb[0] - 1 if op == "%" else rb[0])
        return None
    (a0, a1), (b0, b1) = ra, rb
    try:
        if op == "+":
            return (a0 + b0, a1 + b1)
        if op == "-":
            return (a0 - b1, a1 - b0)
        if op == "*":
            c = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
            return (min(c), max(c))
        if op == "/" and b0 == b1 and b0 != 0:
            q = (math.trunc(a0 / b0), math.trunc(a1 / b0))
            return (float(min(q)), float(max(q)))
        if op == "%" and b0 == b1 and b0 > 0:
            if a0 >= 0 and a1 - a0 < b0 and math.fmod(a0, b0) <= math.fmod(a1, b0):
                return (math.fmod(a0, b0), math.fmod(a1, b0))
            return (0.0, b0 - 1)
        if op == "<<" and b0 == b1 and 0 <= b0 < 32:
            return (a0 * 2**b0, a1 * 2**b0)
        if op == ">>" and b0 == b1 and 0 <= b0 < 32:
            return (float(int(a0) >> int(b0)), float(int(a1) >> int(b0)))
        if op == "&" and b0 == b1 and b0 >= 0 and a0 >= 0:
            return (0.0, min(a1, b0))
    except (OverflowError, ValueError):
        return None
    return None


def _pow2(v: float) -> bool:
    if v == 0 or v != v:
        return False
    a = abs(v)
    if a >= 1:
        return a == int(a) and int(a) & (int(a) - 1) == 0
    inv = 1 / a
    return inv == int(inv) and int(inv) & (int(inv) - 1) == 0


def _widest(vals: list[Val]) -> DataType:
    t = vals[0].type if vals else UNKNOWN
    for v in vals[1:]:
        t = promote(t, v.type)
    return t


def _fold_call(name: str, vals: list[Val]) -> float | None:
    if not vals or any(v.val is None or v.deps for v in vals):
        return None
    xs = [v.val for v in vals if v.val is not None]
    try:
        if name in ("min", "fmin", "umin"):
            return min(xs)
        if name in ("max", "fmax", "umax"):
            return max(xs)
        if name in ("abs", "fabs"):
            return abs(xs[0])
        if name == "sqrt":
            return math.sqrt(xs[0])
        if name == "ceil":
            return float(math.ceil(xs[0]))
        if name == "floor":
            return float(math.floor(xs[0]))
        if name == "log2":
            return math.log2(xs[0])
        if name == "pow" and len(xs) == 2:
            return float(xs[0] ** xs[1])
    except (ValueError, OverflowError):
        return None
    return None


def _math_name(short: str, vals: list[Val]) -> tuple[str | None, str]:
    """``expf`` -> ("exp", "f32"); ``exp`` on a double -> ("exp", "f64"); ``std::exp``..."""
    name = short
    if name.startswith("__nv_"):
        name = name[5:]
    prec = ""
    if name in _MATH_NAMES:
        arg_t = _widest(vals) if vals else DOUBLE
        prec = "f32" if arg_t.kind == "f32" or arg_t.kind == "f16" else "f64"
        if arg_t.kind == "int":
            prec = "f64" if name not in ("min", "max", "abs") else "f32"
        return name, prec
    if name.endswith("f") and name[:-1] in _MATH_NAMES:
        return name[:-1], "f32"
    if name.startswith("f") and name[1:] in _MATH_NAMES and name in ("fsqrt",):
        return name[1:], "f32"
    if name in ("rsqrtf", "rsqrt", "rcbrt", "rcbrtf", "normf", "norm", "rnorm3df", "rnorm3d"):
        return "rsqrt", "f32" if name.endswith("f") else "f64"
    return None, ""


def _call_type(short: str, vals: list[Val]) -> DataType:
    if short.startswith(("make_float", "__int2float", "__uint2float", "__half2float")):
        return FLOAT
    if short.startswith(("make_double", "__int2double")):
        return DOUBLE
    if short.startswith(("__float2int", "__float2uint", "__double2int", "make_int", "make_uint")):
        return INT
    if short.startswith("__shfl") and len(vals) >= 2:
        return vals[1].type
    if short.startswith(("__float2half", "__floats2half")):
        return HALF
    return vals[0].type if vals else UNKNOWN


def _return_type(fn: Node) -> str:
    t = fn.child_by_field_name("type")
    d = fn.child_by_field_name("declarator")
    stars = ""
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        if d.type == "pointer_declarator":
            stars += "*"
        d = d.child_by_field_name("declarator") or next(
            (c for c in d.named_children if "declarator" in c.type), None
        )
    return text(t) + stars


def _substitute(body: str, params: tuple[str, ...], args: list[str]) -> str:
    body = body.replace("\\\n", " ")
    if not params:
        return body
    mapping = {}
    for i, p in enumerate(params):
        if p == "...":
            mapping["__VA_ARGS__"] = ", ".join(args[i:])
        elif i < len(args):
            mapping[p] = args[i]
    if not mapping:
        return body
    pattern = re.compile(r"#?\b(" + "|".join(re.escape(p) for p in mapping) + r")\b")

    def rep(m: re.Match[str]) -> str:
        if m.group(0).startswith("#"):
            return '""'
        return mapping[m.group(1)]  # literal, as the preprocessor does

    return pattern.sub(rep, body).replace("##", "")


_LOOP_MACRO_CACHE: dict[str, Node | None] = {}


def loop_macro(
    stmt: Node, nxt: Node, macros: dict[str, tuple[tuple[str, ...] | None, str]]
) -> Node | None:
    """``KERNEL_LOOP(i, n) { body }``: a call of a macro that expands to a loop header,
    which the parser sees as a statement without ``;`` followed by the body. Returns the
    re-parsed loop (rows aligned with the source) or None."""
    raw = text(stmt).rstrip()
    if raw.endswith(";") or not stmt.named_children:
        return None
    call = stmt.named_children[0]
    if call.type != "call_expression":
        return None
    name = text(call.child_by_field_name("function"))
    m = macros.get(name)
    if m is None or m[0] is None:
        return None
    body = m[1].replace("\\\n", " ").strip()
    if not body.startswith(("for", "while")):
        return None
    args_node = call.child_by_field_name("arguments")
    args = [text(a) for a in (args_node.named_children if args_node else [])]
    expanded = _substitute(body, m[0], args).replace("\n", " ")
    row = stmt.start_point.row
    gap = nxt.start_point.row - stmt.end_point.row
    src = (
        "\n" * row
        + "void __m__(){"
        + expanded
        + "\n" * gap
        + " " * nxt.start_point.column
        + text(nxt)
        + "}"
    )
    if src in _LOOP_MACRO_CACHE:
        return _LOOP_MACRO_CACHE[src]
    tree = parse(src.encode())
    fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
    b = fn.child_by_field_name("body") if fn is not None else None
    loop = b.named_children[0] if b is not None and b.named_children else None
    if loop is not None and loop.type not in ("for_statement", "while_statement"):
        loop = None
    if len(_LOOP_MACRO_CACHE) > 1024:
        _LOOP_MACRO_CACHE.clear()
    _LOOP_MACRO_CACHE[src] = loop
    return loop


_MACRO_CACHE: dict[tuple[str, bool], Node | None] = {}


def _macro_tree(body: str, expression: bool) -> Node | None:
    """Parse a macro expansion: an expression (``(x)*(x)``) or statements."""
    key = (body, expression)
    if key in _MACRO_CACHE:
        return _MACRO_CACHE[key]
    node: Node | None = None
    if len(body) < 4000 and body.strip():
        if expression:
            src = ("void __m__(void) { __r__ = (" + body + "); }").encode()
        else:
            src = ("void __m__(void) { " + body + " ; }").encode()
        tree = parse(src)
        fn = tree.root_node.named_children[0] if tree.root_node.named_children else None
        bodyn = fn.child_by_field_name("body") if fn is not None else None
        if bodyn is not None and not bodyn.has_error:
            if expression:
                st = bodyn.named_children[0] if bodyn.named_children else None
                e = st.named_children[0] if st is not None and st.named_children else None
                r = e.child_by_field_name("right") if e is not None else None
                node = r
            else:
                node = bodyn
    if len(_MACRO_CACHE) > 4096:
        _MACRO_CACHE.clear()
    _MACRO_CACHE[key] = node
    return node


def _struct_size(fields: dict[str, str], aliases: dict[str, str]) -> int:
    total = 0
    for t in fields.values():
        dt = parse_type(t, aliases)
        total += 8 if dt.pointer else dt.size
    return max(total, 1)
