"""Compiling a translation unit to PTX with line info: the commands, the result cache, the
work folder, and one bounded, cancellable run of the compiler.

:func:`compile_ptx_async` (bounded by a semaphore, cancellable) runs ``nvcc -ptx -lineinfo`` on
the file or an in-memory buffer, with the file's folder and the ``-I/-D/-U/-isystem/-std``
flags of a ``compile_commands.json``/``compile_flags.txt`` found walking up from it;
:func:`compile_omp_ptx_async` builds the device code of ``#pragma omp target`` regions with
clang (``-fopenmp-targets=nvptx64``). :func:`compile_ptx` and :func:`compile_omp_ptx` are the
same calls for callers without an event loop (:func:`blocking`). Results (and compile errors)
are cached in a :class:`ResultCache` (namespace ``ptx``) under a sha256 of the source, its local
``#include "..."`` files, the flags, the arch, the mode and the compiler version
(:func:`compile_cache_key`). A failure is a :class:`PtxFailure` with a one-line reason, never an
exception.

Compile modes. ``"counting"`` (default) adds ``-Xcicc -O1`` to ``-O3``: NVVM then neither
unrolls loops nor inlines device functions, so each source line's instructions appear once and
the counts are per execution of the line, which is what a trip-count model multiplies
(``"release"``, plain ``-O3``, unrolls loops by 4 or fully, so one line's instructions appear
several times). Code is still optimised (FMA contraction, strength reduction, libm inlined).
The price: the loop control of a loop the release build would unroll (counter increment,
compare, pointer bumps: about 4 integer instructions per iteration, on the loop statement's
line, :attr:`PtxLoop.control`) is counted every iteration, where the unrolled code pays it
once per 4 iterations or not at all; a consumer can discount that line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Collection, Coroutine, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from roofline_lsp.compiler.compile_units import local_includes, project_flags
from roofline_lsp.compiler.device_only import device_only, missing_header, undeclared_names
from roofline_lsp.compiler.toolchain import clang_version, cuda_root, nvcc_version
from roofline_lsp.store.cache import ResultCache
from roofline_lsp.syntax.datatypes import named_like, scalar_name
from roofline_lsp.syntax.hints import parse_hints
from roofline_lsp.syntax.required_macros import RequiredChoice, required_macros
from roofline_lsp.syntax.sources import fallback_folders

__all__ = [
    "CACHE_NAMESPACE",
    "DEFAULT_TIMEOUT",
    "CompileMode",
    "PtxFailure",
    "PtxResult",
    "blocking",
    "build_flags",
    "clang_omp_command",
    "compile_cache_key",
    "compile_omp_ptx",
    "compile_omp_ptx_async",
    "compile_ptx",
    "compile_ptx_async",
    "kill_process_group",
    "nvcc_command",
]

CompileMode = Literal["counting", "release"]
Compiler = Literal["nvcc", "clang"]

DEFAULT_TIMEOUT = 60.0
CACHE_NAMESPACE = "ptx"

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass(frozen=True)
class PtxResult:
    path: str  # the source file the PTX belongs to (line info points at it)
    ptx: str
    arch: str
    command: tuple[str, ...]
    seconds: float  # compile time (0 when cached)
    compiler_version: str | None
    cached: bool = False
    compiler: Literal["nvcc", "clang"] = "nvcc"
    # names defined for the compile because the source stops at an #error without one of
    # them (``syntax/required_macros.py``), each with its chain
    required: tuple[tuple[str, RequiredChoice], ...] = ()
    adapted: str = ""  # how the compile departed from the file as it is ("" for none)

    @property
    def ok(self) -> bool:
        return True


@dataclass(frozen=True)
class PtxFailure:
    path: str
    reason: str  # one line: the first compiler error, a timeout, a missing compiler ...
    log: str = ""  # the compiler's stderr (trimmed), for a details view
    seconds: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return False


def build_flags(build_compiler: str) -> tuple[str, ...]:
    """nvcc flags that make its PTX compute what ``build_compiler``'s build computes: clang
    does not set libdevice's ``__CUDA_PREC_SQRT``, so its ``sqrtf`` (and the library functions
    built on it) is the approximation; ``__fsqrt_rn`` stays IEEE-rounded in both."""
    return ("-prec-sqrt=false",) if build_compiler == "clang" else ()


def _has_std(flags: Sequence[str]) -> bool:
    return any(f.startswith(("-std", "--std")) for f in flags)


def nvcc_command(
    nvcc: str,
    src: str,
    out: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    mode: CompileMode = "counting",
) -> list[str]:
    cmd = [nvcc, "-ptx", "-lineinfo", "-O3", f"-arch={arch}", "-w"]
    cmd += ["--expt-relaxed-constexpr", "--extended-lambda"]
    if mode == "counting":
        cmd += ["-Xcicc", "-O1"]
    if not _has_std(extra_flags):
        cmd.append("-std=c++17")
    for d in include_dirs:
        cmd += ["-I", d]
    cmd += list(extra_flags)
    cmd += ["-x", "cu", src, "-o", out]
    return cmd


# clang's fixed counting flags, as nvcc's counting mode. -fno-unroll-loops: each source line's
# instructions once per execution (per-line counts are multiplied by trip counts); a
# ``#pragma unroll`` still forces clang's unroller (a constant loop fully: 8 copies of an
# 8-trip body; a loop of unknown count by 4 plus a remainder), which -unroll-count=1
# overrides. -fno-inline: a helper function stays a ``.func`` called from its call line
# (clang 16 records no call line for inlined code, and a helper's own loop then left the
# whole region without PTX counts)
_CLANG_COUNTING = ("-O2", "-fno-unroll-loops", "-mllvm", "-unroll-count=1", "-fno-inline")
# and what legacy code needs: C++17 (the default standard here) makes the `register` storage
# class an error, which nvcc only warns about
_CLANG_LENIENT = ("-Wno-register",)

# fixed command-line choices that changed over time, in the cache key so that old results
# are not reused
_KEY_TAGS: dict[str, tuple[str, ...]] = {"clang": (*_CLANG_COUNTING, *_CLANG_LENIENT)}
# ... and the retries after a failure (a cached failure from before them is not reused)
_RETRY_TAG = (
    "retries: -D for scalar-named types, -rdc, device code only (noted, macros, headers, "
    "misread types, library types, declarations)"
)


def clang_omp_command(
    clang: str,
    src: str,
    out: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    cuda_path: str | None = None,
    lang: str = "c++",
) -> list[str]:
    cmd = [clang, "-fopenmp", "-fopenmp-targets=nvptx64-nvidia-cuda", f"--offload-arch={arch}"]
    cmd += ["--offload-device-only", "-S", *_CLANG_COUNTING, "-gline-tables-only", "-w"]
    cmd += ["-Wno-unknown-cuda-version", *_CLANG_LENIENT]
    if cuda_path:
        cmd.append(f"--cuda-path={cuda_path}")
    if lang == "c++" and not _has_std(extra_flags):
        cmd.append("-std=c++17")
    for d in include_dirs:
        cmd += ["-I", d]
    cmd += [f for f in extra_flags if not (lang == "c" and f.startswith("-std=c++"))]
    cmd += ["-x", lang, src, "-o", out]
    return cmd


def compile_cache_key(
    path: str,
    source: bytes,
    includes: Sequence[tuple[str, bytes]],
    command_flags: Sequence[str],
    arch: str,
    compiler_version: str | None,
) -> str:
    """sha256 over the file (path and bytes), its local includes, the flags, the arch and the
    compiler version."""
    h = hashlib.sha256()
    for part in (b"ptx-v1", os.path.abspath(path).encode(), source):
        h.update(len(part).to_bytes(8, "little") + part)
    for p, data in includes:
        h.update(p.encode() + b"\0" + hashlib.sha256(data).digest())
    h.update("\0".join(command_flags).encode())
    h.update(arch.encode() + b"\0" + (compiler_version or "?").encode())
    return h.hexdigest()


_ERROR_RE = re.compile(r"\berror\b|\bfatal\b|catastrophic", re.I)


def _first_error(stderr: str, returncode: int | None) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if _ERROR_RE.search(ln) and not ln.startswith("#$"):
            return ln[:300]
    if lines:
        return lines[0][:300]
    return f"compiler exited with status {returncode}"


@dataclass(frozen=True)
class _Job:
    """Everything one compile needs, computed before running it (off the event loop)."""

    path: str
    source: bytes
    from_buffer: bool
    compiler: Compiler
    exe: str
    arch: str
    flags: tuple[str, ...]  # include dirs as -I and the extra flags
    key: str
    version: str | None
    mode: str
    cuda_path: str | None = None
    lang: str = "c++"
    required: tuple[tuple[str, RequiredChoice], ...] = ()  # -D names the source demanded
    # the local headers the source reaches (path, bytes): in the key, and reduced with it
    # for a device-code-only compile
    includes: tuple[tuple[str, bytes], ...] = ()

    def command(self, src: str, out: str) -> list[str]:
        if self.compiler == "clang":
            return clang_omp_command(
                self.exe, src, out, self.arch, (), self.flags, self.cuda_path, self.lang
            )
        mode: CompileMode = "counting" if self.mode == "counting" else "release"
        return nvcc_command(self.exe, src, out, self.arch, (), self.flags, mode)


@dataclass(frozen=True)
class _Request:
    """The arguments of one compile as the caller gave them (both compilers, one shape)."""

    path: str
    source: bytes | None
    compiler: Compiler
    exe: str
    arch: str
    include_dirs: Sequence[str]
    extra_flags: Sequence[str]
    use_project_flags: bool
    mode: str
    cuda_path: str | None = None


# a standard header without an extension (``<chrono>``, ``<cstdio>``): C++, whatever the
# file's name (projects build their ``.c`` files with a C++ compiler too)
_CXX_HEADER = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*<[a-z_]+>", re.M)


def _prepare(req: _Request) -> _Job | PtxFailure:
    path = os.path.abspath(req.path)
    source = req.source
    from_buffer = source is not None
    if source is None:
        try:
            source = Path(path).read_bytes()
        except OSError as e:
            return PtxFailure(path, f"cannot read {path}: {e.strerror or e}")
    folder = os.path.dirname(path)
    dirs = [folder, *(os.path.abspath(d) for d in req.include_dirs)]
    proj = list(project_flags(path)) if req.use_project_flags else []
    flags: list[str] = []
    for d in dirs:
        flags += ["-I", d]
    flags += proj + list(req.extra_flags)
    for d in fallback_folders(folder):  # searched last: `include/`, a variant folder's headers
        flags += ["-I", d]
    inc_dirs = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f in ("-I", "-isystem")]
    includes = local_includes(path, source, inc_dirs)
    # a chain of alternatives ending in #error (the build's -D picks one): the first one
    required = required_macros([(path, source), *includes], flags)
    flags += [f"-D{name}" for name, _ in required]
    compiler, mode = req.compiler, req.mode
    version = nvcc_version(req.exe) if compiler == "nvcc" else clang_version(req.exe)
    lang = "c" if path.endswith(".c") and not _CXX_HEADER.search(source) else "c++"
    tags = _KEY_TAGS.get(compiler, ())
    key = compile_cache_key(
        path, source, includes, [compiler, mode, lang, *tags, _RETRY_TAG, *flags], req.arch, version
    )
    return _Job(
        path,
        source,
        from_buffer,
        compiler,
        req.exe,
        req.arch,
        tuple(flags),
        key,
        version,
        mode,
        req.cuda_path,
        lang,
        required,
        tuple(includes),
    )


def _from_cache(cache: ResultCache | None, job: _Job) -> PtxResult | PtxFailure | None:
    if cache is None:
        return None
    value = cache.get(job.key)
    if not isinstance(value, dict):
        return None
    if value.get("ok") and isinstance(value.get("ptx"), str):
        return PtxResult(
            job.path,
            value["ptx"],
            job.arch,
            tuple(value.get("command", ())),
            0.0,
            job.version,
            cached=True,
            compiler=job.compiler,
            required=job.required,
            adapted=str(value.get("adapted", "")),
        )
    if value.get("ok") is False and isinstance(value.get("reason"), str):
        return PtxFailure(job.path, value["reason"], str(value.get("log", "")), 0.0, True)
    return None


def _store(cache: ResultCache | None, job: _Job, result: PtxResult | PtxFailure) -> None:
    if cache is None:
        return
    if isinstance(result, PtxResult):
        value = {
            "ok": True,
            "ptx": result.ptx,
            "command": list(result.command),
            "adapted": result.adapted,
        }
    else:
        value = {"ok": False, "reason": result.reason, "log": result.log[-4000:]}
    cache.set(job.key, value)


class _Workdir:
    """A temp folder holding the buffer (when compiling one) and the output."""

    def __init__(self, job: _Job) -> None:
        self.tmp = tempfile.mkdtemp(prefix="roofline-ptx-")
        name = os.path.basename(job.path)
        if job.from_buffer:
            self.src = os.path.join(self.tmp, name)
            Path(self.src).write_bytes(job.source)
        else:
            self.src = job.path
        self.out = os.path.join(self.tmp, "out.ptx")

    def fix_paths(self, text: str, original: str) -> str:
        if self.src != original:
            text = text.replace(self.src, original)
        return text.replace(self.tmp + os.sep, os.path.dirname(original) + os.sep)

    def finish(
        self, job: _Job, cmd: list[str], rc: int | None, stderr: str, seconds: float
    ) -> PtxResult | PtxFailure:
        stderr = self.fix_paths(stderr, job.path)
        if rc != 0 or not os.path.isfile(self.out):
            return PtxFailure(job.path, _first_error(stderr, rc), stderr[-4000:], seconds)
        try:
            text = Path(self.out).read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            return PtxFailure(job.path, f"cannot read the PTX: {e}", stderr, seconds)
        # the buffer was compiled in the temp folder under the file's own name: point the
        # line info (.file) back at the original folder
        if job.from_buffer:
            text = text.replace(self.tmp, os.path.dirname(job.path))
        shown = tuple(job.path if a == self.src else a for a in cmd)
        return PtxResult(
            job.path, text, job.arch, shown, seconds, job.version, False, job.compiler,
            job.required,
        )  # fmt: skip

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def kill_process_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the compiler and everything it started (nvcc runs cicc, ptxas ...): the process
    runs in its own session, so its group id is its pid."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


async def _run_job(
    job: _Job, cache: ResultCache | None, timeout: float, semaphore: asyncio.Semaphore | None
) -> PtxResult | PtxFailure:
    hit = _from_cache(cache, job)
    if hit is not None:
        return hit
    async with semaphore if semaphore is not None else contextlib.nullcontext():
        hit = _from_cache(cache, job)  # an identical compile may have finished meanwhile
        if hit is not None:
            return hit
        wd = _Workdir(job)
        try:
            cmd = job.command(wd.src, wd.out)
            ran = await _execute(job, cmd, timeout)
            if isinstance(ran, PtxFailure):
                return ran
            result = wd.finish(job, cmd, *ran)
            for _ in range(4):  # each retry may show another such type
                retry = assumed_type_flags(result, job) or separate_compilation(result, job)
                if not retry:
                    break
                job = replace(job, flags=(*job.flags, *retry))
                cmd = job.command(wd.src, wd.out)
                ran = await _execute(job, cmd, timeout)
                if isinstance(ran, PtxFailure):
                    return ran
                result = wd.finish(job, cmd, *ran)
            if (
                isinstance(result, PtxFailure)
                and job.compiler == "clang"
                and _INVALID_NAME in result.log
            ):
                retried = await _through_ir(job, wd, timeout)
                if retried is None:
                    return result  # the retry did not finish (timeout): nothing cached
                result = retried
            if isinstance(result, PtxFailure):
                alone = await _device_code_only(job, timeout)
                if isinstance(alone, PtxFailure):
                    return result  # the retry did not finish (timeout): nothing cached
                result = alone or result
            _store(cache, job, result)
            return result
        finally:
            wd.close()


# nvcc's and clang's words for a type nothing declares
_UNDECLARED = re.compile(r"identifier \"(\w+)\" is undefined|unknown type name '(\w+)'")


def assumed_type_flags(result: PtxResult | PtxFailure, job: _Job) -> tuple[str, ...]:
    """``-Ddfloat=float`` (``-Ddlong=long``) for each type a failed compile found undeclared
    whose name says what it is (``syntax.datatypes.named_like``: a build flag the tool
    cannot see), as the estimate takes it: the ``// roofline: dfloat=double`` hint's type,
    else by its name. Empty for a success, another error, or a name a flag already defines."""
    if not isinstance(result, PtxFailure):
        return ()
    hints = parse_hints(job.source)
    out: list[str] = []
    for m in _UNDECLARED.finditer(f"{result.reason}\n{result.log}"):
        name = m.group(1) or m.group(2)
        t = named_like(name, None)
        defined = any(f == f"-D{name}" or f.startswith(f"-D{name}=") for f in (*job.flags, *out))
        if t is None or defined:
            continue
        hinted = hints.get(name, "")
        given = hinted if re.fullmatch(r"[A-Za-z_][\w ]*", hinted) else ""
        out.append(f"-D{name}={given or scalar_name(t)}")
    return tuple(out)


# nvcc: a kernel launched from device code (dynamic parallelism) needs relocatable device code
_DEVICE_LAUNCH = "requires separate compilation mode"


def separate_compilation(result: PtxResult | PtxFailure, job: _Job) -> tuple[str, ...]:
    """``-rdc=true`` when an nvcc compile failed because device code launches a kernel (the
    project's build passes it), else empty."""
    if (
        isinstance(result, PtxFailure)
        and job.compiler == "nvcc"
        and _DEVICE_LAUNCH in f"{result.reason}\n{result.log}"
        and "-rdc=true" not in job.flags
    ):
        return ("-rdc=true",)
    return ()


async def _execute(
    job: _Job, cmd: Sequence[str], timeout: float
) -> tuple[int | None, str, float] | PtxFailure:
    """Run one compiler command in the file's folder, in its own process group: its exit
    status, stderr and seconds, or why it did not finish (a timeout kills the group, and so
    does cancelling: the file changed, the server is stopping)."""
    t0 = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            cwd=os.path.dirname(job.path),
            start_new_session=(os.name == "posix"),
        )
    except OSError as e:
        return PtxFailure(job.path, f"cannot run {job.exe}: {e.strerror or e}")
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        kill_process_group(proc)
        await proc.wait()
        return PtxFailure(job.path, f"{job.compiler} timed out after {timeout:g} s", "", timeout)
    except BaseException:
        kill_process_group(proc)
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
        raise
    return proc.returncode, err.decode("utf-8", "replace"), time.perf_counter() - t0


async def _device_code_only(job: _Job, timeout: float) -> PtxResult | PtxFailure | None:
    """The compile of the file's device code alone (``device_only``) after the whole file
    failed, with an empty stand-in for each header still not found, and, when that fails
    on another error, the device code alone of the project's own headers too (a header
    declaring host variables of a library type the stand-in leaves undeclared:
    ``cublasHandle_t handle;``), and the declarations of the host functions left out that
    the kept code calls (a template kernel's launcher calling ``cuda_check``); None when
    that does not compile either (the first failure is the one to show) or there is no host
    code to leave out; a failure when a compile did not finish (a timeout)."""
    reduced = await asyncio.to_thread(device_only, job.source)
    if reduced is None:
        return None
    trial = replace(job, source=reduced, from_buffer=True)
    wd = _Workdir(trial)
    stubs = os.path.join(wd.tmp, "stand-ins")
    trial = replace(trial, flags=(*trial.flags, "-I", stubs))
    missing: list[str] = []
    headers = False  # the project's headers reduced too
    declared: set[str] = set()  # host functions left out but for their declaration
    try:
        for _ in range(12):
            cmd = trial.command(wd.src, wd.out)
            ran = await _execute(trial, cmd, timeout)
            if isinstance(ran, PtxFailure):
                return ran
            result = wd.finish(trial, cmd, *ran)
            if isinstance(result, PtxResult):
                shown = f": {', '.join(missing)} not found" if missing else ""
                where = (
                    "host code left out of it and its headers" if headers else "host code left out"
                )
                return replace(result, adapted=f"device code only, {where}{shown}")
            log = f"{result.reason}\n{result.log}"
            header = missing_header(log)
            wanted = undeclared_names(log) - declared
            if header is None and wanted:
                declared |= wanted
                if await asyncio.to_thread(_declare, job, wd, declared, headers):
                    continue
            if header is None and not headers:
                headers = await asyncio.to_thread(_reduce_headers, job, wd.tmp, declared)
                if headers:
                    continue
            if header is None or header in missing:
                return None
            folder = _stand_in(stubs, header, job.compiler)
            if folder is None:
                return None
            missing.append(header)
            if folder != stubs and folder not in trial.flags:
                trial = replace(trial, flags=(*trial.flags, "-I", folder))
        return None
    finally:
        wd.close()


def _local_headers(job: _Job, tmp: str) -> Iterator[tuple[str, bytes]]:
    """The local headers the source reaches in its own folder or below it: where their
    device-code-only copy goes in ``tmp`` (where the reduced source is compiled, the first
    folder its quoted includes are looked up in), and their text."""
    folder = os.path.dirname(job.path)
    for path, data in job.includes:
        rel = os.path.relpath(path, folder)
        if not rel.startswith(os.pardir) and not os.path.isabs(rel):
            yield os.path.join(tmp, rel), data


def _reduce_headers(job: _Job, tmp: str, declared: Collection[str] = ()) -> bool:
    """Write into ``tmp`` the device code alone of each local header (the host functions of
    ``declared`` kept as declarations); whether any had host code to leave out."""
    wrote = False
    for target, data in _local_headers(job, tmp):
        reduced = device_only(data, declared)
        if reduced is None:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        Path(target).write_bytes(reduced)
        wrote = True
    return wrote


def _declare(job: _Job, wd: _Workdir, declared: Collection[str], headers: bool) -> bool:
    """Rewrite the device-code-only source in ``wd`` (and its reduced headers, when
    ``headers``) with the host functions of ``declared`` kept as declarations; whether any
    text changed (a name that is no host function left out changes none)."""
    changed = False
    for target, data in [(wd.src, job.source), *(_local_headers(job, wd.tmp) if headers else ())]:
        if not os.path.isfile(target):
            continue  # (a header without host code: not reduced)
        after = device_only(data, declared) or data
        if after != Path(target).read_bytes():
            Path(target).write_bytes(after)
            changed = True
    return changed


# CUDA's libraries, whose headers bring in the toolkit's numeric types (``cublas_v2.h``
# includes cuda_fp16.h, library_types.h...: code using ``__nv_bfloat16`` may rely on them)
_CUDA_LIBRARY = re.compile(r"(?:cublas|cusparse|cusolver|cufft|curand|cudnn|nccl|nvjpeg)\w*\.h")
_LIBRARY_TYPES = b"".join(
    b"#include <%s>\n" % h
    for h in (b"cuda_runtime.h", b"cuda_fp16.h", b"cuda_bf16.h", b"library_types.h", b"cuComplex.h")
)


def _stand_in(root: str, header: str, compiler: Compiler = "nvcc") -> str | None:
    """A stand-in for ``header`` under ``root``, and the include folder that finds it as
    written (``../common/x.h``: a folder one level below ``root``); None for an absolute
    path. It is empty, but for a CUDA library's header under nvcc: the toolkit's numeric
    type headers, which the library's would have included."""
    if os.path.isabs(header):
        return None
    parts = os.path.normpath(header).split(os.sep)
    up = 0
    while up < len(parts) and parts[up] == "..":
        up += 1
    rest = parts[up:]
    if not rest:
        return None
    folder = os.path.join(root, *(["_"] * up))
    path = os.path.join(root, *rest)
    os.makedirs(folder, exist_ok=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    library = compiler == "nvcc" and _CUDA_LIBRARY.fullmatch(os.path.basename(header))
    Path(path).write_bytes(_LIBRARY_TYPES if library else b"")
    return folder


# clang 16's NVPTX back end rejects a private global named `__const.<captured>.d` (a local
# const array's initializer in a target region): the names are made valid in the IR
_INVALID_NAME = "Symbol name with unsupported characters"
_QUOTED_NAME = re.compile(r'@"([^"]+)"')


async def _through_ir(job: _Job, wd: _Workdir, timeout: float) -> PtxResult | PtxFailure | None:
    """The clang compile in two steps, device IR then PTX, with the global names the back end
    rejects replaced by valid ones in between (None: a step did not finish)."""
    ir = os.path.join(wd.tmp, "device.ll")
    first = [*job.command(wd.src, ir), "-emit-llvm"]
    ran = await _execute(job, first, timeout)
    if isinstance(ran, PtxFailure):
        return None
    if ran[0] != 0 or not os.path.isfile(ir):
        return wd.finish(job, first, *ran)
    text = Path(ir).read_text(encoding="utf-8", errors="replace")
    Path(ir).write_text(valid_global_names(text), encoding="utf-8")
    second = [job.exe, "--target=nvptx64-nvidia-cuda", f"-march={job.arch}", "-S"]
    second += [*_CLANG_COUNTING, "-w", "-x", "ir", ir, "-o", wd.out]
    ran2 = await _execute(job, second, timeout)
    if isinstance(ran2, PtxFailure):
        return None
    return wd.finish(job, first, ran2[0], ran2[1], ran[2] + ran2[2])


def valid_global_names(ir: str) -> str:
    """LLVM IR with each quoted global name (``@"__const.<captured>.d"``) spelt with letters,
    digits, ``_`` and ``$`` only, distinct from every other name."""
    taken = set(re.findall(r"@([A-Za-z_$.][\w$.]*)", ir))
    renamed: dict[str, str] = {}

    def fix(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in renamed:
            base = re.sub(r"[^A-Za-z0-9_$]", "_", name) or "_"
            new, n = base, 1
            while new in taken:
                new, n = f"{base}_{n}", n + 1
            taken.add(new)
            renamed[name] = new
        return "@" + renamed[name]

    return _QUOTED_NAME.sub(fix, ir)


async def _compile(
    req: _Request, cache: ResultCache | None, timeout: float, semaphore: asyncio.Semaphore | None
) -> PtxResult | PtxFailure:
    job = await asyncio.to_thread(_prepare, req)
    if isinstance(job, PtxFailure):
        return job
    return await _run_job(job, cache, timeout, semaphore)


def blocking(fn: Callable[_P, Coroutine[Any, Any, _T]]) -> Callable[_P, _T]:
    """The form of the coroutine function ``fn`` for callers without an event loop (one
    :func:`asyncio.run` per call): same signature, same implementation, so a timeout or a
    Ctrl-C still kills the compiler's process group."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return asyncio.run(fn(*args, **kwargs))

    run.__doc__ = f":func:`{fn.__name__}` for callers without an event loop."
    return run


async def compile_ptx_async(
    path: str,
    source: bytes | None,
    nvcc: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    *,
    cache: ResultCache | None = None,
    mode: CompileMode = "counting",
    use_project_flags: bool = True,
    semaphore: asyncio.Semaphore | None = None,
) -> PtxResult | PtxFailure:
    """Compile ``path`` (or the in-memory ``source`` standing for it) to PTX with line info,
    without blocking the event loop: at most ``semaphore``'s value compiles at once; cancelling
    the task kills the compiler (its whole process group).

    ``source`` is written to a temp folder (the original folder goes first on the include path,
    so ``#include "local.h"`` resolves); ``.file`` entries and messages name ``path``.
    ``cache`` is a :class:`roofline_lsp.store.cache.ResultCache`; errors are cached too (same
    inputs, same error), timeouts are not.
    """
    req = _Request(
        path, source, "nvcc", nvcc, arch, include_dirs, extra_flags, use_project_flags, mode
    )
    return await _compile(req, cache, timeout, semaphore)


compile_ptx = blocking(compile_ptx_async)


async def compile_omp_ptx_async(
    path: str,
    source: bytes | None,
    clang: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    *,
    nvcc: str | None = None,
    cache: ResultCache | None = None,
    use_project_flags: bool = True,
    semaphore: asyncio.Semaphore | None = None,
) -> PtxResult | PtxFailure:
    """Device PTX of the OpenMP ``target`` regions of ``path`` (clang, ``-O2``, line tables).
    ``nvcc`` locates the CUDA toolkit (libdevice) for clang. Bounded, cancellable and cached
    as :func:`compile_ptx_async`."""
    req = _Request(
        path,
        source,
        "clang",
        clang,
        arch,
        include_dirs,
        extra_flags,
        use_project_flags,
        "omp",
        cuda_root(nvcc),
    )
    return await _compile(req, cache, timeout, semaphore)


compile_omp_ptx = blocking(compile_omp_ptx_async)
