"""One call for the CLI and the server: :func:`compile_file` finds the compiler, picks the arch
and the translation unit, compiles in the bounded pool and parses, returning a
:class:`CompiledFile` with a reason instead of raising."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from roofline_lsp.compiler.compile_jobs import (
    DEFAULT_TIMEOUT,
    CompileMode,
    PtxFailure,
    PtxResult,
    blocking,
    compile_omp_ptx_async,
    compile_ptx_async,
)
from roofline_lsp.compiler.compile_units import units_for
from roofline_lsp.compiler.demangle import omp_region
from roofline_lsp.compiler.ptx_kernels import find_kernels
from roofline_lsp.compiler.ptx_parser import PtxModule, parse_ptx_cached
from roofline_lsp.compiler.toolchain import (
    PROXY_SM,
    NamedGpu,
    arch_choice,
    find_offload_clang,
    locate_nvcc,
    supported_archs,
)
from roofline_lsp.store.cache import ResultCache
from roofline_lsp.syntax.required_macros import RequiredChoice, guarding_names

__all__ = ["CompiledFile", "compile_file", "compile_file_sync"]


@dataclass(frozen=True)
class CompiledFile:
    """The outcome of :func:`compile_file`: a parsed module, or the one-line reason there is
    none (no compiler, compile error, timeout). Never raised, always returned."""

    path: str  # the file asked about
    unit: str | None  # the translation unit compiled (``path``, or a file including it)
    module: PtxModule | None = field(default=None, compare=False)
    reason: str = ""
    arch: str | None = None
    note: str = ""  # arch proxy/clamp, header compiled through another file, ...
    cached: bool = False
    seconds: float = 0.0
    compiler: str = ""
    # -D names given because the source stops at an #error without one (compile_jobs)
    required: tuple[tuple[str, RequiredChoice], ...] = ()
    adapted: str = ""  # how the compile departed from the file as it is (compile_jobs)

    @property
    def ok(self) -> bool:
        return self.module is not None


async def compile_file(
    path: str,
    source: bytes | None = None,
    *,
    language: Literal["cuda", "omp"] = "cuda",
    gpu: NamedGpu | None = None,
    arch: str | None = None,
    nvcc_setting: str | None = None,
    clang_setting: str | None = None,
    env: Mapping[str, str] | None = None,
    cache: ResultCache | None = None,
    semaphore: asyncio.Semaphore | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    want: Sequence[str] = (),
    mode: CompileMode = "counting",
    nvcc_flags: Sequence[str] = (),
) -> CompiledFile:
    """Find the compiler, pick the arch for ``gpu``, pick the translation unit (a header or a
    ``kernels.cu`` is compiled through the file that includes it; then the on-disk version of
    ``path`` is what counts), compile in the bounded pool and parse.

    ``want``: kernel names (CUDA) or ``#pragma omp target`` lines as ``"@<line>"`` (OpenMP)
    the caller needs; when one is missing from the first unit's PTX (a template instantiated
    elsewhere), up to two other including files are tried. ``nvcc_flags``: added to a CUDA
    compile (:func:`~roofline_lsp.compiler.compile_jobs.build_flags`).
    """
    nvcc, why = await asyncio.to_thread(locate_nvcc, nvcc_setting, env)
    clang = None
    if language == "omp":
        clang = await asyncio.to_thread(find_offload_clang, clang_setting, env)
        if clang is None:
            return CompiledFile(
                path,
                None,
                reason="no clang with OpenMP NVPTX offload (e.g. clang-16 + libomp-16-dev)",
            )
    elif nvcc is None:
        return CompiledFile(path, None, reason=why)
    note = ""
    if arch is None:
        supported = await asyncio.to_thread(supported_archs, nvcc) if nvcc else None
        if gpu is not None:
            choice = arch_choice(gpu, supported)
            arch, note = choice.arch, choice.note
        else:
            arch = f"sm_{PROXY_SM}"
    units = await asyncio.to_thread(units_for, path)
    if not units:
        return CompiledFile(path, None, reason="not a translation unit and no file includes it")
    assert clang is not None or nvcc is not None

    async def build(
        unit: str, buf: bytes | None, flags: Sequence[str] = ()
    ) -> PtxResult | PtxFailure:
        if clang is not None:
            return await compile_omp_ptx_async(
                unit, buf, clang, arch, extra_flags=flags, timeout=timeout, nvcc=nvcc,
                cache=cache, semaphore=semaphore,
            )  # fmt: skip
        assert nvcc is not None
        return await compile_ptx_async(
            unit, buf, nvcc, arch, extra_flags=(*nvcc_flags, *flags), timeout=timeout, cache=cache,
            semaphore=semaphore, mode=mode,
        )  # fmt: skip

    first_ok: CompiledFile | None = None
    first_fail: CompiledFile | None = None
    for unit in units[:3]:
        buf = source if unit == os.path.abspath(path) else None
        unit_note = note
        if unit != os.path.abspath(path):
            extra = f"compiled through {os.path.basename(unit)}"
            unit_note = f"{note}; {extra}" if note else extra
        res = await build(unit, buf)
        compiler = "clang" if clang else "nvcc"
        if isinstance(res, PtxFailure):
            first_fail = first_fail or CompiledFile(
                path, unit, None, res.reason, arch, unit_note, res.cached, res.seconds, compiler
            )
            continue
        module = await asyncio.to_thread(parse_ptx_cached, res.ptx)
        out = CompiledFile(
            path, unit, module, "", arch, unit_note, res.cached, res.seconds, compiler,
            res.required, res.adapted,
        )  # fmt: skip
        if not want or all(_has(module, w) for w in want):
            return out
        guarded = await _guarded(unit, buf, want, module, build)
        if guarded is not None:
            res, module, names = guarded
            what = "region" if clang is not None else "kernel"
            return CompiledFile(
                path, unit, module, "", arch, unit_note, res.cached, res.seconds, compiler,
                res.required,
                f"{', '.join(f'-D{n}' for n in names)}: the #ifdef around the {what}",
            )  # fmt: skip
        first_ok = first_ok or out
    result = first_ok or first_fail
    assert result is not None
    return result


async def _guarded(
    unit: str,
    buf: bytes | None,
    want: Sequence[str],
    module: PtxModule,
    build: Callable[[str, bytes | None, Sequence[str]], Awaitable[PtxResult | PtxFailure]],
) -> tuple[PtxResult, PtxModule, tuple[str, ...]] | None:
    """The kernels and OpenMP regions the PTX lacks because an ``#ifdef GPU`` /
    ``#ifdef OMP_TARGET`` the build's ``-D`` defines keeps them out of the file as it is:
    compiled again with those names defined (the analysis reads them as GPU code). None when
    no such name guards them, or that compile fails or still lacks them."""
    missing = [w for w in want if not _has(module, w)]
    try:
        source = buf if buf is not None else await asyncio.to_thread(Path(unit).read_bytes)
    except OSError:
        return None
    lines = [ln for w in missing if (ln := _defined_at(source, w))]
    names = guarding_names(source, lines)
    if not names:
        return None
    res = await build(unit, buf, [f"-D{n}" for n in names])
    if isinstance(res, PtxFailure):
        return None
    guarded = await asyncio.to_thread(parse_ptx_cached, res.ptx)
    if not all(_has(guarded, w) for w in missing):
        return None
    return res, guarded, names


def _defined_at(source: bytes, want: str) -> int | None:
    """The line of a wanted OpenMP region (``"@<line>"``) or of the ``__global__`` that
    defines a wanted kernel (its name), in ``source``."""
    if want.startswith("@"):
        return int(want[1:]) if want[1:].isdigit() else None
    m = re.search(rb"__global__[^;{}]*?\b" + re.escape(want.encode()) + rb"\s*\(", source)
    return source.count(b"\n", 0, m.start()) + 1 if m else None


def _has(module: PtxModule, want: str) -> bool:
    if want.startswith("@"):
        try:
            line = int(want[1:])
        except ValueError:
            return False
        return any((r := omp_region(k.name)) is not None and r[1] == line for k in module.kernels)
    return bool(find_kernels(module, want))


compile_file_sync = blocking(compile_file)
