"""One kernel's per-line PTX counts (``KernelPtx``) from a parsed PTX module, and what the
estimator gets (``CompiledCounts``: those counts, or why there are none). The estimator puts
them in place of its source-level operation counts (``estimate/ptx_substitution.py``).

Pure analysis (no LSP). The counter books every statement's cost under its source line with
that line's executions per thread (``ThreadCounts.lines`` / ``weights``: loop trip counts and
branch probabilities multiplied in; an inlined device function or macro is booked on its call
line). Here each line's integer instructions and FLOPs per precision become

    PTX count of the line (one execution) x the counter's executions of the line

and the totals are re-summed. What stays from the source analysis: the memory references
(``accesses``) and so the DRAM/L2 model, the loop trip counts, the branch weights.

Mapping PTX lines onto the counter's lines:

- The kernel's own instructions use *call-site* attribution: code inlined from a device
  function (``__forceinline__``, libm) is keyed by the kernel line that calls it, as the counter
  books it.
- A device function the counting compile keeps as a ``.func`` call (nvcc ``-Xcicc -O1``,
  clang ``-fno-inline``: ``compile_jobs``): the call line gets
  the function's whole per-call cost (its lines, transitively its callees) when it has no loop
  (its lines' relative weights are then all 1, or less for branches: an upper bound); a callee
  with a loop has per-line weights the counter does not expose, so that line keeps its source
  count (a fallback); on a continued line of a statement (``x = a +`` then ``f(...)``), the
  statement's first line, where the counter booked it, keeps its count for all its lines.
- Code inlined on a call line from the program's own device function that branches on a
  condition (a guarded tree sum ``if (lid < i) v[lid] += v[lid + i];``, an early exit) is
  every path at once on that line: the line keeps its source count, whose weights hold the
  branch shares (a fallback, ``PtxFunction.steered``). Code inlined from the toolkit's
  headers (a math function branching on special inputs) keeps its PTX count.
- A branch the known values decide against (``if (mode > 0)`` with mode 0: the counter's
  ``dead_lines``) costs nothing where the PTX branches around its code on that condition
  (``skipped_by``); code the compiler computes on both paths and selects (``selp``) runs
  anyway, at the weight of the line above it.
- A loop statement's line holds the loop control (counter increment, compare, pointer bumps)
  that runs once per iteration in the ``-O1`` code. The build that runs (``-O3``) unrolls a loop
  of unknown trip count by 4 and a small constant one completely, as the counter assumes
  (``Settings.unroll_default`` / ``Loop.unrolled``): its integer instructions run once per
  group of ``unroll`` trips and on every trip of the remainder, which runs in a rolled loop of
  its own (when fully unrolled, only what the unroll cannot fold: a pointer bumped by a
  run-time stride, every trip). clang leaves a grid-stride loop
  (a run-time step, ``Settings.unroll_strided``) rolled: its control runs every iteration;
  so does a loop with no counter (``while (x) { ...; x >>= 1; }``: no trip count to unroll by).
  Work inlined or called on that line inside the loop (``for (...) a = f(a);`` on one
  line, ``f`` a ``.func``) is body work: it runs every iteration
  (``KernelPtx.per_iteration_body``).
- Code the compiler hoisted out of a loop (a loop-invariant ``sqrtf(a) / b`` computed once
  before it) sits outside the loop's natural loop in the PTX control-flow graph
  (``ptx_parser.CfgLoop``): its FLOPs run once per entry of the loop, so the substitution
  divides them by the loop's trip count (``KernelPtx.placed``, ``loop_bodies``). Out of an
  OpenMP work-shared loop (the PTX loop over a thread's chunk, in the same function: a body
  outlined into a function the loop calls runs with it) they run once per thread, a share
  threads / iterations of each iteration (``loop_functions``).
- A constant loop the counting build unrolled anyway (``#pragma unroll`` forces clang's and
  NVVM's unrollers) has no PTX loop of its own: its body lines hold one copy per trip, so
  the substitution divides them by the trip count (``ptx_substitution._unrolled_copies``).
- A line of the kernel with PTX instructions but no statement start of its own (a continued
  expression) takes the weight of the nearest statement line above it; a line the counter
  costed but PTX has no instruction for costs nothing (folded or removed by the compiler).
- OpenMP offload regions (clang ``__omp_offloading_<dev>_<file>_<function>_l<line>``): the
  lines of the region's body in the entry and its outlined functions; the pragma line and the
  work-shared loop lines (runtime scheduling, calibrated in ``roofline.Calibration``) and the
  OpenMP runtime's functions keep the source model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from roofline_lsp.compiler.demangle import omp_region
from roofline_lsp.compiler.instruction_mix import EMPTY, LineMix
from roofline_lsp.compiler.ptx_kernels import find_kernels
from roofline_lsp.compiler.ptx_parser import Key, PtxFunction, PtxModule, PtxRun
from roofline_lsp.model.kernel import Kernel
from roofline_lsp.syntax.required_macros import RequiredChoice

# functions of the OpenMP device runtime: modelled by the calibrated per-thread/per-iteration
# integer costs, not by their PTX
_RUNTIME_PREFIXES = (
    "__kmpc_",
    "__omp_rtl",
    "omp_",
    "__llvm_",
    "_ZN4ompx",
    "__assert",
    "vprintf",
    "malloc",
    "free",
)
UNROLL_DEFAULT = 4.0


@dataclass(frozen=True)
class Placement:
    """Part of a kernel line's counts (fp64, fp32, fp16, int): the natural loops (ids) its
    instructions sit in and the function (index into the kernel's entry and outlined
    bodies) that holds them."""

    loops: frozenset[int]
    function: int
    counts: tuple[int, int, int, int]


SASS_INSTRUCTION_BYTES = 16


@dataclass(frozen=True)
class KernelPtx:
    """PTX counts of one kernel keyed by the lines of the kernel's file (one execution each)."""

    kernel: str  # the PTX symbol
    lines: Mapping[int, LineMix] = field(compare=False)
    # lines calling a .func with loops, or inlining a branching helper: source counts
    fallback: frozenset[int] = frozenset()
    keep_source: frozenset[int] = frozenset()  # OpenMP pragma line (runtime model)
    compiler: str = "nvcc"
    # loop statement lines: the part of the line's (fp64, fp32, fp16, int) counts that runs
    # every iteration as loop control (its integer part once per unrolled group), the part
    # that is body work inlined or called on that line (every iteration); the rest, e.g. the
    # initialisation, runs once per entry of the loop
    per_iteration: Mapping[int, tuple[int, int, int, int]] = field(
        default_factory=dict, compare=False
    )
    per_iteration_body: Mapping[int, tuple[int, int, int, int]] = field(
        default_factory=dict, compare=False
    )
    # the kernel lines in the body of each natural loop of the PTX (by id: ``CfgLoop``), and
    # each line's counts split by where its instructions sit (``Placement``): a line's code
    # the compiler hoisted out of a loop runs once per entry of the loop, not every iteration
    loop_bodies: tuple[frozenset[int], ...] = ()
    placed: Mapping[int, tuple[Placement, ...]] = field(default_factory=dict, compare=False)
    loop_functions: tuple[int, ...] = ()  # the function (index) each natural loop sits in
    # per natural loop, the integer instructions of each kernel line in its body that
    # unrolling it completely folds (``CfgLoop.folded``)
    loop_folded: tuple[Mapping[int, tuple[int, int]], ...] = field(default=(), compare=False)
    others: tuple[KernelPtx, ...] = ()  # other instantiations of a template kernel
    # lines whose code conditional branches skip: the lines of those branches' conditions
    # (``PtxFunction.skipped_by``); a line the compiler if-converted (``selp``) is not here
    skipped_by: Mapping[int, frozenset[int]] = field(default_factory=dict, compare=False)

    # instructions of the entry and of every function it can call, each once
    code_instructions: int = 0

    @property
    def code_bytes(self) -> int:
        """The kernel's code in bytes, at the 16 bytes a SASS instruction takes from Volta on:
        its lines' instructions, each call site with its callee's (a helper the release
        build inlines at every call), or, when more, the instructions of its entry and of
        every function reachable from it, each once (a helper left a call whose cost the
        lines do not carry: ``myocyte``'s 1,154-instruction ``kernel_ecc``)."""
        lines = sum(m.instructions for m in self.lines.values())
        return SASS_INSTRUCTION_BYTES * max(lines, self.code_instructions)

    def flop_mix(self) -> tuple[int, int, int]:
        """(fp64, fp32, fp16) FLOPs summed over the lines, one execution each."""
        t = [0, 0, 0]
        for m in self.lines.values():
            t[0] += m.flops_fp64
            t[1] += m.flops_fp32
            t[2] += m.flops_fp16
        return (t[0], t[1], t[2])


@dataclass(frozen=True)
class CompiledCounts:
    """What the estimator gets: PTX counts of the kernel, or why there are none.
    ``flops_only``: take the FLOPs from the PTX and keep the source counter's integer
    instructions (``auto`` for OpenMP regions: clang's PTX carries the OpenMP runtime's
    worksharing and state-machine code, which the counter books per GPU thread and iteration
    instead)."""

    ptx: KernelPtx | None = None
    reason: str = ""
    flops_only: bool = False
    # -D names the compile was given because the source stops at an #error without one
    required: tuple[tuple[str, RequiredChoice], ...] = ()
    adapted: str = ""  # how the compile departed from the file as it is

    @property
    def ok(self) -> bool:
        return self.ptx is not None

    @property
    def note(self) -> str:
        if self.ptx is not None:
            what = "counts: PTX FLOPs, source integer ops" if self.flops_only else "counts: PTX"
            defines = [
                f"-D{name}: {os.path.basename(c.file)} line {c.line} needs one of "
                + ", ".join(c.names)
                for name, c in self.required
            ]
            other = self.adapted
            if other.startswith("-D"):  # names the compile defined, as the build would
                defines, other = [*defines, other], ""
            built = f"built with {'; '.join(defines)}" if defines else ""
            how = "; ".join(x for x in (built, other) if x)
            return f"{what} ({how})" if how else what
        return f"counts: source ({self.reason})" if self.reason else "counts: source"


# ---------------------------------------------------------------------------------------------
# From a PTX module to one kernel's per-line counts


def _same_file(ptx_file: str, path: str) -> bool:
    if not ptx_file:
        return False
    if os.path.isabs(ptx_file) and os.path.isabs(path):
        try:
            return os.path.realpath(ptx_file) == os.path.realpath(path)
        except OSError:
            return False
    return os.path.basename(ptx_file) == os.path.basename(path)


def _user_file(ptx_file: str) -> bool:
    """Whether ``ptx_file`` is the program's own source, not a header of the CUDA toolkit or
    the compiler (``.../cuda/targets/.../include/crt/math_functions.hpp``,
    ``.../lib/clang/16/include/__clang_cuda_math.h``): a header under an ``include`` folder of
    an installation that names CUDA, clang, HIP or NVHPC, or of the system."""
    if not ptx_file:
        return False
    where, sep, _ = ptx_file.replace("\\", "/").rpartition("/include/")
    return not sep or not (where == "/usr" or _TOOLKIT.search(where.lower()))


_TOOLKIT = re.compile(r"cuda|clang|llvm|hip|rocm|nvhpc")


def _is_runtime(name: str) -> bool:
    return name.startswith(_RUNTIME_PREFIXES)


def _entries_for(module: PtxModule, kernel: Kernel) -> list[PtxFunction]:
    """The PTX entries of ``kernel``: several for a template instantiated several times."""
    if kernel.is_offload:
        hits = [
            k
            for k in module.kernels
            if (r := omp_region(k.name)) is not None and r[1] == kernel.line
        ]
        short = kernel.name.split("::")[-1]
        named = [k for k in hits if (r := omp_region(k.name)) and r[0].split("::")[-1] == short]
        return named or hits
    return [f for f in find_kernels(module, kernel.name) if f.is_kernel]


def _call_cost(
    module: PtxModule, name: str, in_span: Callable[[Key], bool], stack: tuple[str, ...] = ()
) -> LineMix | None:
    """Whole per-call cost of ``.func name`` and its callees; None when one has a loop (or
    recursion): its lines' weights are unknown."""
    if _is_runtime(name):
        return EMPTY
    f = module.functions.get(name)
    if f is None:
        return None  # defined in another translation unit (-rdc): its cost is unknown here
    if name in stack or f.loops:
        return None
    if any(in_span(k) for k in f.callsite_lines):
        return EMPTY  # part of the kernel's own lines (an OpenMP outlined body)
    total = f.total
    for c in f.calls:
        sub = _call_cost(module, c, in_span, (*stack, name))
        if sub is None:
            return None
        total = total + sub
    return total


def _counted(mix: LineMix) -> bool:
    """Whether ``mix`` costs anything: instructions counted, or a call (a math function's call
    sits on its wrapper's line in clang's ``__clang_cuda_math.h``, and costs what it calls)."""
    return bool(mix.int_ops) or bool(mix.calls) or line_quad(mix)[:3] != (0, 0, 0)


_FLOAT_FIELDS = ("fp64", "fp32", "fp16", "flops_fp64", "flops_fp32", "flops_fp16")


def _floats(mix: LineMix) -> LineMix:
    """The floating-point part of ``mix``."""
    return replace(EMPTY, **{f: getattr(mix, f) for f in _FLOAT_FIELDS})


def _foreign(r: PtxRun, in_span: Callable[[Key], bool]) -> LineMix | None:
    """What a run outside the kernel's lines brings to them: code inlined from elsewhere
    (all of it), or floating-point work the compiler gave no line (line 0: clang's merge of
    both arms of an ``if`` into one FMA); None for nothing."""
    if in_span(r.key):
        return None
    if r.key[1] > 0:
        return r.mix if _counted(r.mix) else None
    part = _floats(r.mix)
    return part if line_quad(part)[:3] != (0, 0, 0) else None


Placed = tuple[Key, frozenset[int]]  # a kernel line and the natural loops its code sits in


def _own_lines(
    f: PtxFunction, in_span: Callable[[Key], bool], loop_ids: Sequence[int]
) -> dict[Placed, LineMix] | None:
    """The counts of ``f`` on the kernel's lines, split by the natural loops the instructions
    sit in (``loop_ids``: an id for each of ``f.cfg_loops``): code hoisted out of a loop sits
    in fewer loops than its source line. Code inlined from a function outside the kernel
    without its call line (clang emits no ``inlined_at`` before LLVM 17) is booked on
    the kernel line it follows in program order (the call it was inlined at; before any, the
    next one), and so is floating-point work on no line (clang's merge of both arms of an
    ``if`` into one FMA), on the kernel line before it (else after it) that sits in the same
    natural loops: it runs as often (code hoisted out of an inner loop is not booked inside
    it).
    None when inlined code sits in a loop of the callee's own (its weight is unknown) or no
    kernel line is near."""

    def loops_of(r: PtxRun) -> frozenset[int]:
        return frozenset(
            i for lp, i in zip(f.cfg_loops, loop_ids, strict=True) if lp.holds(r.first)
        )

    foreign = [_foreign(r, in_span) for r in f.runs]
    out: dict[Placed, LineMix] = {}

    def book(key: Key, r: PtxRun, mix: LineMix) -> None:
        at = (key, loops_of(r))
        out[at] = out.get(at, EMPTY) + mix

    if all(m is None for m in foreign):
        for r in f.runs:
            if in_span(r.key):
                book(r.key, r, r.mix)
        return out
    own_loops = [lp.span for lp in f.loops if lp.control[1] > 0 and not in_span(lp.control)]
    following: list[PtxRun | None] = []  # the next run on a kernel line, for each run
    nxt: PtxRun | None = None
    for r in reversed(f.runs):
        following.append(nxt)
        if in_span(r.key):
            nxt = r
    following.reverse()
    last: PtxRun | None = None
    pending: list[tuple[PtxRun, LineMix]] = []  # inlined code before any kernel line
    for r, mix, after in zip(f.runs, foreign, following, strict=True):
        if in_span(r.key):
            for p, m in pending:
                book(r.key, p, m)
            book(r.key, r, r.mix)
            last, pending = r, []
        elif mix is not None:
            if r.key[1] == 0:
                # on a kernel line next to it that runs as often: in the same natural loops
                loops = loops_of(r)
                near = [x for x in (last, after) if x is not None and loops_of(x) == loops]
                if near:
                    book(near[0].key, r, mix)
            elif any(a <= r.first and r.last <= b for a, b in own_loops):
                return None
            elif last is None:
                pending.append((r, mix))
            else:
                book(last.key, r, mix)
    return None if pending else out


def kernel_ptx(module: PtxModule, kernel: Kernel, compiler: str = "nvcc") -> KernelPtx | None:
    """The per-line PTX counts of ``kernel`` (None when the module lacks it, e.g. a template
    never instantiated in the translation unit). A template instantiated several times gives
    the first instantiation with the others in ``KernelPtx.others``; :func:`substitute` picks
    the one whose floating-point precision matches the source analysis (which binds the
    template arguments from the launch)."""
    found = []
    for entry in _entries_for(module, kernel)[:_MAX_INSTANTIATIONS]:
        kp = _kernel_ptx(module, kernel, entry, compiler)
        if kp is not None:
            found.append(kp)
    if not found:
        return None
    return replace(found[0], others=tuple(found[1:]))


_MAX_INSTANTIATIONS = 8
_WRAPPER = "_wrapper"


def _kernel_ptx(
    module: PtxModule, kernel: Kernel, entry: PtxFunction, compiler: str
) -> KernelPtx | None:
    lo, hi = kernel.line, max(kernel.end_line, kernel.line)
    path = kernel.file

    def in_span(key: tuple[str, int]) -> bool:
        return lo <= key[1] <= hi and _same_file(key[0], path)

    # the entry and (OpenMP) its outlined bodies: every function reached whose lines lie in
    # the kernel's span; runtime functions excluded
    order = [entry.name]
    todo = list(entry.calls)
    while todo:
        c = todo.pop(0)
        if c in order or _is_runtime(c) or c not in module.functions:
            continue
        f = module.functions[c]
        if any(in_span(k) for k in f.callsite_lines):
            order.append(c)
            todo.extend(f.calls)
    # clang's generic-mode parallel region is ``__omp_outlined__N`` and its worker entry
    # ``__omp_outlined__N_wrapper``, which inlines it: a thread runs one of them
    order = [n for n in order if not (n.endswith(_WRAPPER) and n[: -len(_WRAPPER)] in order)]
    lines: dict[int, LineMix] = {}
    placed: dict[int, dict[tuple[frozenset[int], int], LineMix]] = {}
    loop_bodies: list[frozenset[int]] = []
    loop_functions: list[int] = []
    loop_folded: list[Mapping[int, tuple[int, int]]] = []
    fallback: set[int] = set()
    skipped: dict[int, set[int]] = {}
    for index, name in enumerate(order):
        f = module.functions[name]
        ids = range(len(loop_bodies), len(loop_bodies) + len(f.cfg_loops))
        loop_bodies += [frozenset(k[1] for k in lp.lines if in_span(k)) for lp in f.cfg_loops]
        loop_functions += [index] * len(f.cfg_loops)
        loop_folded += [{k[1]: n for k, n in lp.folded.items() if in_span(k)} for lp in f.cfg_loops]
        here = _own_lines(f, in_span, ids)
        if here is None:
            return None
        for site, files in f.steered.items():
            if in_span(site) and any(_user_file(x) for x in files):
                fallback.add(site[1])  # its weights are the counter's (branch shares)
        for site, conditions in f.skipped_by.items():
            if in_span(site):
                held = {c[1] for c in conditions if in_span(c)}
                skipped[site[1]] = skipped.get(site[1], held) & held
        for (key, in_loops), mix in here.items():
            where = (in_loops, index)
            ln = key[1]
            add = mix
            for c in mix.calls:
                cost = _call_cost(module, c, in_span)
                if cost is None:
                    fallback.add(ln)
                else:
                    add = add + cost
            lines[ln] = lines.get(ln, EMPTY) + add
            at = placed.setdefault(ln, {})
            at[where] = at.get(where, EMPTY) + add
    if not lines:
        return None  # no line information matching the kernel's source (e.g. no -lineinfo)
    keep = frozenset({kernel.line}) if kernel.is_offload else frozenset()
    per_iter: dict[int, tuple[int, int, int, int]] = {}
    per_body: dict[int, tuple[int, int, int, int]] = {}
    for name in order:
        f = module.functions[name]
        for lp in f.loops:
            if not in_span(lp.control):
                continue
            # what one pass through the loop runs on the loop statement's line: its own
            # instructions (the compare, the increments), and work inlined or called there
            # (a one-line loop's body); the rest of the line runs once per entry
            ln = lp.control[1]
            line = line_quad(lines.get(ln, EMPTY))
            body = lp.inlined_mix
            for c in lp.calls:
                cost = _call_cost(module, c, in_span)
                body = body + (cost if cost is not None else EMPTY)
            own = line_quad(lp.control_mix)
            each = tuple(min(own[i], line[i]) for i in range(4))
            rest = line_quad(body)
            body_part = tuple(min(rest[i], line[i] - each[i]) for i in range(4))
            for into, part in ((per_iter, each), (per_body, body_part)):
                old = into.get(ln, (0, 0, 0, 0))
                w, x, y, z = (max(a, b) for a, b in zip(old, part, strict=True))
                into[ln] = (w, x, y, z)
    return KernelPtx(
        entry.name,
        lines,
        frozenset(fallback),
        keep,
        compiler,
        per_iter,
        per_body,
        tuple(loop_bodies),
        {
            ln: tuple(Placement(loops, f, line_quad(m)) for (loops, f), m in at.items())
            for ln, at in placed.items()
        },
        tuple(loop_functions),
        loop_folded=tuple(loop_folded),
        skipped_by={ln: frozenset(c) for ln, c in skipped.items() if c},
        code_instructions=_reachable_instructions(module, entry.name),
    )


def _reachable_instructions(module: PtxModule, entry: str) -> int:
    """Instructions of ``entry`` and of every function of ``module`` it calls, directly or
    through others (the OpenMP runtime's included), each counted once."""
    seen = {entry}
    todo = [entry]
    total = 0
    while todo:
        f = module.functions.get(todo.pop())
        if f is None:
            continue
        total += sum(r.mix.instructions for r in f.runs)
        for c in f.calls:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return total


def line_quad(m: LineMix) -> tuple[int, int, int, int]:
    return (m.flops_fp64, m.flops_fp32, m.flops_fp16, m.int_ops)
