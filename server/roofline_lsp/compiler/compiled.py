"""Compiling for counts (the CLI, ``eval`` and the editor): which kernels are compiled in
each ``counts`` mode, files compiled a few at a time (cached, never raising), and each
kernel's :class:`~roofline_lsp.compiler.kernel_ptx.CompiledCounts` from its file's outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from roofline_lsp.compiler.compile_jobs import CACHE_NAMESPACE, blocking, build_flags
from roofline_lsp.compiler.compiled_file import CompiledFile, compile_file
from roofline_lsp.compiler.kernel_ptx import CompiledCounts, kernel_ptx
from roofline_lsp.compiler.toolchain import NamedGpu
from roofline_lsp.model.config import Config
from roofline_lsp.model.kernel import Detection, Kernel
from roofline_lsp.store.cache import ResultCache

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
    """The kernels that get compiler counts in ``counts`` mode ``mode``: all that can be
    compiled in ``"compiler"`` and ``"auto"`` (which takes only the FLOPs of OpenMP regions:
    :func:`counts_for`); none in ``"source"``."""
    if mode in ("compiler", "auto"):
        return frozenset({"cuda", "omp"})
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


def default_cache(config: Config) -> ResultCache:
    """The compile cache: namespace ``ptx`` in the cache directory (``--cache-dir`` /
    ``cacheDir``, which moves every cache; else the default one of ``cache.py``)."""
    return ResultCache(directory=config.llm.cache_dir, namespace=CACHE_NAMESPACE)


async def compile_files(
    requests: Sequence[CompileRequest],
    gpu: NamedGpu | None,
    config: Config,
    *,
    cache: ResultCache | None = None,
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
                nvcc_flags=build_flags(config.build_compiler),
            )
        except Exception as e:  # a bug while compiling must not cost the source verdict
            cf = CompiledFile(r.path, None, reason=f"{type(e).__name__}: {e}")
        done += 1
        if progress is not None:
            progress(done, len(requests))
        return (r.path, r.language), cf

    results = await asyncio.gather(*(one(r) for r in requests))
    return dict(results)


compile_files_sync = blocking(compile_files)


def counts_for(cf: CompiledFile | None, kernel: Kernel, mode: str = "compiler") -> CompiledCounts:
    """The :class:`CompiledCounts` of ``kernel`` from its file's compile outcome."""
    lang = compiler_language(kernel.language)
    if lang is None:
        return CompiledCounts(reason=f"no compiler counts for {kernel.language}")
    tool = "clang" if lang == "omp" else "nvcc"
    if lang not in compiled_languages(mode):
        return CompiledCounts(reason=f"{tool}: compiler counts off (counts={mode})")
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
    # clang's integer counts of an OpenMP region are mostly its runtime's (worksharing,
    # state machine): ``auto`` keeps the counter's, which books that runtime per GPU thread
    # and per iteration (``Calibration.omp_thread_ints``/``omp_iteration_ints``)
    return CompiledCounts(
        kp,
        flops_only=lang == "omp" and mode == "auto",
        required=cf.required,
        adapted=cf.adapted,
    )


async def compiled_counts_for_file(
    path: str,
    source: bytes | None,
    detection: Detection,
    gpu: NamedGpu | None,
    config: Config,
    *,
    cache: ResultCache | None = None,
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
