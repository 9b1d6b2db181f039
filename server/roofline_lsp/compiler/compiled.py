"""Compiler-assisted counts: the per-line PTX instruction mix of a kernel (``ptx.py``) put in
place of the source-level operation counts of the estimator (``counting.py``).

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
- A device function the ``-Xcicc -O1`` compile keeps as a ``.func`` call: the call line gets
  the function's whole per-call cost (its lines, transitively its callees) when it has no loop
  (its lines' relative weights are then all 1, or less for branches: an upper bound); a callee
  with a loop has per-line weights the counter does not expose, so that line keeps its source
  count (a fallback).
- A loop statement's line holds the loop control (counter increment, compare, pointer bumps)
  that runs once per iteration in the ``-O1`` code. The build that runs (``-O3``) unrolls a loop
  of unknown trip count by 4 and a small constant one completely, as the counter assumes
  (``Settings.unroll_default`` / ``Loop.unrolled``): its integer instructions are weighted by
  ``trips / unroll`` executions (once when fully unrolled).
- A line of the kernel with PTX instructions but no statement start of its own (a continued
  expression) takes the weight of the nearest statement line above it; a line the counter
  costed but PTX has no instruction for costs nothing (folded or removed by the compiler).
- OpenMP offload regions (clang ``__omp_offloading_<dev>_<file>_<function>_l<line>``): the
  lines of the region's body in the entry and its outlined functions; the pragma line and the
  work-shared loop lines (runtime scheduling, calibrated in ``roofline.Calibration``) and the
  OpenMP runtime's functions keep the source model.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from roofline_lsp.compiler.ptx import (
    EMPTY,
    CompiledFile,
    LineMix,
    PtxFunction,
    PtxModule,
    compile_file,
    find_kernels,
    omp_region,
)
from roofline_lsp.detect.kernels import Detection, Kernel
from roofline_lsp.estimate.counting import ThreadCounts
from roofline_lsp.model.config import Config

__all__ = [
    "CompileRequest",
    "CompiledCounts",
    "KernelPtx",
    "compile_files",
    "compile_files_sync",
    "compiled_counts_for_file",
    "counts_for",
    "kernel_ptx",
    "substitute",
    "compiled_languages",
    "want_for",
]

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
_UNROLL_DEFAULT = 4.0


@dataclass(frozen=True)
class KernelPtx:
    """PTX counts of one kernel keyed by the lines of the kernel's file (one execution each)."""

    kernel: str  # the PTX symbol
    lines: Mapping[int, LineMix] = field(compare=False)
    fallback: frozenset[int] = frozenset()  # lines calling a .func with loops: source counts
    keep_source: frozenset[int] = frozenset()  # OpenMP pragma line (runtime model)
    compiler: str = "nvcc"
    # loop statement lines: the part of the line's (fp64, fp32, fp16, int) counts that runs
    # every iteration (the rest, e.g. the initialisation, runs once per entry of the loop)
    per_iteration: Mapping[int, tuple[int, int, int, int]] = field(
        default_factory=dict, compare=False
    )
    others: tuple[KernelPtx, ...] = ()  # other instantiations of a template kernel

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
    """What the estimator gets: PTX counts of the kernel, or why there are none."""

    ptx: KernelPtx | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.ptx is not None

    @property
    def note(self) -> str:
        if self.ptx is not None:
            return "counts: PTX"
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
    module: PtxModule, name: str, in_span: Any, stack: tuple[str, ...] = ()
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
    lines: dict[int, LineMix] = {}
    fallback: set[int] = set()
    for name in order:
        f = module.functions[name]
        for key, mix in f.callsite_lines.items():
            if not in_span(key):
                if key[1] > 0 and (mix.int_ops or _quad(mix)[:3] != (0, 0, 0)):
                    # inlined code whose call line the compiler did not record (clang emits
                    # no inlined_at before LLVM 17): its weight is unknown
                    return None
                continue
            ln = key[1]
            add = mix
            for c in mix.calls:
                cost = _call_cost(module, c, in_span)
                if cost is None:
                    fallback.add(ln)
                else:
                    add = add + cost
            lines[ln] = lines.get(ln, EMPTY) + add
    if not lines:
        return None  # no line information matching the kernel's source (e.g. no -lineinfo)
    keep = frozenset({kernel.line}) if kernel.is_offload else frozenset()
    per_iter: dict[int, tuple[int, int, int, int]] = {}
    for name in order:
        f = module.functions[name]
        for lp in f.loops:
            if not in_span(lp.control):
                continue
            # one pass through the loop minus the other lines of its body: what the loop
            # statement's line runs per iteration (the compare, the increments)
            rest = [0, 0, 0, 0]
            for k in lp.lines:
                if k != lp.control:
                    m = f.lines.get(k, EMPTY)
                    for i, v in enumerate(_quad(m)):
                        rest[i] += v
            line = _quad(f.lines.get(lp.control, EMPTY))
            body = _quad(lp.mix)
            part = tuple(max(0, min(body[i] - rest[i], line[i])) for i in range(4))
            old = per_iter.get(lp.control[1], (0, 0, 0, 0))
            per_iter[lp.control[1]] = tuple(  # type: ignore[assignment]
                max(a, b) for a, b in zip(old, part, strict=True)
            )
    return KernelPtx(entry.name, lines, frozenset(fallback), keep, compiler, per_iter)


def _quad(m: LineMix) -> tuple[int, int, int, int]:
    return (m.flops_fp64, m.flops_fp32, m.flops_fp16, m.int_ops)


# ---------------------------------------------------------------------------------------------
# Substitution


def pick_instantiation(counts: ThreadCounts, ptx: KernelPtx) -> KernelPtx:
    """Of a template kernel's instantiations, the first whose dominant floating-point precision
    is the source analysis's (no FLOPs in the source: the one with the fewest FLOPs)."""
    cands = (ptx, *ptx.others)
    if len(cands) == 1:
        return ptx
    src = (
        counts.flops.get("fp64", 0.0),
        counts.flops.get("fp32", 0.0),
        counts.flops.get("fp16", 0.0),
    )
    if max(src) <= 0:
        return min(cands, key=lambda c: sum(c.flop_mix()))
    want = max(range(3), key=lambda i: src[i])
    for c in cands:
        mix = c.flop_mix()
        if max(mix) > 0 and max(range(3), key=lambda i: mix[i]) == want:
            return c
    return ptx


def _weight_of(ln: int, weights: Mapping[int, float], ordered: list[int], default: float) -> float:
    w = weights.get(ln)
    if w is not None:
        return w
    # the nearest statement line above (a continued expression)
    best = None
    for x in ordered:
        if x > ln:
            break
        best = x
    return weights[best] if best is not None else default


def substitute(
    counts: ThreadCounts,
    kernel: Kernel,
    ptx: KernelPtx,
    unroll_default: float = _UNROLL_DEFAULT,
) -> ThreadCounts:
    """``counts`` with FLOPs and integer instructions from ``ptx`` line by line (see the module
    docstring); accesses, loops and weights unchanged."""
    ptx = pick_instantiation(counts, ptx)
    lo, hi = kernel.line, max(kernel.end_line, kernel.line)
    weights = counts.weights
    ordered = sorted(x for x in weights if lo <= x <= hi)
    default = weights.get(kernel.line, min(weights.values()) if weights else 1.0)
    loops = {lp.line: lp for lp in counts.loops}
    keep = set(ptx.fallback) | set(ptx.keep_source)
    keep |= {lp.line for lp in counts.loops if lp.parallel}
    new: dict[int, tuple[float, float, float, float]] = {}
    for ln, row in counts.lines.items():
        if ln in keep or not (lo <= ln <= hi):
            new[ln] = row
    for ln, mix in ptx.lines.items():
        if ln in keep:
            continue
        w = _weight_of(ln, weights, ordered, default)
        line = _quad(mix)
        lp = loops.get(ln)
        if lp is None or lp.parallel:
            new[ln] = (line[0] * w, line[1] * w, line[2] * w, line[3] * w)
            continue
        # a loop statement: its per-iteration part (all of it when PTX found no loop there)
        # runs trips times per entry; the loop control (integer) once per unrolled group
        trips = max(lp.trips, 0.0)
        each = ptx.per_iteration.get(ln, line)
        once = [line[i] - each[i] for i in range(4)]
        groups = 0.0 if lp.unrolled else trips / max(unroll_default, 1.0)
        fp = [(once[i] + each[i] * trips) * lp.weight for i in range(3)]
        new[ln] = (fp[0], fp[1], fp[2], (once[3] + each[3] * groups) * lp.weight)
    tot = [0.0, 0.0, 0.0, 0.0]
    for row in new.values():
        for i in range(4):
            tot[i] += row[i]
    # the counter's totals may include work booked outside the line table (none today); keep
    # the difference so nothing is lost
    src = [sum(r[i] for r in counts.lines.values()) for i in range(4)]
    orig = [
        counts.flops.get("fp64", 0.0),
        counts.flops.get("fp32", 0.0),
        counts.flops.get("fp16", 0.0),
        counts.int_ops,
    ]
    for i in range(4):
        extra = orig[i] - src[i]
        if extra > 1e-9 * max(abs(orig[i]), 1.0):
            tot[i] += extra
    return replace(
        counts,
        flops={"fp64": tot[0], "fp32": tot[1], "fp16": tot[2]},
        int_ops=tot[3],
        lines=new,
    )


# ---------------------------------------------------------------------------------------------
# Compiling (CLI, eval, server)

Language = Literal["cuda", "omp"]
DEFAULT_JOBS = 2  # compiles at a time (CI has 2 cores)


@dataclass(frozen=True)
class CompileRequest:
    """One file to compile for some of its kernels: CUDA kernel names, or OpenMP target
    lines as ``"@<line>"``."""

    path: str
    language: Language
    want: tuple[str, ...] = ()
    source: bytes | None = field(default=None, repr=False)  # unsaved buffer; None: on disk


def compiler_language(kernel_language: str) -> Language | None:
    """The compile used for a kernel of ``Kernel.language``: nvcc for CUDA/HIP (HIP through
    nvcc's CUDA mode rarely compiles; the failure is then the reason), clang for OpenMP."""
    if kernel_language in ("cuda", "hip"):
        return "cuda"
    if kernel_language == "omp":
        return "omp"
    return None


def compiled_languages(mode: str) -> frozenset[Language]:
    """The kernels that get compiler counts in ``counts`` mode ``mode``: ``"compiler"`` all
    that can be compiled; ``"auto"`` CUDA only: on the dev set, clang-16's OpenMP PTX made
    the OpenMP verdicts worse (balanced accuracy 0.835 -> 0.809: no ``inlined_at`` line
    info for inlined math, runtime-dominated regions), while nvcc's made the CUDA ones and
    every AI rank correlation better; ``"source"`` none."""
    if mode == "compiler":
        return frozenset({"cuda", "omp"})
    if mode == "auto":
        return frozenset({"cuda"})
    return frozenset()


def want_for(kernels: Sequence[Kernel], mode: str = "compiler") -> dict[Language, tuple[str, ...]]:
    enabled = compiled_languages(mode)
    out: dict[Language, list[str]] = {}
    for k in kernels:
        lang = compiler_language(k.language)
        if lang is None or lang not in enabled:
            continue
        w = f"@{k.line}" if lang == "omp" else k.name
        lst = out.setdefault(lang, [])
        if w not in lst:
            lst.append(w)
    return {lang: tuple(v) for lang, v in out.items()}


def default_cache(config: Config) -> Any:
    """The compile cache: namespace ``ptx`` in the default cache directory (``cache.py``);
    the LLM's ``cacheDir`` setting is not used for it."""
    from roofline_lsp.store.cache import ResultCache

    return ResultCache(namespace="ptx")


async def compile_files(
    requests: Sequence[CompileRequest],
    gpu: Any,
    config: Config,
    *,
    cache: Any = None,
    jobs: int = DEFAULT_JOBS,
    semaphore: asyncio.Semaphore | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[tuple[str, Language], CompiledFile]:
    """Compile every request, ``jobs`` compiler processes at a time, keyed by (path,
    language). Never raises: a failure is a :class:`CompiledFile` with its reason."""
    sem = semaphore or asyncio.Semaphore(max(jobs, 1))
    done = 0

    async def one(r: CompileRequest) -> tuple[tuple[str, Language], CompiledFile]:
        nonlocal done
        try:
            cf = await compile_file(
                r.path,
                r.source,
                language=r.language,
                gpu=gpu,
                nvcc_setting=config.nvcc,
                cache=cache,
                semaphore=sem,
                want=r.want,
            )
        except Exception as e:  # a bug while compiling must not cost the source verdict
            cf = CompiledFile(r.path, None, reason=f"{type(e).__name__}: {e}")
        done += 1
        if progress is not None:
            progress(done, len(requests))
        return (r.path, r.language), cf

    results = await asyncio.gather(*(one(r) for r in requests))
    return dict(results)


def compile_files_sync(
    requests: Sequence[CompileRequest], gpu: Any, config: Config, **kw: Any
) -> dict[tuple[str, Language], CompiledFile]:
    """:func:`compile_files` for callers without an event loop (the CLI)."""
    return asyncio.run(compile_files(requests, gpu, config, **kw))


def counts_for(cf: CompiledFile | None, kernel: Kernel, mode: str = "compiler") -> CompiledCounts:
    """The :class:`CompiledCounts` of ``kernel`` from its file's compile outcome."""
    lang = compiler_language(kernel.language)
    if lang is None:
        return CompiledCounts(reason=f"no compiler counts for {kernel.language}")
    tool = "clang" if lang == "omp" else "nvcc"
    if lang not in compiled_languages(mode):
        return CompiledCounts(reason=f"{tool}: OpenMP PTX counts only with counts=compiler")
    if cf is None:
        return CompiledCounts(reason=f"{tool}: not compiled")
    if cf.module is None:
        return CompiledCounts(reason=f"{tool}: {cf.reason}")
    try:
        kp = kernel_ptx(cf.module, kernel, cf.compiler or tool)
    except Exception as e:  # malformed PTX must not cost the source verdict
        return CompiledCounts(reason=f"{tool}: {type(e).__name__}: {e}")
    if kp is None:
        return CompiledCounts(reason=f"{tool}: kernel not in the PTX or no line info for it")
    return CompiledCounts(kp)


async def compiled_counts_for_file(
    path: str,
    source: bytes | None,
    detection: Detection,
    gpu: Any,
    config: Config,
    *,
    cache: Any = None,
    semaphore: asyncio.Semaphore | None = None,
) -> dict[int, CompiledCounts] | str:
    """For the language server: per kernel line, the counts to pass to ``estimate(...,
    compiled=)`` (a kernel whose compile failed carries the reason); or a one-line reason when
    ``config.counts`` is ``"source"`` or the file has no kernel. Never raises."""
    if config.counts == "source":
        return "compiler counts disabled (counts: source)"
    if not detection.kernels:
        return "no kernels"
    if cache is None:
        cache = default_cache(config)
    wants = want_for(detection.kernels, config.counts)
    reqs = [CompileRequest(path, lang, w, source) for lang, w in wants.items()]
    compiled = await compile_files(reqs, gpu, config, cache=cache, semaphore=semaphore)
    return {
        k.line: counts_for(compiled.get((path, lang)) if lang else None, k, config.counts)
        for k in detection.kernels
        for lang in [compiler_language(k.language)]
    }
