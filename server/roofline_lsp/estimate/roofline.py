"""Static roofline estimator: from a kernel's source (and its launch, when known), the
arithmetic intensity per precision on a GPU and whether it is compute- or bandwidth-bound.

Pipeline (each step its own module):

1. ``bindings``: what the host side says: parameter values at the launch site, program
   arguments (``atoi(argv[1])``), hint comments (``// roofline: n=1<<20``), buffer sizes.
2. ``counting``: per-thread (OpenMP: per parallel iteration) FLOPs by precision, integer
   instructions and memory references, following device functions and macros, with loop trip
   counts and branch probabilities.
3. ``memory``: DRAM bytes of the whole launch from the references: reuse across threads,
   footprint against the GPU's L2.
4. here: totals = per-thread counts x threads, AI = ops / DRAM bytes per precision, compared
   with the GPU's ridge points (``verdict.classify_bound``); ``explanation`` words the verdict.

The few constants that are not instruction costs are in :class:`Calibration`; each is
justified below and its fit on the dev set is shown by ``scripts/calibration.py``.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from tree_sitter import Node

from roofline_lsp.compiler.kernel_ptx import CompiledCounts
from roofline_lsp.detect.bindings import (
    OMP_DEFAULT_TEAMS,
    TEMPORARY,
    HostContext,
    function_params,
    guard_bounds,
    host_context,
    template_params,
)
from roofline_lsp.detect.pragmas import (
    Pragma,
    acc_loop_sharing,
    mapped_sections,
    parse_pragma,
    pragma_text,
)
from roofline_lsp.detect.program import FunctionTable, included_body, units_including
from roofline_lsp.detect.textscan import HIP_INDEX_MACROS
from roofline_lsp.detect.treewalk import descendants_of_type, kernel_function
from roofline_lsp.estimate.counting import ThreadCounter
from roofline_lsp.estimate.explanation import static_confidence, verdict_terms
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.launch_time import (
    ATOMIC_CYCLES,
    contended_updates,
    display_bytes,
    global_loads,
    l1_wavefronts,
    launch_time,
)
from roofline_lsp.estimate.macro_expansion import LOOP_MACRO_STATEMENTS, loop_macro
from roofline_lsp.estimate.memory import CacheModel, estimate_traffic, without_host_memory
from roofline_lsp.estimate.ptx_substitution import substitute
from roofline_lsp.estimate.thread_counts import Settings
from roofline_lsp.estimate.value_domain import Var
from roofline_lsp.estimate.walk_state import instantiate, teams_only
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Detection, Kernel
from roofline_lsp.model.terms import NoteTerm
from roofline_lsp.model.verdict import Counts, LineInstructions, Verdict, classify_bound
from roofline_lsp.syntax.datatypes import DataType, named_like, parse_type, scalar_name, type_name
from roofline_lsp.syntax.declarations import Declarations, declarations, member_aliases
from roofline_lsp.syntax.expr import NAME, declared_name, identifiers, stored_names, text
from roofline_lsp.syntax.hints import parse_assignments, parse_hints
from roofline_lsp.syntax.parsing import parse
from roofline_lsp.syntax.sources import LOCAL_INCLUDE, SourceReader, SourceView, source_view


@dataclass(frozen=True)
class Inputs:
    """What the user knows about a launch: dimensions and program arguments / hint values."""

    block: tuple[int, int, int] | None = None
    grid: tuple[int, int, int] | None = None
    args: str | None = None  # program command line, e.g. "8192 10000"
    values: tuple[tuple[str, float], ...] = ()  # named values, e.g. (("n", 1048576.0),)
    # the template arguments of the instance analysed (a profiled kernel's signature names
    # it: ``conv1d<double>``), in the order of the kernel's or enclosing function's template
    # parameters: its types win over the launch's and the first instantiation's (numeric
    # arguments are left to the launch: binding them measured worse on val's OpenMP regions)
    instantiation: tuple[str, ...] = ()


@dataclass(frozen=True)
class Calibration:
    """The estimator's few fitted constants (``scripts/calibration.py`` shows their fit; each
    was chosen on the even-hashed half of the dev programs and checked on the odd half).

    * ``default_trips``: trips of a ``for`` loop whose bound cannot be evaluated. Unknown
      bounds are problem sizes or per-element neighbour counts; 16 (fitted among 8-64, the
      range such loops have in HeCBench-like codes; 1 would make every loop free).
    * ``default_while``: trips of a ``while``/``do`` loop (convergence, search loops).
    * ``nested_default``: an unknown loop inside another unknown loop gets
      ``default / nested_default`` trips: a thread's work is bounded, 32^3 is not typical.
    * ``resident_fraction`` / ``resident_write_fraction``: share of the reads / writes of a
      working set that fits in L2 which reaches DRAM during the kernel (L2 is write-back:
      written lines stay dirty in L2 after the kernel ends).
    * ``capacity_miss``: share of a buffer's re-references that miss once it outgrows L2.
    * ``launch_floor``: DRAM bytes every launch moves (parameters, runtime state, a small
      kernel's code); the smallest launches of the dev set move 3-5 kB. With compiled counts
      the kernel's code is added as well (``KernelPtx.code_bytes``): after ncu's cache flush
      every instruction a launch runs comes from DRAM once (a 7,000-instruction kernel,
      ~110 kB).
    * ``omp_thread_ints``: integer instructions the OpenMP device runtime executes per GPU
      thread (team/thread state initialisation, static loop-chunk computation).
    * ``omp_iteration_ints``: integer instructions per iteration of a work-shared loop
      (the runtime's 64-bit induction variable, chunk bounds and the loop test).
    * ``capped_trips``: iterations per thread of an OpenMP work-shared loop of unknown size
      launched at the runtime's team limit (the launch says only that the loop has at least
      teams x threads iterations).
    * ``default_block`` / ``default_grid``: launch assumed when nothing gives it.
    * ``dependent_cycles``: cycles a warp waits on average between dependent instructions,
      the pace of a launch too small to fill the GPU (``launch_time``); the small launches
      of the dev set that run longest take 20-380 cycles per instruction of a thread.
    * ``load_cycles``: cycles a thread waits for each of its loads from global memory over
      ``dependent_cycles`` (an L2 hit takes ~200; loads of one address by a whole warp
      are L1 hits, not charged): without it the latency-limited dev kernels that load
      most per instruction ran a median 2x longer than estimated.
    * ``chain_exponent`` / ``chain_pivot``: how a thread's dependent chain, counted as every
      instruction waiting ``dependent_cycles`` on the one before, grows with its length
      (``launch_time``): as its 0.9th power about 10^5 cycles. On the dev set the measured
      times of the latency-limited launches grow as the 0.86th power of their estimates (a
      10x longer estimate ran 7.3x longer): long chains overlap (unrolled iterations,
      independent sums), short ones wait on more than their count. Launch times within 2x
      (source counts): even-hashed programs 61.8 -> 64.3%, odd 64.1 -> 67.0%; the median
      error is unchanged (0.19-0.20). It matters to the verdict through the display's
      frames: a latency-limited estimate just past a frame's start mostly ran shorter.
    * ``atomic_cycles``: cycles one atomic update of an address holds it (updates of one
      address serialise in L2; ``launch_time.ATOMIC_CYCLES``, measured on the dev set).
    * ``dram_efficiency``: the share of the peak DRAM bandwidth a launch sustains, for its
      duration (not its bytes): the dev kernels whose time the DRAM roof sets and whose
      counts are within 2x run a median 10^0.14 = 1.38x longer than at the peak (val: 1.48x).
    * ``launch_seconds``: the shortest a launch runs (block dispatch and drain): the shortest
      of the 906 dev kernels took 2.0 us, and those estimated at that floor a median 3.4 us
      (deciles 2.5-11 us); the sweep of the launch time (median |log10|) picks 3 us.
    * ``warp_cycles``: cycles an SM takes to start and retire a warp, however little it does:
      the dev launches of over 4 M threads that do least ran 11-12 cycles a warp on each SM
      (1.7 G threads that almost all exit at once: 6.1 ms), the streaming ones 35 or more.
    """

    default_trips: float = 16.0
    default_while: float = 16.0
    nested_default: float = 4.0
    resident_fraction: float = 1.0
    resident_write_fraction: float = 0.5
    capacity_miss: float = 0.02
    launch_floor: float = 4096.0
    omp_thread_ints: float = 30.0
    omp_iteration_ints: float = 15.0
    capped_trips: float = 8.0
    default_block: tuple[int, int, int] = (256, 1, 1)
    default_grid: tuple[int, int, int] = (4096, 1, 1)
    # resident threads per SM where the GPU's profile does not give them (Ampere GA10x's):
    # local memory's footprint and a launch's waves
    threads_per_sm: int = 1536
    l1_bytes_per_sm: int = 128 * 1024  # L1 data cache + shared memory per SM (Ampere GA10x)
    dependent_cycles: float = 32.0
    load_cycles: float = 200.0
    chain_exponent: float = 0.9
    chain_pivot: float = 1.0e5
    atomic_cycles: float = ATOMIC_CYCLES
    dram_efficiency: float = 0.72
    launch_seconds: float = 3.0e-6
    warp_cycles: float = 11.0


CALIBRATION = Calibration()


def analyze(
    kernel: Kernel,
    detection: Detection,
    gpu: GpuProfile,
    inputs: Inputs | None = None,
    config: Config | None = None,
    calibration: Calibration | None = None,
    compiled: CompiledCounts | None = None,
    *,
    read: SourceReader | None = None,
) -> KernelEstimate:
    """Count one kernel and estimate its launch's DRAM traffic on ``gpu``. ``compiled``: PTX
    per-line counts (``compiled.py``) that replace the source FLOP/integer counts. ``read``
    reads the other files of the folder (launch sites, callers, device functions; open
    buffers first), else the disk."""
    view = source_view(read)
    cal = calibration or CALIBRATION
    inputs = inputs or Inputs()
    values: dict[str, str | float] = {}
    if config is not None and config.args:
        values.update(parse_assignments(config.args))
    args = inputs.args
    if args and "=" in args and re.search(r"[A-Za-z_]\w*\s*=", args):
        values.update(parse_assignments(args))
    values.update(dict(inputs.values))
    root = _root(kernel.node if kernel.node is not None else kernel.body)
    decls = declarations(root, detection.macros)
    aliases = dict(decls.aliases)
    structs, struct_sizes = dict(decls.structs), dict(decls.struct_sizes)
    templates = dict(decls.struct_templates)
    member_types = dict(decls.member_types)
    struct_arrays = dict(decls.struct_arrays)
    for header in _header_declarations(detection, view):
        # the structs and type aliases of the local headers the file includes (its own
        # declarations win; an alias from the branch the preprocessor takes)
        for name, fields in header.structs.items():
            structs.setdefault(name, fields)
        for name, size in header.struct_sizes.items():
            struct_sizes.setdefault(name, size)
        for name, template in header.struct_templates.items():
            templates.setdefault(name, template)
        for name, types in header.member_types.items():
            member_types.setdefault(name, types)
        for name, arrays_ in header.struct_arrays.items():
            struct_arrays.setdefault(name, arrays_)
        for name, target in header.aliases.items():
            aliases.setdefault(name, target)
    arrays = {
        g.name: (g.type_text, g.elements)
        for g in decls.globals.values()
        if "[]" in g.type_text and g.elements
    }
    ctx = host_context(
        kernel, detection, inputs.block, inputs.grid, args, values, view,
        gpu.device_properties, structs, inputs.instantiation, struct_sizes, arrays,
    )  # fmt: skip
    macros = {m.name: (m.params, m.body) for m in detection.macros.values()}
    for hip_name, cuda_name in HIP_INDEX_MACROS.items():  # hipThreadIdx_x is threadIdx.x
        macros.setdefault(hip_name, (None, cuda_name))
    constants = set(detection.constants)
    for unit in _includers(detection.file, read):
        # a kernel file #included by another sees the includer's macros and constants
        for m in unit.macros.values():
            macros.setdefault(m.name, (m.params, m.body))
            if m.params is None and m.body and parse_type(m.body).kind != "unknown":
                aliases.setdefault(m.name, m.body.strip())  # #define REAL double
        for name, text_ in unit.constants.items():
            ctx.texts.setdefault(name, text_)
            constants.add(name)
    for name, (mparams, mbody) in macros.items():
        # ``#define su3_matrix dsu3_matrix``: a macro naming a struct (or another alias) is
        # that type, as ``#define REAL double`` is
        target = mbody.strip() if mparams is None and mbody else ""
        if target in structs or (target in aliases and target != name):
            aliases.setdefault(name, target)
    offload = kernel.is_offload
    # (what the kernel indexes by matters only to a launch nothing gives)
    indexed = 1 if offload or (ctx.block and ctx.grid) else _index_dims(kernel, detection)
    block = ctx.block or _ASSUMED_BLOCKS.get(indexed, cal.default_block)
    grid = ctx.grid or _assumed_grid(indexed, block, cal)
    launch_from = _launch_from(kernel, ctx, inputs, block)
    if launch_from == "guard":
        grid = _covering_grid(guard_bounds(kernel, ctx), block)
    if offload:
        block, grid = _team_shape(kernel, ctx, block, grid)
    # the user's type hints, over what the source gives (not over a profiled instance)
    hinted = {} if inputs.instantiation else _type_hints(values, detection, aliases)
    for name, type_text in hinted.items():
        aliases.setdefault(name, type_text)  # ``// roofline: dfloat=double``: a type's meaning
    if not offload:
        if inputs.instantiation:
            ctx.template_args = _instance_types(kernel, ctx.template_args, inputs.instantiation)
        assumed_types = _template_bindings(kernel, ctx, aliases, hinted)
    else:
        assumed_types = _enclosing_template(
            kernel,
            aliases,
            {**ctx.host_template, **_closure_types(kernel, ctx)},
            inputs.instantiation,
            hinted,
        )
    for name, type_text in list(aliases.items()) if member_types else ():
        # ``typename VectorType::ScalarType`` with VectorType bound to ``Vector<double>``
        for member, member_type in member_aliases(name, type_text, templates, member_types).items():
            aliases.setdefault(member, member_type)
    settings = Settings(
        default_trips=cal.default_trips,
        default_while=cal.default_while,
        nested_default=cal.nested_default,
        omp_iteration_ints=cal.omp_iteration_ints,
        capped_trips=cal.capped_trips,
        # OpenMP regions are clang's (its libdevice sqrtf is the approximation)
        prec_sqrt=not offload and (config is None or config.build_compiler == "nvcc"),
        unroll_strided=not offload and (config is None or config.build_compiler == "nvcc"),
        split_remainder=offload,
    )
    dims = {
        "tx": float(block[0]),
        "ty": float(block[1]),
        "tz": float(block[2]),
        "bx": float(grid[0]),
        "by": float(grid[1]),
        "bz": float(grid[2]),
    }
    globals_: dict[str, Var] = {}
    host_set: dict[str, float] = {}  # scalars the host gave a value (``cudaMemcpyToSymbol``)
    for g in decls.globals.values():
        t = parse_type(g.type_text.replace("[]", "*"), aliases)
        space = {"constant": "constant", "shared": "shared"}.get(g.space, "global")
        if g.space == "texture":
            continue
        if g.space == "host" and not t.pointer:
            # a host struct (``struct Fields {...} F``): its fields are values and arrays of
            # their own (``F.x``), as a struct passed by value
            globals_[g.name] = Var(t, const=True)
            instantiate(globals_[g.name], g.type_text, structs, templates)
            continue
        globals_[g.name] = Var(t, buffer=g.name, space=space, arrdims=g.type_text.count("[]"))
        if not t.pointer and "[]" not in g.type_text and (v := ctx.get(g.name)) is not None:
            host_set[g.name] = v
        if g.elements:
            ctx.extents.setdefault(g.name, g.elements)
    if host_set:
        # they hold it unless the kernel stores to them or hands them on by address
        # (``atomicAdd(&count, 1)``)
        body = kernel.body
        changed = (
            stored_names(body) | set(_ADDRESS_TAKEN.findall(text(body)))
            if body is not None
            else set()
        )
        for name, v in host_set.items():
            if name not in changed:
                globals_[name].val = v
    # the file's functions, then separately compiled device code in sibling files (-rdc)
    functions = FunctionTable(detection, exclude=kernel.name, read=view, macros=macros)
    counter = ThreadCounter(
        functions=functions,
        macros=macros,
        lookup=ctx.get,
        aliases=aliases,
        structs=structs,
        struct_sizes=struct_sizes,
        globals_=globals_,
        settings=settings,
        dims=dims,
        block=block,
        grid=grid,
        offload=offload,
        constants=frozenset(constants),
        include=lambda rel, including: included_body(rel, including, view),
        file=detection.file,
    )
    passed = (
        _parsed_lambdas(ctx.lambdas)
        if offload
        else _passed_lambdas(kernel, ctx.launch.args if ctx.launch else (), ctx.lambdas)
    )
    counter.inputs = replace(
        counter.inputs,
        template_names=_template_names(kernel),
        texture_types={g.name: g.type_text for g in decls.globals.values() if g.space == "texture"},
        written=(
            stored_names(kernel.body)
            if (offload or ctx.copied) and kernel.body is not None
            else frozenset()
        ),
        copied=frozenset(ctx.copied) if not offload else frozenset(),
        struct_templates=templates,
        member_types=member_types,
        literal_constants=_literal_constants(kernel_function(kernel)),
        constant_types={
            name: t
            for name, type_text in detection.constant_types.items()
            if (t := parse_type(type_text, aliases)).is_float and not t.pointer
        },
        extents=ctx.extents,
        struct_arrays=struct_arrays,
        passed_lambdas=passed,
        captured_types={
            nm: ctx.types[nm]
            for lam in passed.values()
            for nm in identifiers(lam)
            if nm in ctx.types
        },
    )
    body = kernel.body
    if offload:
        sections = mapped_sections(
            (*kernel.clauses, *(c for r in detection.data_regions for c in r.clauses))
        )
        for name, tyt in ctx.types.items():
            t = parse_type(tyt, aliases)
            if not t.pointer and t.kind == "unknown" and name in sections:
                t = replace(t, pointer=1)  # `auto p = v.data()` moved as a section `p[0:n]`
            if t.pointer:
                globals_.setdefault(
                    name, Var(t, buffer=name, space="global", arrdims=tyt.count("[]"))
                )
            else:
                globals_[name] = Var(t, val=ctx.get(name), const=True)
                instantiate(globals_[name], tyt, structs, templates)
        counter.par.parallel_default, counter.par.parallel_assumed = _parallel_default(
            kernel, ctx, cal, frozenset(macros)
        )
        if body is not None and body.type in LOOP_MACRO_STATEMENTS:
            looped = loop_macro(body, body.next_named_sibling, macros)
            if looped is not None:
                body = looped[0]
        counter.par.reductions = _reduction_types(kernel, ctx, aliases)
        region = _offload_region(kernel, body, counter)
        counter.private_copies(kernel.clauses)
        if body is not None:
            if region is not None:
                counter.region(region, body)
            else:
                counter.run(body)
        units = counter.par.max_parallel
        gpu_threads = (
            float(math.prod(block) * math.prod(grid))
            if ctx.block and ctx.grid
            else max(min(units, 65536.0 * 4), 1.0)
        )
        counts = counter.result(units, scale=units)
        threads = units
    else:
        scope = counter.cursor.scopes[0]
        for ptype, pname in function_params(kernel.node) if kernel.node is not None else []:
            if not pname:
                continue
            t = parse_type(ptype, aliases)
            if t.pointer:
                scope[pname] = Var(t, buffer=pname, space="global", arrdims=ptype.count("[]"))
            else:
                scope[pname] = Var(t, val=ctx.get(pname), const=True)
                instantiate(scope[pname], ptype, structs, templates)
        if body is not None:
            counter.run(body)
        threads = float(math.prod(block) * math.prod(grid))
        gpu_threads = threads
        counter.cursor.line, counter.cursor.w = (
            kernel.line,
            1.0,
        )  # the prologue, booked on the kernel line
        counter.add_int(settings.int_entry)
        counts = counter.result(threads)
    if compiled is not None and compiled.ptx is not None:
        counts = substitute(
            counts,
            kernel,
            compiled.ptx,
            settings.unroll_default,
            unroll_strided=settings.unroll_strided,
            flops_only=compiled.flops_only,
            chunk_share=min(1.0, gpu_threads / threads) if offload and threads > 0 else 1.0,
            template_args=inputs.instantiation if offload else ctx.template_args,
        )
    threads_per_sm = gpu.max_threads_per_sm or cal.threads_per_sm  # resident, per SM
    # the bytes of the element a buffer's allocation is counted in: its pointer's, as the
    # kernel (a parameter) or the region (a host variable) declares it (not a size guessed
    # for a type nothing defines)
    declared = {**globals_, **counter.cursor.scopes[0]}
    element_bytes = {
        name: counter.type_bytes(pointee)
        for name in ctx.extents
        if (var := declared.get(name)) is not None
        and var.type.pointer
        and ((pointee := var.type.deref()).kind != "unknown" or pointee.name in struct_sizes)
    }
    traffic = functools.partial(
        estimate_traffic,
        extents=ctx.extents,
        l2_bytes=float(gpu.l2_bytes),
        model=CacheModel(
            resident_fraction=cal.resident_fraction,
            resident_write_fraction=cal.resident_write_fraction,
            capacity_miss=cal.capacity_miss,
            launch_floor=cal.launch_floor,
        ),
        resident_threads=float(gpu.sm_count * threads_per_sm),
        l1_bytes=float(gpu.sm_count * cal.l1_bytes_per_sm),
        code_bytes=float(compiled.ptx.code_bytes) if compiled and compiled.ptx else 0.0,
        element_bytes=element_bytes,
    )
    mem = without_host_memory(counts, ctx.mapped, traffic)
    totals = {p: counts.flops.get(p, 0.0) * threads for p in ("fp64", "fp32", "fp16")}
    tensor_peak = gpu.tensor_peak(counts.tensor_kind) if counts.flops.get("tensor") else None
    if tensor_peak:  # tensor-core FLOPs, where the GPU has tensor cores for their type
        totals["tensor"] = counts.flops["tensor"] * threads
    totals["int"] = counts.int_ops * threads
    # every thread of an offloaded region runs the runtime's set-up, and a loop of fewer
    # iterations than the launch's threads keeps only as many of them busy (100 iterations
    # over 256 teams: 100 threads walk the whole work)
    thread_ints = cal.omp_thread_ints if offload else 0.0
    timing = launch_time(
        {p: n for p, n in totals.items() if p != "tensor"},  # (its pace: not modelled)
        mem.kernel_bytes,
        gpu_threads,
        gpu,
        dependent_cycles=cal.dependent_cycles,
        loads=global_loads(counts.accesses, threads),
        load_cycles=cal.load_cycles,
        wavefronts=l1_wavefronts(counts.accesses, threads),
        threads_per_sm=threads_per_sm,
        contended=contended_updates(counts.accesses, threads),
        atomic_cycles=cal.atomic_cycles,
        blocks=float(math.prod(grid)),
        dram_efficiency=cal.dram_efficiency,
        launch_seconds=cal.launch_seconds,
        warp_cycles=cal.warp_cycles,
        busy_threads=min(gpu_threads, threads) if offload else None,
        thread_ints=thread_ints,
        unchained_ints=counts.release_control_ints * threads,
        chain_exponent=cal.chain_exponent,
        chain_pivot=cal.chain_pivot,
    )
    totals["int"] += thread_ints * gpu_threads
    mem = replace(mem, display_bytes=display_bytes(gpu, timing.seconds))
    dram = mem.dram_bytes
    ai: dict[str, float | None] = {}
    for p in totals:
        ops = totals[p]
        ai[p] = ops / dram if dram > 0 else (math.inf if ops > 0 else 0.0)
    return KernelEstimate(
        counts,
        mem,
        threads,
        gpu_threads,
        totals,
        ai,
        ctx,
        launch_from,
        assumed_types,
        _named_types(
            itertools.chain(
                counter.type_cache,
                ctx.types.values(),
                (t for t, _ in function_params(kernel.node) if kernel.node is not None),
            ),
            aliases,
        ),
        timing,
    )


def estimate(
    kernel: Kernel,
    detection: Detection,
    gpu: GpuProfile,
    inputs: Inputs | None = None,
    config: Config | None = None,
    compiled: CompiledCounts | None = None,
    *,
    read: SourceReader | None = None,
) -> Verdict:
    """``compiled``: compiler (PTX) counts for this kernel, or the reason there are none; the
    explanation then says where the counts came from. ``read``: see :func:`analyze`."""
    ridge = gpu.ridges()
    try:
        a = analyze(kernel, detection, gpu, inputs, config, compiled=compiled, read=read)
        tensor_peak = gpu.tensor_peak(a.counts.tensor_kind) if "tensor" in a.ai else None
        if tensor_peak:
            ridge["tensor"] = tensor_peak / gpu.dram_bandwidth
    except RecursionError:
        return Verdict(
            kernel=kernel.name,
            gpu=gpu.name,
            bound="unknown",
            source="static",
            confidence=0.0,
            ai={p: None for p in ridge},
            ridge=ridge,
            deciding=None,
            rationale="kernel too deeply nested to analyse",
        )
    ai = {p: (None if v is None else min(v, 1e9)) for p, v in a.ai.items()}
    bound, deciding = classify_bound(ai, ridge)
    terms = verdict_terms(a)
    if _tensor_core_ops(kernel, detection):
        terms = (*terms, NoteTerm(TENSOR_COUNTED if "tensor" in ridge else TENSOR_NOTE))
    if compiled is not None:
        terms = (*terms, NoteTerm(compiled.note))
    return Verdict(
        kernel=kernel.name,
        gpu=gpu.name,
        bound=bound,
        source="static",
        confidence=static_confidence(a, ai, ridge, deciding),
        ai=ai,
        ridge=ridge,
        deciding=deciding,
        terms=terms,
        counts=Counts(
            flops=dict(a.counts.flops),
            int_ops=a.counts.int_ops,
            bytes_loaded=a.memory.bytes_loaded / a.threads if a.threads else 0.0,
            bytes_stored=a.memory.bytes_stored / a.threads if a.threads else 0.0,
            display_bytes=a.memory.display_bytes / a.threads if a.threads else 0.0,
            per="iteration" if kernel.is_offload else "thread",
            threads=a.threads,
            counts_from="ptx" if compiled is not None and compiled.ok else "source",
            ptx_flops_only=compiled is not None and compiled.ok and compiled.flops_only,
            launch_from=a.launch_from,
            line_ops={ln - kernel.line: ops for ln, ops in a.counts.lines.items()},
            line_runs={ln - kernel.line: w for ln, w in a.counts.weights.items()},
            line_ptx=_line_instructions(kernel, compiled),
            sector_bytes={name: extra / a.threads for name, extra in a.memory.uncoalesced.items()}
            if a.threads
            else {},
        ),
    )


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _line_instructions(
    kernel: Kernel, compiled: CompiledCounts | None
) -> dict[int, LineInstructions]:
    """The PTX facts advice confirms its rules on, per line of the kernel (offset from its
    first line); empty without PTX counts."""
    if compiled is None or compiled.ptx is None:
        return {}
    out: dict[int, LineInstructions] = {}
    for ln, m in compiled.ptx.lines.items():
        facts = LineInstructions(
            m.divisions, m.to_fp64, m.flops_fp64, m.ld_global + m.ld_generic + m.ld_tex
        )
        if facts != LineInstructions():  # a line left out has none of them
            out[ln - kernel.line] = facts
    return out


_ADDRESS_TAKEN = re.compile(r"&\s*([A-Za-z_]\w*)")
_TENSOR_OPS = re.compile(r"\b(?:mma_sync|load_matrix_sync|store_matrix_sync|wgmma)\b|\bmma\.sync\b")
TENSOR_NOTE = "tensor-core (wmma/mma) loads, stores and multiply-adds are not counted"
TENSOR_COUNTED = (
    "tensor-core (wmma) multiply-adds are counted against the tensor-core peak, the tiles they "
    "load and store as each lane's share"
)


def _tensor_core_ops(kernel: Kernel, detection: Detection) -> bool:
    """Whether the kernel or a function it calls uses tensor-core matrix operations,
    which the counts leave out (as ncu's FLOP counters do)."""
    nodes = [kernel.body, *(f.node for n in kernel.callees if (f := detection.functions.get(n)))]
    return any(node is not None and _TENSOR_OPS.search(text(node)) for node in nodes)


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


MAX_HEADER_DEPTH = 3


def _header_declarations(detection: Detection, view: SourceView | None) -> list[Declarations]:
    """Declarations of the local headers ``#include "..."`` brings into the kernel's file,
    and of theirs, nearest first."""
    out: list[Declarations] = []
    seen = {detection.file}
    frontier = [(detection.file, detection.source)]
    for _ in range(MAX_HEADER_DEPTH):
        nxt = []
        for path, source in frontier:
            for rel in _local_includes(source):
                found = included_body(rel.decode("utf-8", "replace"), path, view)
                if found is None or found[0] in seen:
                    continue
                seen.add(found[0])
                body = found[1].text or b""
                out.append(_declarations_of(found[0], found[1], body, detection))
                nxt.append((found[0], body))
        frontier = nxt
    return out


@functools.lru_cache(maxsize=64)
def _local_includes(source: bytes) -> tuple[bytes, ...]:
    """The ``#include "..."`` paths of a file's text (the kernels of a file share them: a
    search per kernel made a file of N kernels cost N^2)."""
    return tuple(LOCAL_INCLUDE.findall(source))


# (header, its text's hash, the includer's macros) -> the header's declarations
_HEADER_DECLARATIONS: dict[tuple[str, int, int], tuple[object, Declarations]] = {}


def _declarations_of(path: str, node: Node, body: bytes, detection: Detection) -> Declarations:
    """``declarations`` of a header's parse, reused while its text and the includer's
    macros are the same (the kernels of a file share them)."""
    key = (path, hash(body), id(detection.macros))
    hit = _HEADER_DECLARATIONS.get(key)
    if hit is not None and hit[0] is detection.macros:
        return hit[1]
    if len(_HEADER_DECLARATIONS) > 64:
        _HEADER_DECLARATIONS.pop(next(iter(_HEADER_DECLARATIONS)))
    decls = declarations(node, detection.macros)
    _HEADER_DECLARATIONS[key] = (detection.macros, decls)
    return decls


def _includers(path: str, read: SourceReader | None) -> list[Detection]:
    """Detections of the sibling files that ``#include`` the file at ``path`` (a kernel
    file compiled as part of another translation unit, ``#include "kernels.cu"``)."""
    return [u.detection for u, _starts in units_including(path, read)]


# the threads of each side of the square (cube) a kernel indexing two (three) dimensions is
# assumed to cover when nothing gives its launch: as many threads as a 1-D kernel's
# assumed 256 x 4096, 1 M (1024 x 1024; 128 x 128 x 64)
_ASSUMED_SIDES = {2: (1024, 1024, 1), 3: (128, 128, 64)}
_ASSUMED_BLOCKS = {2: (16, 16, 1), 3: (8, 8, 4)}


def _index_dims(kernel: Kernel, detection: Detection) -> int:
    """How many dimensions of the launch a CUDA kernel (or a function it calls) indexes by:
    3 when it reads ``threadIdx.z`` or ``blockIdx.z``, 2 for ``.y``, else 1."""
    texts = [kernel.body.text or b""] if kernel.body is not None else []
    for name in kernel.callees:
        f = detection.functions.get(name)
        if f is not None and f.node is not None:
            texts.append(f.node.text or b"")
    code = b"\n".join(texts)
    if _INDEX_Z.search(code):
        return 3
    return 2 if _INDEX_Y.search(code) else 1


_INDEX_Y = re.compile(rb"\b(?:threadIdx|blockIdx)\s*\.\s*y\b")
_INDEX_Z = re.compile(rb"\b(?:threadIdx|blockIdx)\s*\.\s*z\b")


def _assumed_grid(dims: int, block: tuple[int, int, int], cal: Calibration) -> tuple[int, int, int]:
    """The grid assumed when nothing gives it: ``default_grid``, or for a kernel indexing two
    (three) dimensions (``dims``) the blocks covering a 1024 x 1024 square (128 x 128 x 64
    cube) of threads, as many as a 1-D kernel is assumed to run (a tiled matrix product's
    rows and columns: not 1 M columns of a single row); the block assumed with it is 16 x 16
    (8 x 8 x 4): ``_ASSUMED_BLOCKS``."""
    sides = _ASSUMED_SIDES.get(dims)
    if sides is None:
        return cal.default_grid
    x, y, z = (max(1, -(-side // max(b, 1))) for side, b in zip(sides, block, strict=True))
    return (x, y, z)


def _launch_from(
    kernel: Kernel, ctx: HostContext, inputs: Inputs, block: tuple[int, int, int]
) -> Literal["given", "source", "guard", "assumed"]:
    """Where a CUDA launch's size comes from. When the source does not give the grid, the
    launch is assumed to cover the kernel's bounds check exactly when its bound is known
    ("guard": no assumed thread idles past it, doing index work and moving no bytes), else
    assumed outright (the bound, if any, is then inferred from the assumed launch)."""
    if kernel.is_offload:
        return "given" if inputs.block and inputs.grid else "source"
    if inputs.block and inputs.grid:
        return "given"
    if ctx.grid is not None and ctx.block is not None:
        return "source"
    if ctx.grid is None and guard_bounds(kernel, ctx):
        return "guard"
    return "assumed"


def _covering_grid(bounds: dict[str, float], block: tuple[int, int, int]) -> tuple[int, int, int]:
    """The grid whose threads cover ``bounds`` (by dimension) with ``block``."""
    return (
        max(1, math.ceil(bounds.get("x", block[0]) / block[0])),
        max(1, math.ceil(bounds.get("y", block[1]) / block[1])),
        max(1, math.ceil(bounds.get("z", block[2]) / block[2])),
    )


def _named_types(parsed: Iterable[str], aliases: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The types of the texts the walk parsed that no declaration in view defines and that
    were taken by their name (``dfloat``: float), with the type taken."""
    words = {w for type_text in parsed for w in re.findall(r"[A-Za-z_]\w*", type_text)}
    named = ((w, named_like(w, aliases)) for w in sorted(words))
    return tuple((w, scalar_name(t)) for w, t in named if t)


def _type_hints(
    values: Mapping[str, str | float], detection: Detection, aliases: Mapping[str, str]
) -> dict[str, str]:
    """The values of ``// roofline: T=double`` hints (and ``--args``/``args``) that name a
    type: they bind template type parameters of that name."""
    given: dict[str, str | float] = {**parse_hints(detection.source), **values}
    return {
        name: v.strip()
        for name, v in given.items()
        if isinstance(v, str) and parse_type(v.strip(), dict(aliases)).kind != "unknown"
    }


def _template_bindings(
    kernel: Kernel, ctx: HostContext, aliases: dict[str, str], hinted: Mapping[str, str]
) -> tuple[str, ...]:
    """``template <typename T, int BS>``: T from a ``// roofline: T=...`` hint, else the
    launch's template arguments (the profiled instance's types first), else deduced from
    the launch's arguments, else ``float`` (returned: the types assumed); BS
    from them when numeric, else from a default argument; a function passed as a template
    argument by name."""
    deduced = _deduced_types(kernel, ctx)
    assumed: list[str] = []
    for i, tp in enumerate(kernel.template_params):
        tp = tp.strip()
        arg = ctx.template_args[i].strip() if i < len(ctx.template_args) else None
        default = None
        if "=" in tp:
            tp, _, default = tp.partition("=")
            tp, default = tp.strip(), default.strip()
        parts = tp.split()
        if not parts:
            continue
        name = parts[-1].lstrip("*&.")
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", tp)  # float (*F)(float): a function
        if fp is not None:
            name = fp.group(1)
        if parts[0] in ("typename", "class"):
            given = hinted.get(name) or arg or deduced.get(name) or default
            aliases[name] = given or "float"
            if not given:
                assumed.append(name)
        else:
            src = arg or default
            if src is not None and name not in ctx.fixed:
                v = ctx.eval_text(src)
                if v is not None:
                    ctx.fixed[name] = v
                elif (function := _function_argument(src)) is not None:
                    aliases[name] = function  # a function: F(x) calls it
    return tuple(assumed)


def _function_argument(arg: str) -> str | None:
    """The function a template argument names (``sub``, ``&ns::sub``), else None."""
    return arg.lstrip("& ") if re.fullmatch(r"&?\s*[A-Za-z_][\w:]*", arg) else None


def _instance_types(
    kernel: Kernel, launch: tuple[str, ...], instantiation: tuple[str, ...]
) -> tuple[str, ...]:
    """The launch's template arguments with the instantiation's types in the type
    parameters' places (numeric arguments stay the launch's)."""
    out = []
    for i, tp in enumerate(kernel.template_params):
        words = tp.split("=")[0].split()
        given = launch[i] if i < len(launch) else ""
        if words and words[0] in ("typename", "class") and i < len(instantiation):
            given = instantiation[i]
        out.append(given)
    return tuple(out)


def _deduced_types(kernel: Kernel, ctx: HostContext) -> dict[str, str]:
    """Template type parameters deduced from the launch's arguments, as C++ does: a
    parameter ``Op op`` given ``Square()``/``Square{..}`` or a host variable of type
    ``Square`` makes ``Op`` = ``Square`` (so ``op(x)`` runs ``Square::operator()``); a
    parameter ``const T *x`` given a host ``double *d_x`` makes T double."""
    if ctx.launch is None or kernel.node is None:
        return {}
    out: dict[str, str] = {}
    for (ptype, _), arg in zip(function_params(kernel.node), ctx.launch.args, strict=False):
        t, stars = type_name(ptype)
        if not re.fullmatch(r"[A-Za-z_]\w*", t):
            continue
        m = TEMPORARY.match(arg)
        if (arg.lstrip().startswith("[") or arg.strip() in ctx.lambdas) and not stars:
            out.setdefault(t, "lambda")  # a closure type (``_passed_lambdas`` runs it)
        elif m is not None and not stars:
            out.setdefault(t, m.group(1))
        elif arg.strip() in ctx.types:
            # `const T *x` given `d_a` declared `double *d_a` (or `T *d_a` in a function
            # whose instantiation makes T double): T is double
            host, host_stars = type_name(ctx.types[arg.strip()])
            host = ctx.host_template.get(host, host)  # "": a parameter nothing instantiates
            # a pointee only of a type known here (`T *` of an unknown typedef stays assumed)
            known = not stars or parse_type(host).kind != "unknown"
            if host and host_stars == stars and known:
                out.setdefault(t, host)
    return out


def _enclosing_template(
    kernel: Kernel,
    aliases: dict[str, str],
    given: Mapping[str, str],
    instantiation: tuple[str, ...],
    hinted: Mapping[str, str],
) -> tuple[str, ...]:
    """An offload region inside ``template <typename T> void f(...)``, or in a method of
    ``template <class T> struct S``: T is a ``// roofline: T=...`` hint, else the
    instantiation's argument in its position, else what the function's first instantiation
    or call gives (``given``; for the class, its first use with arguments in the file:
    ``S<double> s``), else its default, else ``float`` (returned: the types assumed)."""
    p = kernel_function(kernel)
    if p is None or p.parent is None:
        return ()
    template = p.parent if p.parent.type == "template_declaration" else None
    if template is None:
        template, given = _class_template(p)
        if template is None:
            return ()
    assumed: list[str] = []
    params = template.child_by_field_name("parameters")
    for i, tp in enumerate(params.named_children if params is not None else []):
        arg = instantiation[i].strip() if i < len(instantiation) else ""
        if tp.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
            default = tp.child_by_field_name("default_type")
            name = _parameter_name(tp)
            if name:
                arg = hinted.get(name) or arg
                if arg:
                    aliases[name] = arg
                elif name in aliases:
                    continue
                elif given.get(name):
                    aliases[name] = given[name]
                elif default is not None and default.text:
                    aliases[name] = default.text.decode()
                else:
                    aliases[name] = "float"
                    assumed.append(name)
        elif tp.type in ("parameter_declaration", "optional_parameter_declaration"):
            declarator = tp.child_by_field_name("declarator")
            if declarator is not None and declarator.type == "function_declarator":
                # ``float (*G)(float, float)`` given ``sub``: ``G(x, y)`` calls sub
                name = declared_name(declarator)
                function = _function_argument(arg or given.get(name, ""))
                if name and function is not None:
                    aliases.setdefault(name, function)
    return tuple(assumed)


def _closure_types(kernel: Kernel, ctx: HostContext) -> dict[str, str]:
    """The template type parameters of an offload region's function that a call gives a
    lambda or a functor for (``F`` of ``forall(int n, F f)`` called with ``[=](int i)
    {...}`` or ``Saxpy{x, y, a}``): a closure type, or the functor's, as C++ deduces it;
    not a number's type, which nothing else fixes."""
    fn = kernel_function(kernel)
    if fn is None or not (ctx.lambdas or ctx.functors):
        return {}
    out: dict[str, str] = {}
    for ptype, pname in function_params(fn):
        t = type_name(ptype)[0]
        given = "lambda" if pname in ctx.lambdas else ctx.functors.get(pname)
        if given and not ctx.host_template.get(t):
            out[t] = given
    return out


def _parameter_name(tp: Node) -> str:
    """The name a template parameter declares (``T`` of ``typename T = float``), else ""."""
    node = tp.child_by_field_name("name") or next(
        (c for c in tp.named_children if c.type in ("type_identifier", "identifier")), None
    )
    return text(node) if node is not None else ""


def _class_template(fn: Node) -> tuple[Node | None, dict[str, str]]:
    """The ``template <...>`` declaration of the class template whose body defines method
    ``fn``, and the type arguments of the class's first use with arguments elsewhere in the
    file (``S<double> s(n)``, ``new S<float>``) by parameter name; (None, {}) when ``fn`` is
    no such method."""
    node = fn.parent
    while node is not None and node.type not in ("class_specifier", "struct_specifier"):
        if node.type in ("function_definition", "translation_unit"):
            return None, {}
        node = node.parent
    if node is None or node.parent is None or node.parent.type != "template_declaration":
        return None, {}
    template, name = node.parent, text(node.child_by_field_name("name"))
    params = template.child_by_field_name("parameters")
    names = [_parameter_name(c) for c in (params.named_children if params is not None else [])]
    source = _root(template).text or b""
    rest = (source[: template.start_byte] + source[template.end_byte :]).decode("utf-8", "replace")
    for m in re.finditer(r"\b" + re.escape(name) + r"\s*<([^<>;{}()]*)>", rest):
        args = [a.strip() for a in m.group(1).split(",")]
        if args and all(args) and not set(args) & set(names):
            return template, dict(zip(names, args, strict=False))
    return template, {}


def _literal_constants(fn: Node | None) -> frozenset[str]:
    """Names the function declares ``const`` or ``constexpr`` with a number
    (``const double dt = 0.5;``): constants the compiler sees, as a literal or a macro
    (an offload region's, a kernel's own), not values only the run gives."""
    if fn is None:
        return frozenset()
    hit = _LITERAL_CONSTANTS.get(fn.id)
    if hit is not None and hit[0] == fn:
        return hit[1]
    out: set[str] = set()
    stack = [fn]
    while stack:
        n = stack.pop()
        if n.type == "declaration":
            type_node = n.child_by_field_name("type")
            head = text(n)[: (type_node.start_byte - n.start_byte) if type_node else 0]
            if re.search(r"\b(?:const|constexpr)\b", head):
                for d in n.children_by_field_name("declarator"):
                    value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                    if value is not None and _NUMBER.fullmatch(text(value)):
                        out.add(declared_name(d))
            continue
        stack.extend(n.named_children)
    found = frozenset(out)
    _LITERAL_CONSTANTS[fn.id] = (fn, found)
    if len(_LITERAL_CONSTANTS) > 256:
        _LITERAL_CONSTANTS.popitem(last=False)
    return found


# by function node: the offload regions of one long ``main`` share it
_LITERAL_CONSTANTS: OrderedDict[int, tuple[Node, frozenset[str]]] = OrderedDict()
_NUMBER = re.compile(r"[-+]?\s*(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?")


def _passed_lambdas(
    kernel: Kernel, args: tuple[str, ...], held: Mapping[str, str]
) -> dict[str, Node]:
    """The kernel's parameters the launch passes a lambda for, each with the lambda parsed
    from the launch's argument text, or from the text of the lambda a name of the launch's
    scope holds (``held``: ``f`` of a helper ``for_each(n, F f)`` its caller gave
    ``[=] __device__ (size_t i) { c[i] = a[i]; }``)."""
    params = function_params(kernel.node) if kernel.node is not None else []
    texts: dict[str, str] = {}
    for (_, p), a in zip(params, args, strict=False):
        lam = a if a.lstrip().startswith("[") else held.get(a.strip(), "")
        if p and lam.lstrip().startswith("["):
            texts[p] = lam
    return _parsed_lambdas(texts)


def _parsed_lambdas(texts: Mapping[str, str]) -> dict[str, Node]:
    """Each parameter's lambda (``[=](int i) {...}``), parsed from its text."""
    out: dict[str, Node] = {}
    for pname, arg in texts.items():
        plain = re.sub(r"\b__(?:device|host)__\b", "", arg)  # (not in the grammar's lambdas)
        tree = parse(f"auto __passed = {plain};".encode())
        found = descendants_of_type(tree.root_node, "lambda_expression", 1 << 62)
        if found:
            out[pname] = found[0]
    return out


def _template_names(kernel: Kernel) -> frozenset[str]:
    """The template parameters of the kernel, or of the function around an offload region."""
    fn = kernel_function(kernel)
    return frozenset(name for name, _ in template_params(fn)) if fn is not None else frozenset()


def _team_shape(
    kernel: Kernel,
    ctx: HostContext,
    block: tuple[int, int, int],
    grid: tuple[int, int, int],
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Threads per team and teams of an offload region: the launch when known, else the
    ``thread_limit``/``num_threads`` and ``num_teams`` clauses (OpenACC: ``num_workers`` x
    ``vector_length`` threads per gang, ``num_gangs`` gangs)."""
    if ctx.block and ctx.grid:
        return block, grid
    threads = teams = workers = None
    for c in kernel.clauses:
        if c.name in ("thread_limit", "num_threads", "vector_length") and c.items:
            threads = ctx.eval_text(c.items[0])
        elif c.name in ("num_teams", "num_gangs") and c.items:
            teams = ctx.eval_text(c.items[0])
        elif c.name == "num_workers" and c.items:
            workers = ctx.eval_text(c.items[0])
    if workers and workers > 0:
        # an OpenACC gang has num_workers x vector_length threads (NVHPC's vector default 128)
        threads = workers * (threads if threads and threads > 0 else 128.0)
    b = (int(threads), 1, 1) if threads and threads > 0 else block
    g = (int(teams), 1, 1) if teams and teams > 0 else grid
    return b, g


def _parallel_default(
    kernel: Kernel, ctx: HostContext, cal: Calibration, macros: frozenset[str]
) -> tuple[float, bool]:
    """Iterations assumed for an offloaded work-shared loop whose bound is unknown, and
    whether that is an assumption: the launch's teams x threads (the runtime sized the
    launch to the loop), unless the launch is at the runtime's team limit, where each thread
    runs an unknown number of iterations (``capped_trips``). A ``num_teams`` clause of
    constants (``num_teams(128)``, ``num_teams(NT)`` with ``NT`` a macro; ``macros``: the
    macro names) sized the launch, not the loop: one iteration per thread is then an
    assumption too. Without a launch, the launch assumed for a CUDA kernel
    (``default_block`` x ``default_grid`` threads), one iteration each."""
    if not (ctx.block and ctx.grid):
        return float(math.prod(cal.default_block) * math.prod(cal.default_grid)), True
    launched = float(math.prod(ctx.block) * math.prod(ctx.grid))
    if kernel.language != "omp":
        return launched, False
    teams = kernel.clause("num_teams")
    if not teams:
        capped = math.prod(ctx.grid) == OMP_DEFAULT_TEAMS
        return (launched * cal.capped_trips, True) if capped else (launched, False)
    return launched, all(set(NAME.findall(item)) <= macros for c in teams for item in c.items)


def _reduction_types(
    kernel: Kernel, ctx: HostContext, aliases: dict[str, str]
) -> tuple[DataType, ...]:
    """Types of the variables of an offload region's ``reduction(op: a, b)`` clauses (as
    the host declares them; unknown ones are left out)."""
    out: list[DataType] = []
    for c in kernel.clause("reduction"):
        for item in c.items:
            name = item.strip()
            tyt = ctx.types.get(name)
            if tyt is not None:
                t = parse_type(tyt, aliases)
                if t.kind != "unknown" and not t.pointer:
                    out.append(t)
    return tuple(out)


_WORKSHARE = frozenset({"for", "distribute", "loop"})


def _offload_region(kernel: Kernel, body: Node | None, counter: ThreadCounter) -> str | None:
    """How the region's statement runs: a work-shared loop (``for``/``distribute``/``loop``
    with ``collapse(n)``, marked on the counter; returns None), once per team (``"teams"``)
    or once per thread of a ``parallel`` region (``"parallel"``). A stacked combined
    pragma just before the statement counts too."""
    # detection appends nested constructs after "|" ("target teams | parallel"): the
    # counter meets those pragmas itself
    if kernel.language == "acc":
        return _acc_region(kernel, body, counter)
    words = set(kernel.directive.split("|", 1)[0].split())
    collapse = 1
    for c in kernel.clause("collapse"):
        m = re.search(r"\d+", c.text)
        if m:
            collapse = int(m.group(0))
    workshare = bool(words & _WORKSHARE)
    for t in _stacked_pragmas(kernel):
        stacked = parse_pragma(t)  # a metadirective: the directive it selects on a GPU
        words |= set(stacked.words)
        if _WORKSHARE & set(stacked.words):
            workshare = True
            for c in stacked.clauses:
                m = re.fullmatch(r"collapse\s*\(\s*(\d+)\s*\)", c.text)
                if m:
                    collapse = max(collapse, int(m.group(1)))
    if workshare and body is not None and body.type in ("for_statement", "while_statement"):
        counter.par.pending_parallel = collapse
        counter.par.pending_distribute = bool(words & {"distribute", "gang", "loop"})
        counter.par.pending_teams_only = teams_only(words)
        if "teams" in words and not (words & {"distribute", "loop"}):
            return "teams"
        return None
    if "teams" in words:
        if "parallel" in words:
            counter.par.pending_region = "parallel"
        return "teams"
    if "parallel" in words:
        return "parallel"
    return None


def _stacked_pragmas(kernel: Kernel) -> list[str]:
    """The texts of the pragmas stacked between a region's own pragma and its statement
    (``#pragma omp target`` over ``#pragma omp parallel for``), innermost first."""
    out: list[str] = []
    prev = kernel.body.prev_named_sibling if kernel.body is not None else None
    while (
        prev is not None
        and prev.type == "preproc_call"
        and prev.start_byte > kernel.span.start_byte
    ):
        arg = prev.child_by_field_name("argument")
        out.append(arg.text.decode("utf-8", "replace") if arg is not None and arg.text else "")
        prev = prev.prev_named_sibling
    return out


def _acc_region(kernel: Kernel, body: Node | None, counter: ThreadCounter) -> str | None:
    """How an OpenACC compute construct's statement runs: a ``parallel loop`` (or a
    ``parallel``/``kernels`` pragma stacked over a ``loop`` pragma) shares the loop
    (:func:`acc_loop_sharing`; returns None); a ``parallel`` region runs once per gang
    (gang-redundant mode, like an OpenMP ``teams`` region: returns ``"teams"``) until a
    ``loop gang`` shares a loop among the gangs; in a ``kernels`` region the compiler
    parallelises the outermost loops; a ``serial`` region runs once."""
    node = kernel.node
    if node is not None and node.type == "preproc_call":
        pragmas = [parse_pragma(pragma_text(node))]  # its own clauses, not the nested ones
        pragmas.extend(parse_pragma(t) for t in _stacked_pragmas(kernel))
    else:
        # ``_Pragma`` operators (the stacked ones are in the directive) or no node: the
        # directive's parts, the region's clauses with the first
        parts = kernel.directive.split("|")
        pragmas = [
            Pragma("acc", tuple(part.split()), tuple(kernel.clauses) if i == 0 else ())
            for i, part in enumerate(parts)
        ]
    words = {w for p in pragmas for w in p.words}
    sharing = next((s for p in pragmas if (s := acc_loop_sharing(p)) is not None), None)
    is_loop = body is not None and body.type in ("for_statement", "while_statement")
    if sharing is not None and is_loop:
        counter.par.pending_parallel = sharing.collapse
        counter.par.pending_distribute = sharing.gangs
        return None
    if "kernels" in words:
        counter.par.auto_loops = True
        return None
    if "serial" in words or "loop" in words:  # serial, or parallel loop seq
        return None
    return "teams"


def with_calibration(cal: Calibration, **changes: float) -> Calibration:
    return replace(cal, **changes)  # type: ignore[arg-type]
