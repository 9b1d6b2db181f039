"""Compiler-assisted instruction counts: compile a translation unit to PTX and count per line.

Pure analysis (no LSP). The pieces, in the order a caller uses them:

- :func:`find_nvcc` / :func:`locate_nvcc`: the setting, ``CUDA_HOME``/``CUDA_PATH``, ``PATH``,
  then the toolkit's standard install folders (``/usr/local/cuda/bin``, the newest
  ``/usr/local/cuda-*/bin``, ``/opt/cuda/bin``). :func:`nvcc_version` and
  :func:`supported_archs` ask the compiler once per binary (cached).
- :func:`arch_for` / :func:`arch_choice`: the ``sm_XY`` matching a GPU profile, clamped to what
  the compiler supports; AMD and Intel GPUs get an NVIDIA arch as an instruction-mix proxy.
- :func:`compile_ptx` (blocking) and :func:`compile_ptx_async` (bounded, cancellable): run
  ``nvcc -ptx -lineinfo`` on the file or an in-memory buffer, with the file's folder and the
  ``-I/-D/-U/-isystem/-std`` flags of a ``compile_commands.json``/``compile_flags.txt`` found
  walking up from it. Results (and compile errors) are cached in :class:`ResultCache`
  (namespace ``ptx``) under a sha256 of the source, its local ``#include "..."`` files, the
  flags, the arch, the mode and the compiler version. A failure is a :class:`PtxFailure` with a
  one-line reason, never an exception.
- :func:`parse_ptx`: every ``.entry`` (kernel) and ``.func`` with per-source-line
  :class:`LineMix` counts, through the ``.loc``/``.file`` line info (direct line, and the
  outermost ``inlined_at`` call site), its callees and its loops (backward branches).
- :func:`counts_for_kernel` / :func:`kernel_counts`: the per-line counts of one kernel (and, by
  default, of the device functions it calls) for the estimator.
- :func:`compile_file`: all of the above in one awaitable call (compiler, arch, translation
  unit, bounded compile, parse), returning a :class:`CompiledFile` with a reason instead of
  raising; :func:`translation_unit_for` / :func:`includers_of` pick the file to compile for a
  header or a ``kernels.cu`` that only compiles inside ``main.cu``.
- OpenMP offload: :func:`find_offload_clang` and :func:`compile_omp_ptx` build the device code
  of ``#pragma omp target`` regions with clang (``-fopenmp-targets=nvptx64``); the entries are
  named ``__omp_offloading_<dev>_<file>_<function>_l<line>`` (:func:`omp_region`).

Compile modes. ``"counting"`` (default) adds ``-Xcicc -O1`` to ``-O3``: NVVM then neither
unrolls loops nor inlines device functions, so each source line's instructions appear once and
the counts are per execution of the line, which is what a trip-count model multiplies
(``"release"``, plain ``-O3``, unrolls loops by 4 or fully, so one line's instructions appear
several times). Code is still optimised (FMA contraction, strength reduction, libm inlined).
The price: the loop control of a loop the release build would unroll (counter increment,
compare, pointer bumps: about 4 integer instructions per iteration, on the loop statement's
line, :attr:`PtxLoop.control`) is counted every iteration, where the unrolled code pays it
once per 4 iterations or not at all; a consumer can discount that line.

What is counted (static, per line, per thread): see :class:`LineMix`. Weights follow the SASS
that ``ptxas`` emits for sm_86 (checked with ``nvdisasm`` on small kernels):

- Floating point: ``add/sub/mul`` 1 FLOP, ``fma/mad`` 2 FLOP, as Nsight Compute counts FLOPs
  (``fadd + fmul + 2 * ffma``); packed ``f16x2/bf16x2`` count twice. ``min/max/abs/neg/setp/
  selp/copysign/testp`` are floating-point instructions with no FLOP. IEEE ``div``/``sqrt``/
  ``rcp`` expand (fast path): ``div.rn.f32`` MUFU + 5 FFMA (10 FLOP) + FCHK; ``div.rn.f64``
  MUFU + 7 DFMA + 1 DMUL (15 FLOP); ``rcp.rn.f64`` 5 DFMA (10); ``sqrt.rn.f32`` 2 FMUL + 2 FFMA
  (6); ``sqrt.rn.f64`` 3 DMUL + 5 DFMA (13); ``rcp.rn.f32`` 2 FFMA (4). ``sin/cos/ex2/lg2/
  rsqrt/rcp/sqrt/tanh .approx`` are one special-function (MUFU) instruction each, plus the
  range-scaling FMULs of the non-``.ftz`` forms.
- Integer (``int_ops``, meant to track ncu's ``smsp__sass_thread_inst_executed_op_integer``):
  integer ``add/sub/mul/mad/mul24/mad24/sad/abs/neg/min/max/popc/clz/bfind/brev/bfe/bfi/fns/
  prmt/lop3/shf/shl/shr/and/or/xor/not/cnot/dp4a/dp2a/setp/set/selp/slct`` on integer types
  1 each; 64-bit ``mul``/``mad`` 3 (IMAD.WIDE.U32 + 2 IMAD), 64-bit compares 2 (ISETP +
  ISETP.EX), ``clz`` 2 (FLO + IADD); 32-bit ``div`` 20 and ``rem`` 15 (the reciprocal
  sequence), 64-bit ``div/rem`` 70 (a subroutine); sign-extending ``cvt`` 1, zero-extending or
  truncating ``cvt`` and ``cvta`` 0 (folded), predicate logic (``and.pred`` ...) 0 (folded into
  ISETP), ``mov`` 0. 64-bit ``add`` counts 1 (ptxas splits a lone one in two, IADD3 +
  IADD3.X, but folds constant offsets into the address), and a ``mul.wide`` whose result feeds
  a 64-bit ``add`` counts 0: the pair is one IMAD.WIDE.
  Check on the eval set's loop-free CUDA kernels (static PTX count vs ncu's per-thread count):
  integer median ratio 1.00 (quartiles 0.79-1.33), FP32 FLOPs 1.00, FP64 FLOPs 1.00.
- Memory: loads/stores by state space (``global``, ``shared``, ``local``, ``const``,
  ``generic`` = no space given, ``tex`` = texture/surface) with their bytes (type width x
  vector length), ``ld.param`` counted apart (kernel arguments, no traffic), ``cp.async``
  as a global load plus a shared store of its size, atomics (``atom``/``red``) by space.
- Control: branches, calls, barriers, warp shuffles/votes; tensor-core ``mma``/``wmma`` as
  ``tensor`` instructions with ``2*m*n*k/32`` FLOP per thread in ``flops_tensor``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Protocol, cast

__all__ = [
    "ArchChoice",
    "CompiledFile",
    "KernelCounts",
    "LineMix",
    "PtxFailure",
    "PtxFunction",
    "PtxLoop",
    "PtxModule",
    "PtxResult",
    "arch_choice",
    "arch_for",
    "cache_key",
    "compile_file",
    "compile_file_sync",
    "compile_omp_ptx",
    "compile_omp_ptx_async",
    "compile_ptx",
    "compile_ptx_async",
    "counts_for_kernel",
    "demangle_base",
    "find_kernels",
    "kernel_counts",
    "find_nvcc",
    "find_offload_clang",
    "locate_nvcc",
    "nvcc_version",
    "omp_region",
    "parse_ptx",
    "parse_ptx_cached",
    "project_flags",
    "supported_archs",
    "includers_of",
    "translation_unit_for",
]

CompileMode = Literal["counting", "release"]
Attribution = Literal["direct", "callsite"]

DEFAULT_TIMEOUT = 60.0
CACHE_NAMESPACE = "ptx"
# Standard toolkit folders searched after the setting, CUDA_HOME/CUDA_PATH and PATH. Globs are
# expanded newest version first.
DEFAULT_NVCC_LOCATIONS: tuple[str, ...] = (
    "/usr/local/cuda/bin",
    "/usr/local/cuda-*/bin",
    "/opt/cuda/bin",
    "/opt/nvidia/hpc_sdk/Linux_x86_64/*/cuda/bin",
    "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v*/bin",
)
_EXE = ".exe" if os.name == "nt" else ""


class _Named(Protocol):
    name: str


# ---------------------------------------------------------------------------------------------
# Finding the compiler


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _version_key(path: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", path)
    return tuple(int(n) for n in nums)


def _expand(pattern: str) -> list[str]:
    if any(c in pattern for c in "*?["):
        return sorted(glob.glob(pattern), key=_version_key, reverse=True)
    return [pattern]


def locate_nvcc(
    setting: str | None = None,
    env: Mapping[str, str] | None = None,
    locations: Sequence[str] = DEFAULT_NVCC_LOCATIONS,
) -> tuple[str | None, str]:
    """``(path, how)``: the nvcc to use and where it was found, or ``(None, reason)``.

    Order: ``setting`` (a file, or a folder holding ``nvcc`` or ``bin/nvcc``), ``CUDA_HOME``
    then ``CUDA_PATH`` (``<root>/bin/nvcc``), ``PATH`` (from ``env``), then ``locations``
    (folders; globs expand newest first). An explicit setting that is not an nvcc is reported,
    not skipped: the user asked for that compiler.
    """
    env = os.environ if env is None else env
    name = "nvcc" + _EXE
    if setting:
        s = os.path.expanduser(setting)
        for cand in (s, os.path.join(s, name), os.path.join(s, "bin", name)):
            if _executable(cand):
                return os.path.abspath(cand), "from the nvcc setting"
        return None, f"nvcc setting {setting!r} is not an executable nvcc"
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = env.get(var)
        if root:
            cand = os.path.join(root, "bin", name)
            if _executable(cand):
                return cand, f"from {var}"
    search = env.get("PATH")
    found = shutil.which(name, path=search) if search else None
    if found:
        return os.path.abspath(found), "on PATH"
    for pattern in locations:
        for folder in _expand(pattern):
            cand = os.path.join(folder, name)
            if _executable(cand):
                return cand, f"in {folder}"
    return None, "nvcc not found (setting, CUDA_HOME, CUDA_PATH, PATH, standard CUDA folders)"


def find_nvcc(
    setting: str | None = None,
    env: Mapping[str, str] | None = None,
    locations: Sequence[str] = DEFAULT_NVCC_LOCATIONS,
) -> str | None:
    """The nvcc to use, or None; see :func:`locate_nvcc` for the search order."""
    return locate_nvcc(setting, env, locations)[0]


def _stat_key(path: str) -> tuple[str, int, int]:
    try:
        st = os.stat(path)
        return path, st.st_mtime_ns, st.st_size
    except OSError:
        return path, 0, 0


@functools.lru_cache(maxsize=32)
def _run_info(key: tuple[str, int, int], *args: str) -> str | None:
    try:
        out = subprocess.run(
            [key[0], *args], capture_output=True, text=True, timeout=15, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout


def nvcc_version(path: str) -> str | None:
    """``"13.0.88"`` (from ``nvcc --version``), or None when it cannot be run. Cached per
    binary (path, mtime, size)."""
    text = _run_info(_stat_key(path), "--version")
    if not text:
        return None
    m = re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", text) or re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else text.strip().splitlines()[-1][:80]


def supported_archs(path: str) -> tuple[int, ...] | None:
    """The SM versions nvcc can target (``--list-gpu-arch``), e.g. ``(75, 80, 86, ...)``,
    ascending; None when the compiler does not say (old nvcc)."""
    text = _run_info(_stat_key(path), "--list-gpu-arch")
    if not text:
        return None
    found = sorted({int(m) for m in re.findall(r"compute_(\d+)", text)})
    return tuple(found) or None


# ---------------------------------------------------------------------------------------------
# Target architecture


@dataclass(frozen=True)
class ArchChoice:
    arch: str  # "sm_86"
    wanted: int | None  # the GPU's own SM version, None for non-NVIDIA GPUs
    note: str = ""  # why the arch differs from the GPU's (clamped, proxy), else ""


# Name fragments (lower case, punctuation removed) -> SM version. First match wins, so longer,
# more specific fragments come first.
_NVIDIA_SM: tuple[tuple[str, int], ...] = (
    ("gb200", 100),
    ("b200", 100),
    ("b100", 100),
    ("gb300", 103),
    ("b300", 103),
    ("rtx50", 120),
    ("5090", 120),
    ("5080", 120),
    ("5070", 120),
    ("rtxpro6000", 120),
    ("gh200", 90),
    ("h200", 90),
    ("h100", 90),
    ("h800", 90),
    ("gh100", 90),
    ("l40", 89),
    ("l4", 89),
    ("4090", 89),
    ("4080", 89),
    ("4070", 89),
    ("4060", 89),
    ("ad10", 89),
    ("rtx6000ada", 89),
    ("a100", 80),
    ("a800", 80),
    ("a30", 80),
    ("ga100", 80),
    ("orin", 87),
    ("a40", 86),
    ("a10", 86),
    ("a16", 86),
    ("a2", 86),
    ("a6000", 86),
    ("a5000", 86),
    ("a4000", 86),
    ("3090", 86),
    ("3080", 86),
    ("3070", 86),
    ("3060", 86),
    ("ga10", 86),
    ("t4", 75),
    ("2080", 75),
    ("2070", 75),
    ("2060", 75),
    ("titanrtx", 75),
    ("tu10", 75),
    ("v100", 70),
    ("gv100", 70),
    ("titanv", 70),
    ("p100", 60),
    ("gp100", 60),
)
_PROXY_SM = 80  # NVIDIA arch used as an instruction-mix proxy for AMD and Intel GPUs


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _gpu_sm(gpu: _Named) -> int | None:
    for attr in ("compute_capability", "sm", "arch"):
        v = getattr(gpu, attr, None)
        if isinstance(v, tuple) and len(v) == 2:
            return int(v[0]) * 10 + int(v[1])
        if isinstance(v, (int, float)) and v > 0:
            return int(round(v * 10)) if v < 20 else int(v)
        if isinstance(v, str):
            m = re.search(r"(\d+)\.?(\d)?", v)
            if m:
                return int(m.group(1)) * 10 + int(m.group(2)) if m.group(2) else int(m.group(1))
    names = [gpu.name, *getattr(gpu, "aliases", ()), getattr(gpu, "full_name", "")]
    keys = [_norm(n) for n in names if n]
    for frag, sm in _NVIDIA_SM:
        if any(frag in k for k in keys):
            return sm
    return None


def _is_nvidia(gpu: _Named) -> bool:
    vendor = str(getattr(gpu, "vendor", "") or "").lower()
    if vendor:
        return vendor == "nvidia"
    n = _norm(" ".join([gpu.name, *getattr(gpu, "aliases", ())]))
    return not any(k in n for k in ("mi1", "mi2", "mi3", "radeon", "gfx", "amd", "intel", "max1"))


def arch_choice(gpu: _Named, supported: Sequence[int] | None = None) -> ArchChoice:
    """The ``sm_XY`` to compile for ``gpu`` (any object with ``.name``; ``.vendor``,
    ``.aliases``, ``.full_name`` and a ``compute_capability`` are used when present), clamped
    to ``supported`` (from :func:`supported_archs`)."""
    note = ""
    if _is_nvidia(gpu):
        wanted = _gpu_sm(gpu)
        sm = wanted if wanted is not None else _PROXY_SM
        if wanted is None:
            note = f"unknown NVIDIA GPU {gpu.name}: compiled for sm_{sm}"
    else:
        wanted = None
        sm = _PROXY_SM
        note = f"{gpu.name} is not an NVIDIA GPU: PTX for sm_{sm} used as an instruction-mix proxy"
    if supported:
        ok = sorted(supported)
        if sm not in ok:
            lower = [a for a in ok if a <= sm]
            clamped = lower[-1] if lower else ok[0]
            note = (note + "; " if note else "") + (
                f"sm_{sm} not supported by this nvcc: compiled for sm_{clamped}"
            )
            sm = clamped
    return ArchChoice(f"sm_{sm}", wanted, note)


def arch_for(gpu: _Named, supported: Sequence[int] | None = None) -> str:
    """``"sm_86"`` for an RTX 3080, ``"sm_90"`` for an H100, ...; see :func:`arch_choice`."""
    return arch_choice(gpu, supported).arch


# ---------------------------------------------------------------------------------------------
# Flags and includes


_KEEP_JOINED = ("-I", "-D", "-U", "-isystem", "-std=", "--std=", "-std", "--include-path=")


def _filter_flags(args: Sequence[str], base: str) -> list[str]:
    """Keep ``-I -D -U -isystem -std`` flags (joined or separate), include paths made absolute
    against ``base``; everything else (outputs, optimisation, arch, warnings) is dropped."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-I", "-isystem", "--include-path", "-D", "-U", "--define-macro"):
            if nxt is not None:
                flag = {"--include-path": "-I", "--define-macro": "-D"}.get(a, a)
                val = nxt
                if flag in ("-I", "-isystem"):
                    val = os.path.normpath(os.path.join(base, val))
                out += [flag, val]
            i += 2
            continue
        if a.startswith("--include-path="):
            out += ["-I", os.path.normpath(os.path.join(base, a.split("=", 1)[1]))]
        elif a.startswith("-isystem") and len(a) > len("-isystem"):
            out += ["-isystem", os.path.normpath(os.path.join(base, a[len("-isystem") :]))]
        elif a.startswith("-I") and len(a) > 2:
            out += ["-I", os.path.normpath(os.path.join(base, a[2:]))]
        elif (a.startswith("-D") or a.startswith("-U")) and len(a) > 2:
            out.append(a)
        elif a.startswith(("-std=", "--std=")):
            std = a.split("=", 1)[1].replace("gnu++", "c++")
            if std.startswith("c++"):
                out.append(f"-std={std}")
        i += 1
    return out


def project_flags(path: str, stop: str | None = None) -> tuple[str, ...]:
    """``-I/-D/-U/-isystem/-std`` flags for ``path`` from the nearest ``compile_commands.json``
    (its entry for the file, else one for a file in the same folder) or ``compile_flags.txt``
    found walking up from the file's folder (to ``stop`` or the filesystem root)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    stop_at = os.path.abspath(stop) if stop else None
    while True:
        for build in ("", "build"):
            cc = os.path.join(folder, build, "compile_commands.json")
            if os.path.isfile(cc):
                flags = _from_compile_commands(cc, target)
                if flags is not None:
                    return tuple(flags)
        cf = os.path.join(folder, "compile_flags.txt")
        if os.path.isfile(cf):
            try:
                lines = Path(cf).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            return tuple(_filter_flags([ln.strip() for ln in lines if ln.strip()], folder))
        parent = os.path.dirname(folder)
        if parent == folder or (stop_at and folder == stop_at):
            return ()
        folder = parent


def _from_compile_commands(cc: str, target: str) -> list[str] | None:
    try:
        entries = json.loads(Path(cc).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(entries, list):
        return None
    same_dir: list[str] | None = None
    for e in entries:
        if not isinstance(e, dict):
            continue
        directory = str(e.get("directory", os.path.dirname(cc)))
        file = os.path.normpath(os.path.join(directory, str(e.get("file", ""))))
        if "arguments" in e and isinstance(e["arguments"], list):
            args = [str(a) for a in e["arguments"]]
        else:
            try:
                args = shlex.split(str(e.get("command", "")))
            except ValueError:
                continue
        if file == target:
            return _filter_flags(args, directory)
        if same_dir is None and os.path.dirname(file) == os.path.dirname(target):
            same_dir = _filter_flags(args, directory)
    return same_dir


_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def local_includes(
    path: str, source: bytes, include_dirs: Sequence[str] = (), limit: int = 256
) -> list[tuple[str, bytes]]:
    """The ``#include "..."`` files reachable from ``source`` (transitively, up to ``limit``),
    resolved against the including file's folder then ``include_dirs``: ``(path, content)``."""
    seen: dict[str, bytes] = {}
    todo: list[tuple[str, bytes]] = [(os.path.abspath(path), source)]
    while todo and len(seen) < limit:
        cur, text = todo.pop()
        for m in _INCLUDE_RE.finditer(text):
            name = m.group(1).decode("utf-8", "replace")
            for d in (os.path.dirname(cur), *include_dirs):
                cand = os.path.normpath(os.path.join(d, name))
                if cand in seen:
                    break
                if os.path.isfile(cand):
                    try:
                        data = Path(cand).read_bytes()
                    except OSError:
                        break
                    seen[cand] = data
                    todo.append((cand, data))
                    break
    return sorted(seen.items())


_TU_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".cuh", ".inc", ".inl", ".tpp")


def includers_of(path: str, max_files: int = 200) -> list[str]:
    """Source files (``.cu`` first) in the file's folder or its parent whose local includes
    reach ``path``, top-level ones first (files that no other candidate includes)."""
    target = os.path.abspath(path)
    folders = [os.path.dirname(target), os.path.dirname(os.path.dirname(target))]
    cands: list[str] = []
    for folder in dict.fromkeys(folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for suffix in _TU_SUFFIXES:
            cands += [os.path.join(folder, n) for n in names if n.endswith(suffix)]
    reach: dict[str, set[str]] = {}
    for cand in cands[:max_files]:
        if cand == target:
            continue
        try:
            data = Path(cand).read_bytes()
        except OSError:
            continue
        if b"include" not in data:
            continue
        incs = {p for p, _ in local_includes(cand, data)}
        if target in incs:
            reach[cand] = incs
    top = [c for c in reach if not any(c in other for o, other in reach.items() if o != c)]
    rest = [c for c in reach if c not in top]

    def rank(c: str) -> tuple[int, int, str]:
        return (0 if c.endswith(".cu") else 1, 0 if "main" in os.path.basename(c) else 1, c)

    return sorted(top, key=rank) + sorted(rest, key=rank)


def translation_unit_for(path: str) -> str | None:
    """The file to compile for the kernels of ``path``: the top-level source file that
    includes it (a ``kernels.cu`` or header pulled into ``main.cu`` does not compile alone),
    else ``path`` itself when it is a source file, else None (a header nobody includes)."""
    found = includers_of(path)
    if found:
        return found[0]
    if path.endswith(_TU_SUFFIXES):
        return os.path.abspath(path)
    return None


# ---------------------------------------------------------------------------------------------
# Compiling


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


# fixed command-line choices that changed over time, in the cache key so that old results
# are not reused
_KEY_TAGS: dict[str, tuple[str, ...]] = {"clang": ("-fno-unroll-loops",)}


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
    # -fno-unroll-loops: each source line's instructions once per execution, as in nvcc's
    # counting mode (per-line counts are multiplied by trip counts)
    cmd += ["--offload-device-only", "-S", "-O2", "-fno-unroll-loops", "-gline-tables-only", "-w"]
    cmd += ["-Wno-unknown-cuda-version"]
    if cuda_path:
        cmd.append(f"--cuda-path={cuda_path}")
    if lang == "c++" and not _has_std(extra_flags):
        cmd.append("-std=c++17")
    for d in include_dirs:
        cmd += ["-I", d]
    cmd += [f for f in extra_flags if not (lang == "c" and f.startswith("-std=c++"))]
    cmd += ["-x", lang, src, "-o", out]
    return cmd


def cache_key(
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
    """Everything one compile needs, computed before running it (so sync and async share it)."""

    path: str
    source: bytes
    from_buffer: bool
    compiler: Literal["nvcc", "clang"]
    exe: str
    arch: str
    flags: tuple[str, ...]  # include dirs as -I and the extra flags
    key: str
    version: str | None
    mode: str
    cuda_path: str | None = None
    lang: str = "c++"

    def command(self, src: str, out: str) -> list[str]:
        if self.compiler == "clang":
            return clang_omp_command(
                self.exe, src, out, self.arch, (), self.flags, self.cuda_path, self.lang
            )
        mode = cast(CompileMode, self.mode)
        return nvcc_command(self.exe, src, out, self.arch, (), self.flags, mode)


def _prepare(
    path: str,
    source: bytes | None,
    compiler: Literal["nvcc", "clang"],
    exe: str,
    arch: str,
    include_dirs: Sequence[str],
    extra_flags: Sequence[str],
    use_project_flags: bool,
    mode: str,
    cuda_path: str | None = None,
) -> _Job | PtxFailure:
    path = os.path.abspath(path)
    from_buffer = source is not None
    if source is None:
        try:
            source = Path(path).read_bytes()
        except OSError as e:
            return PtxFailure(path, f"cannot read {path}: {e.strerror or e}")
    folder = os.path.dirname(path)
    dirs = [folder, *(os.path.abspath(d) for d in include_dirs)]
    proj = list(project_flags(path)) if use_project_flags else []
    flags: list[str] = []
    for d in dirs:
        flags += ["-I", d]
    flags += proj + list(extra_flags)
    inc_dirs = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f in ("-I", "-isystem")]
    includes = local_includes(path, source, inc_dirs)
    version = nvcc_version(exe) if compiler == "nvcc" else _clang_version(exe)
    lang = "c" if path.endswith(".c") else "c++"
    tags = _KEY_TAGS.get(compiler, ())
    key = cache_key(path, source, includes, [compiler, mode, lang, *tags, *flags], arch, version)
    return _Job(
        path,
        source,
        from_buffer,
        compiler,
        exe,
        arch,
        tuple(flags),
        key,
        version,
        mode,
        cuda_path,
        lang,
    )


def _clang_version(clang: str) -> str | None:
    text = _run_info(_stat_key(clang), "--version")
    if not text:
        return None
    m = re.search(r"version (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else None


def _from_cache(cache: Any, job: _Job) -> PtxResult | PtxFailure | None:
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
        )
    if value.get("ok") is False and isinstance(value.get("reason"), str):
        return PtxFailure(job.path, value["reason"], str(value.get("log", "")), 0.0, True)
    return None


def _store(cache: Any, job: _Job, result: PtxResult | PtxFailure, transient: bool) -> None:
    if cache is None or transient:
        return
    if isinstance(result, PtxResult):
        value = {"ok": True, "ptx": result.ptx, "command": list(result.command)}
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
        return PtxResult(job.path, text, job.arch, shown, seconds, job.version, False, job.compiler)

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _kill_group(proc: Any) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


def _run_job(job: _Job, cache: Any, timeout: float) -> PtxResult | PtxFailure:
    hit = _from_cache(cache, job)
    if hit is not None:
        return hit
    wd = _Workdir(job)
    try:
        cmd = job.command(wd.src, wd.out)
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                cwd=os.path.dirname(job.path),
                start_new_session=(os.name == "posix"),
            )
        except OSError as e:
            return PtxFailure(job.path, f"cannot run {job.exe}: {e.strerror or e}")
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            return PtxFailure(
                job.path, f"{job.compiler} timed out after {timeout:g} s", "", timeout
            )
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        result = wd.finish(
            job, cmd, proc.returncode, err.decode("utf-8", "replace"), time.perf_counter() - t0
        )
        _store(cache, job, result, transient=False)
        return result
    finally:
        wd.close()


async def _run_job_async(
    job: _Job, cache: Any, timeout: float, semaphore: asyncio.Semaphore | None
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
                _kill_group(proc)
                await proc.wait()
                return PtxFailure(
                    job.path, f"{job.compiler} timed out after {timeout:g} s", "", timeout
                )
            except BaseException:  # cancelled: the file changed, the server is stopping
                _kill_group(proc)
                with contextlib.suppress(Exception):
                    await asyncio.shield(proc.wait())
                raise
            result = wd.finish(
                job,
                cmd,
                proc.returncode,
                err.decode("utf-8", "replace"),
                time.perf_counter() - t0,
            )
            _store(cache, job, result, transient=False)
            return result
        finally:
            wd.close()


def compile_ptx(
    path: str,
    source: bytes | None,
    nvcc: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    *,
    cache: Any = None,
    mode: CompileMode = "counting",
    use_project_flags: bool = True,
) -> PtxResult | PtxFailure:
    """Compile ``path`` (or the in-memory ``source`` standing for it) to PTX with line info.

    ``source`` is written to a temp folder (the original folder goes first on the include path,
    so ``#include "local.h"`` resolves); ``.file`` entries and messages name ``path``.
    ``cache`` is a :class:`roofline_lsp.cache.ResultCache` (or anything with ``get``/``set``
    of JSON values); errors are cached too (same inputs, same error), timeouts are not.
    """
    job = _prepare(
        path, source, "nvcc", nvcc, arch, include_dirs, extra_flags, use_project_flags, mode
    )
    if isinstance(job, PtxFailure):
        return job
    return _run_job(job, cache, timeout)


async def compile_ptx_async(
    path: str,
    source: bytes | None,
    nvcc: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    *,
    cache: Any = None,
    mode: CompileMode = "counting",
    use_project_flags: bool = True,
    semaphore: asyncio.Semaphore | None = None,
) -> PtxResult | PtxFailure:
    """:func:`compile_ptx` without blocking the event loop: at most ``semaphore``'s value
    compiles at once; cancelling the task kills the compiler (its whole process group)."""
    job = await asyncio.to_thread(
        _prepare,
        path,
        source,
        "nvcc",
        nvcc,
        arch,
        include_dirs,
        extra_flags,
        use_project_flags,
        mode,
    )
    if isinstance(job, PtxFailure):
        return job
    return await _run_job_async(job, cache, timeout, semaphore)


# ---------------------------------------------------------------------------------------------
# OpenMP offload through clang


_CLANG_NAMES = tuple(f"clang-{v}" for v in range(22, 13, -1)) + ("clang",)


def find_offload_clang(
    setting: str | None = None,
    env: Mapping[str, str] | None = None,
    names: Sequence[str] = _CLANG_NAMES,
) -> str | None:
    """A clang that can build OpenMP device code for NVPTX: its ``libomptarget-nvptx*.bc``
    device runtime must be installed next to it (Debian: ``clang-N`` + ``libomp-N-dev``)."""
    env = os.environ if env is None else env
    cands: list[str] = []
    if setting:
        cands.append(os.path.expanduser(setting))
    search = env.get("PATH")
    for n in names:
        found = shutil.which(n, path=search) if search else None
        if found:
            cands.append(found)
    for c in cands:
        if _executable(c) and _has_nvptx_runtime(c):
            return c
    return None


def _has_nvptx_runtime(clang: str) -> bool:
    real = os.path.realpath(clang)
    lib = os.path.join(os.path.dirname(os.path.dirname(real)), "lib")
    return bool(glob.glob(os.path.join(lib, "libomptarget-nvptx*.bc")))


def _cuda_root(nvcc: str | None) -> str | None:
    if not nvcc:
        return None
    root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.isdir(os.path.join(root, "nvvm", "libdevice")):
        return root
    # a wrapper script (``exec /usr/local/cuda-X/bin/nvcc``): read the target from it
    try:
        head = Path(nvcc).read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return None
    m = re.search(r"(/\S+)/bin/nvcc", head)
    if m and os.path.isdir(os.path.join(m.group(1), "nvvm", "libdevice")):
        return m.group(1)
    return None


def compile_omp_ptx(
    path: str,
    source: bytes | None,
    clang: str,
    arch: str,
    include_dirs: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    *,
    nvcc: str | None = None,
    cache: Any = None,
    use_project_flags: bool = True,
) -> PtxResult | PtxFailure:
    """Device PTX of the OpenMP ``target`` regions of ``path`` (clang, ``-O2``, line tables).
    ``nvcc`` locates the CUDA toolkit (libdevice) for clang."""
    job = _prepare(
        path,
        source,
        "clang",
        clang,
        arch,
        include_dirs,
        extra_flags,
        use_project_flags,
        "omp",
        _cuda_root(nvcc),
    )
    if isinstance(job, PtxFailure):
        return job
    return _run_job(job, cache, timeout)


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
    cache: Any = None,
    use_project_flags: bool = True,
    semaphore: asyncio.Semaphore | None = None,
) -> PtxResult | PtxFailure:
    job = await asyncio.to_thread(
        _prepare,
        path,
        source,
        "clang",
        clang,
        arch,
        include_dirs,
        extra_flags,
        use_project_flags,
        "omp",
        _cuda_root(nvcc),
    )
    if isinstance(job, PtxFailure):
        return job
    return await _run_job_async(job, cache, timeout, semaphore)


_OMP_RE = re.compile(r"^__omp_offloading_([0-9a-f]+)_([0-9a-f]+)_(.+)_l(\d+)$")


def omp_region(entry_name: str) -> tuple[str, int] | None:
    """``("saxpy", 12)`` for ``__omp_offloading_fe00_1a2b_saxpy_l12``: the enclosing function
    (C++ names demangled to their base name, ``_ZN2ns3runEv`` -> ``ns::run``) and the line of
    the ``#pragma omp target``; None for other names."""
    m = _OMP_RE.match(entry_name)
    if not m:
        return None
    return demangle_base(m.group(3)), int(m.group(4))


# ---------------------------------------------------------------------------------------------
# Instruction classes


@dataclass(frozen=True)
class LineMix:
    """Static instruction counts of one source line (per thread, per execution of the line).

    ``fp32/fp64/fp16`` count floating-point instructions (packed x2 as 2), ``flops_*`` their
    FLOPs (FMA = 2); ``int_ops`` integer instructions with SASS-like weights; memory counts are
    instructions and ``*_bytes`` the bytes they move per thread. ``calls`` names the ``.func``
    symbols called (or whose address is taken, as OpenMP outlined bodies are) on the line.
    """

    instructions: int = 0  # PTX instructions on the line (directives excluded)
    fp32: int = 0
    fp64: int = 0
    fp16: int = 0
    flops_fp32: int = 0
    flops_fp64: int = 0
    flops_fp16: int = 0
    int_ops: int = 0
    special: int = 0  # MUFU: sin/cos/ex2/lg2/rcp/rsqrt/sqrt/tanh approximations
    conversions: int = 0  # int<->float and float<->float cvt
    tensor: int = 0  # mma/wmma instructions
    flops_tensor: int = 0
    ld_global: int = 0
    ld_global_bytes: int = 0
    st_global: int = 0
    st_global_bytes: int = 0
    ld_generic: int = 0
    ld_generic_bytes: int = 0
    st_generic: int = 0
    st_generic_bytes: int = 0
    ld_shared: int = 0
    ld_shared_bytes: int = 0
    st_shared: int = 0
    st_shared_bytes: int = 0
    ld_local: int = 0
    ld_local_bytes: int = 0
    st_local: int = 0
    st_local_bytes: int = 0
    ld_const: int = 0
    ld_const_bytes: int = 0
    ld_tex: int = 0
    ld_tex_bytes: int = 0
    st_tex: int = 0
    st_tex_bytes: int = 0
    ld_param: int = 0
    atom_global: int = 0
    atom_global_bytes: int = 0
    atom_shared: int = 0
    atom_shared_bytes: int = 0
    atom_generic: int = 0
    atom_generic_bytes: int = 0
    branches: int = 0
    call_count: int = 0
    barriers: int = 0
    warp_ops: int = 0  # shfl/vote/match/redux
    other: int = 0  # mov, cvta, ret/exit, ...
    calls: tuple[str, ...] = ()

    def __add__(self, other: LineMix) -> LineMix:
        vals: dict[str, Any] = {}
        for f in _NUM_FIELDS:
            vals[f] = getattr(self, f) + getattr(other, f)
        calls = self.calls + tuple(c for c in other.calls if c not in self.calls)
        return LineMix(**vals, calls=calls)

    def scaled(self, k: int) -> LineMix:
        vals = {f: getattr(self, f) * k for f in _NUM_FIELDS}
        return LineMix(**vals, calls=self.calls)

    def flops(self, precision: str) -> int:
        """FLOPs of ``"fp32"``, ``"fp64"`` or ``"fp16"``; ``"int"`` gives ``int_ops``."""
        if precision == "int":
            return self.int_ops
        return int(getattr(self, f"flops_{precision}", 0))

    def loads(self, space: str) -> tuple[int, int]:
        """``(instructions, bytes)`` loaded from ``space`` (global, generic, shared, local,
        const, tex)."""
        return getattr(self, f"ld_{space}", 0), getattr(self, f"ld_{space}_bytes", 0)

    def stores(self, space: str) -> tuple[int, int]:
        return getattr(self, f"st_{space}", 0), getattr(self, f"st_{space}_bytes", 0)

    @property
    def global_load_bytes(self) -> int:
        """Bytes loaded from global memory, generic pointers and textures."""
        return self.ld_global_bytes + self.ld_generic_bytes + self.ld_tex_bytes

    @property
    def global_store_bytes(self) -> int:
        return self.st_global_bytes + self.st_generic_bytes + self.st_tex_bytes

    @property
    def global_atomic_bytes(self) -> int:
        return self.atom_global_bytes + self.atom_generic_bytes

    def nonzero(self) -> dict[str, int]:
        """The non-zero counts, for display and tests."""
        return {f: getattr(self, f) for f in _NUM_FIELDS if getattr(self, f)}


_NUM_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(LineMix) if f.name != "calls")
EMPTY = LineMix()

_TYPE_BYTES = {
    "b8": 1, "u8": 1, "s8": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
    "b128": 16, "pred": 1, "e4m3x2": 2, "e5m2x2": 2,
}  # fmt: skip
_FLOAT_PREC = {
    "f32": ("fp32", 1), "f64": ("fp64", 1), "f16": ("fp16", 1), "bf16": ("fp16", 1),
    "f16x2": ("fp16", 2), "bf16x2": ("fp16", 2), "tf32": ("fp32", 1),
}  # fmt: skip
_INT_TYPES = {"b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64"}
_INT_SIMPLE = {
    "add", "sub", "mul24", "mad24", "sad", "abs", "neg", "min", "max", "popc", "bfind",
    "brev", "bfe", "bfi", "fns", "prmt", "lop3", "shf", "shl", "shr", "and", "or", "xor",
    "not", "cnot", "dp4a", "dp2a", "addc", "subc", "madc", "set", "selp", "slct", "bmsk",
    "szext", "mul", "mad",
}  # fmt: skip
_FP_NOFLOP = {"neg", "abs", "min", "max", "setp", "set", "selp", "copysign", "testp", "slct"}
_LD = {"ld", "ldu"}
_SPACES = ("global", "shared", "local", "const", "param")
_WARP = {"shfl", "vote", "match", "redux", "activemask", "elect"}
_BARRIER = {"bar", "barrier", "membar", "fence", "mbarrier", "cp"}  # cp.async.wait_* etc.


def _types(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t in _TYPE_BYTES]


def _space(tokens: Sequence[str]) -> str:
    for t in tokens:
        for s in _SPACES:
            if t == s or t.startswith(s + "::"):
                return s
        if t in ("tex", "surf"):
            return "tex"
    return "generic"


def _vec(tokens: Sequence[str]) -> int:
    for t in tokens:
        if t in ("v2", "v4", "v8"):
            return int(t[1])
    return 1


@functools.lru_cache(maxsize=4096)
def classify(opcode: str) -> LineMix:
    """The counts of one instruction, from its opcode with modifiers (``"fma.rn.f32"``).
    Operand-dependent parts (``cp.async`` size, call targets) are added by the parser."""
    tokens = opcode.split(".")
    base, mods = tokens[0], tokens[1:]
    types = _types(mods)
    t = types[-1] if types else ""
    c: dict[str, Any] = {"instructions": 1}

    def add(**kw: int) -> LineMix:
        for k, v in kw.items():
            c[k] = c.get(k, 0) + v
        return replace(EMPTY, **c)

    # memory
    if base in _LD:
        space = _space(mods)
        if space == "param":
            return add(ld_param=1)
        size = _TYPE_BYTES.get(t, 4) * _vec(mods)
        return add(**{f"ld_{space}": 1, f"ld_{space}_bytes": size})
    if base == "st":
        space = _space(mods)
        if space == "param":
            return add(other=1)
        if space == "const":
            space = "global"
        size = _TYPE_BYTES.get(t, 4) * _vec(mods)
        return add(**{f"st_{space}": 1, f"st_{space}_bytes": size})
    if base in ("atom", "red"):
        space = _space(mods)
        space = space if space in ("global", "shared") else "generic"
        size = _TYPE_BYTES.get(t, 4) * _vec(mods)
        return add(**{f"atom_{space}": 1, f"atom_{space}_bytes": size})
    if base in ("tex", "tld4", "suld"):
        size = _TYPE_BYTES.get(types[0] if types else "f32", 4) * _vec(mods)
        return add(ld_tex=1, ld_tex_bytes=size)
    if base in ("sust", "sured"):
        size = _TYPE_BYTES.get(t or "b32", 4) * _vec(mods)
        return add(st_tex=1, st_tex_bytes=size)
    if base == "cp" and mods[:1] == ["async"] and "shared" in "".join(mods):
        if any(m.startswith(("wait", "commit", "mbarrier")) for m in mods):
            return add(barriers=1)
        return add(ld_global=1, st_shared=1)  # sizes from the operand, added by the parser
    if base in ("prefetch", "prefetchu", "applypriority", "discard", "createpolicy"):
        return add(other=1)
    # control
    if base in ("bra", "brx"):
        return add(branches=1)
    if base == "call":
        return add(call_count=1)
    if base in ("ret", "exit", "trap", "brkpt", "nanosleep", "pmevent"):
        return add(other=1)
    if base in _BARRIER:
        return add(barriers=1)
    if base in _WARP:
        return add(warp_ops=1)
    if base in ("mma", "wmma", "wgmma"):
        if "load" in mods or "store" in mods:
            kind = "ld" if "load" in mods else "st"
            space = _space(mods)
            space = space if space in ("global", "shared", "local") else "generic"
            return add(**{f"{kind}_{space}": 1})
        shape = next((m for m in mods if re.fullmatch(r"m\d+n\d+k\d+", m)), "")
        dims = [int(x) for x in re.findall(r"\d+", shape)]
        flops = 2 * dims[0] * dims[1] * dims[2] // 32 if len(dims) == 3 else 0
        return add(tensor=1, flops_tensor=flops)
    if base in ("mov", "cvta", "isspacep", "alloca", "stacksave", "stackrestore", "getctarank"):
        return add(other=1)
    # conversions
    if base in ("cvt", "cvt.pack"):
        if len(types) >= 2 and types[0] in _INT_TYPES and types[1] in _INT_TYPES:
            dst, src = types[0], types[1]
            widen = _TYPE_BYTES[dst] > _TYPE_BYTES[src]
            if (widen and src.startswith("s")) or "sat" in mods:
                return add(int_ops=1)
            return add(other=1)
        return add(conversions=1)
    # floating point
    if t in _FLOAT_PREC and base not in ("cvt",):
        prec, width = _FLOAT_PREC[t]
        ftz = "ftz" in mods
        approx = "approx" in mods
        if base in ("add", "sub", "mul"):
            return add(**{prec: width, f"flops_{prec}": width})
        if base in ("fma", "mad"):
            return add(**{prec: width, f"flops_{prec}": 2 * width})
        if base in _FP_NOFLOP:
            return add(**{prec: width})
        if base == "div":
            if prec == "fp64":
                return add(special=1, fp64=8, flops_fp64=15, fp32=3, int_ops=1, branches=1)
            if approx:
                return add(special=1, fp32=1, flops_fp32=1)
            if "full" in mods:
                return add(special=1, fp32=3, flops_fp32=2)
            if prec == "fp32":
                return add(special=1, fp32=6, flops_fp32=10, branches=1)
            return add(special=width, fp16=2 * width, flops_fp16=2 * width)
        if base == "rcp":
            if approx:
                return add(special=width)
            if prec == "fp64":
                return add(special=1, fp64=5, flops_fp64=10, fp32=1, int_ops=1)
            return add(special=1, fp32=3, flops_fp32=4, branches=1)
        if base == "sqrt":
            if prec == "fp64":
                return add(special=1, fp64=9, flops_fp64=13, int_ops=3, branches=1)
            if approx:
                return add(special=width) if ftz else add(special=width, fp32=3, flops_fp32=2)
            return add(special=1, fp32=4, flops_fp32=6, int_ops=2, branches=1)
        if base in ("rsqrt", "ex2", "lg2"):
            if ftz or prec != "fp32":
                return add(special=width)
            return add(special=1, fp32=3, flops_fp32=2)
        if base in ("sin", "cos"):
            return add(special=width, fp32=1, flops_fp32=1)
        if base == "tanh":
            return add(special=width)
        if base in ("cvt", "frnd"):
            return add(conversions=1)
        return add(**{prec: width})
    # integer
    if base == "setp" or base == "set":
        return add(int_ops=2 if _TYPE_BYTES.get(t, 4) == 8 else 1)
    if t == "pred" and base in ("and", "or", "xor", "not", "mov"):
        return add(other=1)
    if base in ("div", "rem"):
        if _TYPE_BYTES.get(t, 4) == 8:
            return add(int_ops=70, special=1, conversions=2, branches=2)
        return add(int_ops=20 if base == "div" else 15, special=1, conversions=2)
    if base == "clz":
        return add(int_ops=2)
    if base in ("mul", "mad") and _TYPE_BYTES.get(t, 4) == 8 and "wide" not in mods:
        return add(int_ops=3 if "lo" in mods or not ({"hi"} & set(mods)) else 4)
    if base in _INT_SIMPLE:
        return add(int_ops=1)
    return add(other=1)


# ---------------------------------------------------------------------------------------------
# Parsing


Key = tuple[str, int]  # (source file, 1-based line); line 0 = compiler-generated


@dataclass(frozen=True)
class PtxLoop:
    """A loop found from a backward branch: its label, the source lines of its body (direct
    attribution) and the counts of one pass through the body."""

    label: str
    first_line: int  # smallest / largest line of the body in ``file``
    last_line: int
    file: str
    lines: frozenset[Key]
    depth: int  # 1 = outermost
    mix: LineMix
    control: Key = ("", 0)  # the line of the back edge: the loop statement (``for``/``while``)


@dataclass(frozen=True)
class PtxFunction:
    name: str  # mangled symbol
    base_name: str  # demangled qualified name without parameters or template arguments
    is_kernel: bool
    lines: Mapping[Key, LineMix] = field(compare=False)  # direct attribution
    callsite_lines: Mapping[Key, LineMix] = field(compare=False)  # outermost inlined_at site
    calls: tuple[str, ...] = ()
    loops: tuple[PtxLoop, ...] = ()
    total: LineMix = EMPTY

    @property
    def short_name(self) -> str:
        return self.base_name.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class PtxModule:
    version: str
    target: str
    files: Mapping[int, str]
    functions: Mapping[str, PtxFunction] = field(compare=False)

    @property
    def kernels(self) -> tuple[PtxFunction, ...]:
        return tuple(f for f in self.functions.values() if f.is_kernel)


_FUNC_RE = re.compile(
    r"^\s*(?:\.(?:visible|weak|extern|entry_point)\s+)*\.(entry|func)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$.]*)"
)
_LOC_RE = re.compile(
    r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)"
    r"(?:\s*,\s*function_name\s+[\w$.]+)?"
    r"(?:\s*,\s*inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?"
)
_FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,?\s*"([^"]*)")?')
_LABEL_RE = re.compile(r"^\s*([\w$.]+):(?!:)")  # not "ld.shared::cta"
_CP_SIZE_RE = re.compile(r",\s*(\d+)\s*(?:,|;|$)")
_IDENT_RE = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass
class _Instr:
    opcode: str
    operands: str
    direct: tuple[int, int]
    callsite: tuple[int, int]


def _strip_comment(line: str) -> str:
    i = line.find("//")
    return line if i < 0 else line[:i]


def parse_ptx(text: str) -> PtxModule:
    """Parse PTX text (from nvcc or clang) into per-function, per-line counts."""
    lines = text.splitlines()
    files: dict[int, str] = {}
    version = target = ""
    raw_funcs: list[tuple[str, bool, list[_Instr], dict[str, int]]] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        if s.startswith(".version"):
            version = s.split()[1] if len(s.split()) > 1 else ""
        elif s.startswith(".target"):
            target = s.split()[1].rstrip(",") if len(s.split()) > 1 else ""
        elif s.startswith(".file"):
            m = _FILE_RE.match(s)
            if m:
                p = os.path.join(m.group(2), m.group(3)) if m.group(3) else m.group(2)
                files[int(m.group(1))] = p
        m = _FUNC_RE.match(line)
        if m and not s.startswith("//"):
            kind, name = m.group(1), m.group(2)
            # find the body: "{" alone on a line, or a ";" ending a declaration
            depth = line.count("(") - line.count(")")
            j = i
            body_start = None
            while j < n:
                t = _strip_comment(lines[j]).strip()
                if j > i:
                    depth += t.count("(") - t.count(")")
                if t == "{" or (t.endswith("{") and depth <= 0 and j > i):
                    body_start = j
                    break
                if depth <= 0 and t.endswith(";"):
                    break
                j += 1
            if body_start is None:
                i = j + 1
                continue
            instrs, labels, end = _parse_body(lines, body_start + 1)
            raw_funcs.append((name, kind == "entry", instrs, labels))
            i = end + 1
            continue
        i += 1
    names = {r[0] for r in raw_funcs}
    functions: dict[str, PtxFunction] = {}
    for name, is_kernel, instrs, labels in raw_funcs:
        functions[name] = _build_function(name, is_kernel, instrs, labels, files, names)
    return PtxModule(version, target, files, functions)


def _parse_body(lines: list[str], start: int) -> tuple[list[_Instr], dict[str, int], int]:
    instrs: list[_Instr] = []
    labels: dict[str, int] = {}
    inl: dict[tuple[int, int, int], tuple[int, int, int] | None] = {}
    direct = (0, 0)
    callsite = (0, 0)
    depth = 1
    i = start
    n = len(lines)
    pending: list[str] = []  # the rest of a line holding several statements
    while i < n or pending:
        if pending:
            s = pending.pop()
        else:
            s = _strip_comment(lines[i]).strip()
            i += 1
        if not s:
            continue
        # inline-asm scopes on one line: "{ .reg .f32 r0; shfl.sync...; mov.f32 %f1, r0;}"
        # (braces inside operands, "{%f1, %f2}", sit before the statement's ";")
        head, sep, tail = s.partition(";")
        if sep and tail.strip():
            pending.append(tail.strip())
            s = head + ";"
        if s.startswith("{"):
            depth += 1
            s = s[1:].strip()
            if not s:
                continue
        if s.startswith("}"):
            depth -= 1
            if depth == 0:
                return instrs, labels, i - 1
            continue
        if s.startswith("."):
            if s.startswith(".loc"):
                m = _LOC_RE.match(s)
                if m:
                    f, ln, col = int(m.group(1)), int(m.group(2)), int(m.group(3))
                    direct = (f, ln)
                    if m.group(4):
                        at = (int(m.group(4)), int(m.group(5)), int(m.group(6)))
                        inl[(f, ln, col)] = at
                        cur = at
                        for _ in range(64):
                            nxt = inl.get(cur)
                            if nxt is None:
                                break
                            cur = nxt
                        callsite = (cur[0], cur[1])
                    else:
                        inl[(f, ln, col)] = None
                        callsite = direct
            continue
        m = _LABEL_RE.match(s)
        if m and not s.startswith("@"):
            labels[m.group(1)] = len(instrs)
            s = s[m.end() :].strip()
            if not s:
                continue
        # an instruction; it may span several lines (call sequences) up to ";"
        while ";" not in s and i < n:
            cont = _strip_comment(lines[i]).strip()
            i += 1
            s += " " + cont
        s = s.split(";", 1)[0].strip()
        if s.startswith("@"):
            parts = s.split(None, 1)
            s = parts[1] if len(parts) > 1 else ""
        if not s:
            continue
        parts = s.split(None, 1)
        instrs.append(_Instr(parts[0], parts[1] if len(parts) > 1 else "", direct, callsite))
    return instrs, labels, n - 1


def _callee(operands: str) -> str | None:
    """The direct call target; None for an indirect call (through a register)."""
    rest = re.sub(r"\([^()]*\)", " ", operands)
    toks = [t.strip() for t in rest.split(",") if t.strip()]
    if toks and _IDENT_RE.fullmatch(toks[0]):
        return toks[0]
    return None


@functools.lru_cache(maxsize=4096)
def _sparse(mix: LineMix) -> tuple[tuple[int, int], ...]:
    return tuple((i, getattr(mix, f)) for i, f in enumerate(_NUM_FIELDS) if getattr(mix, f))


def _to_mix(acc: list[int], calls: list[str] | None = None) -> LineMix:
    return LineMix(**dict(zip(_NUM_FIELDS, acc, strict=True)), calls=tuple(calls or ()))


_ADD64 = frozenset({"add.s64", "add.u64"})
_REG_RE = re.compile(r"%[A-Za-z]+\d*")
_FUSED = ((_NUM_FIELDS.index("instructions"), 1), (_NUM_FIELDS.index("other"), 1))
_LD_GLOBAL_BYTES = _NUM_FIELDS.index("ld_global_bytes")
_ST_SHARED_BYTES = _NUM_FIELDS.index("st_shared_bytes")


def _build_function(
    name: str,
    is_kernel: bool,
    instrs: list[_Instr],
    labels: dict[str, int],
    files: Mapping[int, str],
    func_names: set[str],
) -> PtxFunction:
    nf = len(_NUM_FIELDS)

    def key(loc: tuple[int, int]) -> Key:
        return (files.get(loc[0], f"<file {loc[0]}>") if loc[0] else "", loc[1])

    # a mul.wide feeding a 64-bit add is one IMAD.WIDE in SASS: count the pair once
    add64_operands: set[str] = set()
    for ins in instrs:
        if ins.opcode in _ADD64:
            add64_operands.update(_REG_RE.findall(ins.operands.split(",", 1)[-1]))
    sparse: list[tuple[tuple[int, int], ...]] = []
    targets: list[str | None] = []
    calls: list[str] = []
    for ins in instrs:
        sp = _sparse(classify(ins.opcode))
        base = ins.opcode.split(".", 1)[0]
        target = None
        if ins.opcode.startswith("mul.wide.") and add64_operands:
            dest = ins.operands.split(",", 1)[0].strip()
            if dest in add64_operands:
                sp = _FUSED
        if base == "call":
            target = _callee(ins.operands)
        elif base == "mov" and func_names:
            for tok in _IDENT_RE.findall(ins.operands):
                if tok in func_names and tok != name:
                    target = tok
                    break
        elif base == "cp" and ins.opcode.startswith("cp.async") and "shared" in ins.opcode:
            m = _CP_SIZE_RE.search(ins.operands + ";")
            size = int(m.group(1)) if m else 0
            if size:
                sp = sp + ((_LD_GLOBAL_BYTES, size), (_ST_SHARED_BYTES, size))
        if target and target not in calls:
            calls.append(target)
        sparse.append(sp)
        targets.append(target)
    direct: dict[Key, list[int]] = {}
    site: dict[Key, list[int]] = {}
    direct_calls: dict[Key, list[str]] = {}
    site_calls: dict[Key, list[str]] = {}
    total = [0] * nf
    for ins, sp, target in zip(instrs, sparse, targets, strict=True):
        k = key(ins.direct)
        k2 = key(ins.callsite)
        a = direct.get(k)
        if a is None:
            a = direct[k] = [0] * nf
        b = site.get(k2)
        if b is None:
            b = site[k2] = [0] * nf
        for idx, v in sp:
            a[idx] += v
            b[idx] += v
            total[idx] += v
        if target:
            for where, kk in ((direct_calls, k), (site_calls, k2)):
                lst = where.setdefault(kk, [])
                if target not in lst:
                    lst.append(target)
    loops = _loops(instrs, labels, sparse, key)
    return PtxFunction(
        name,
        demangle_base(name),
        is_kernel,
        {k: _to_mix(v, direct_calls.get(k)) for k, v in direct.items()},
        {k: _to_mix(v, site_calls.get(k)) for k, v in site.items()},
        tuple(calls),
        loops,
        _to_mix(total, calls),
    )


def _loops(
    instrs: list[_Instr],
    labels: dict[str, int],
    sparse: list[tuple[tuple[int, int], ...]],
    key: Any,
) -> tuple[PtxLoop, ...]:
    best: dict[str, tuple[int, int]] = {}  # header label -> widest back edge
    for idx, ins in enumerate(instrs):
        if not ins.opcode.startswith("bra"):
            continue
        target = ins.operands.strip().split(",")[0].strip()
        start = labels.get(target)
        if start is not None and start <= idx and (target not in best or idx > best[target][1]):
            best[target] = (start, idx)
    out: list[PtxLoop] = []
    items = sorted(best.items(), key=lambda kv: (kv[1][0], -kv[1][1]))
    nf = len(_NUM_FIELDS)
    for label, (start, end) in items:
        depth = 1 + sum(
            1 for _, (s2, e2) in items if (s2, e2) != (start, end) and s2 <= start and end <= e2
        )
        body_keys: set[Key] = set()
        acc = [0] * nf
        for j in range(start, end + 1):
            k = key(instrs[j].direct)
            if k[1] > 0:
                body_keys.add(k)
            for idx, v in sparse[j]:
                acc[idx] += v
        by_file: dict[str, list[int]] = {}
        for f, ln in body_keys:
            by_file.setdefault(f, []).append(ln)
        main = max(sorted(by_file), key=lambda f: len(by_file[f])) if by_file else ""
        lns = by_file.get(main, [0])
        control = key(instrs[end].direct)
        out.append(
            PtxLoop(
                label,
                min(lns),
                max(lns),
                main,
                frozenset(body_keys),
                depth,
                _to_mix(acc),
                control,
            )  # fmt: skip
        )
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Demangling (base names only)


def demangle_base(symbol: str) -> str:
    """The qualified name of an Itanium-mangled symbol without parameters or template
    arguments: ``_ZN2ns6kernelIfEEvPT_i`` -> ``ns::kernel``. Unmangled names come back as they
    are; anything this small demangler does not understand comes back mangled."""
    if not symbol.startswith("_Z"):
        return symbol
    try:
        parts, _ = _name(symbol, 2)
    except (IndexError, ValueError):
        return symbol
    return "::".join(parts) if parts else symbol


def _source_name(s: str, i: int) -> tuple[str, int]:
    j = i
    while s[j].isdigit():
        j += 1
    n = int(s[i:j])
    return s[j : j + n], j + n


def _name(s: str, i: int) -> tuple[list[str], int]:
    if s[i] == "L":  # internal linkage
        i += 1
    if s[i] == "N":
        i += 1
        parts: list[str] = []
        while s[i] in "rVKRO":  # cv/ref qualifiers of member functions
            i += 1
        while s[i] != "E":
            c = s[i]
            if c.isdigit():
                name, i = _source_name(s, i)
                parts.append(name)
            elif c == "I":
                i = _skip_args(s, i)
            elif c == "S":
                if s[i + 1] == "t":
                    parts.append("std")
                    i += 2
                else:
                    i = s.index("_", i) + 1 if s[i + 1] not in "abiso" else i + 2
            elif c in "CD" and s[i + 1].isdigit():
                parts.append(("~" if c == "D" else "") + (parts[-1] if parts else ""))
                i += 2
            elif c == "L":
                i += 1
            elif c == "U":  # lambda / unnamed type: stop here
                break
            else:
                raise ValueError(c)
        return parts, i + 1
    if s.startswith("St", i):
        name, i = _source_name(s, i + 2)
        return ["std", name], i
    if s[i].isdigit():
        name, i = _source_name(s, i)
        return [name], i
    if s[i] == "Z":  # local entity: Z <function> E <entity>
        _, j = _name(s, i + 1)
        return _name(s, j + 1 if s[j] == "E" else j)
    raise ValueError(s[i])


def _skip_args(s: str, i: int) -> int:
    """Index after the template argument list starting at ``s[i] == 'I'``."""
    depth = 0
    while True:
        c = s[i]
        if c in "IN" or c == "F":
            depth += 1
            i += 1
        elif c == "E":
            depth -= 1
            i += 1
            if depth == 0:
                return i
        elif c.isdigit():
            _, i = _source_name(s, i)
        elif c == "L":  # literal: L <type> <value> E, or L _Z <encoding> E
            j = s.index("E", i + 1)
            i = j + 1
        elif c in "ST":
            if c == "S" and s[i + 1] in "abiost":
                i += 2
            else:
                i = s.index("_", i) + 1
        elif c == "A":
            i = s.index("_", i) + 1
        elif c == "D":
            i = s.index("_", i) + 1 if s[i + 1] == "v" else i + 2
        elif c == "u":
            _, i = _source_name(s, i + 1)
        else:
            i += 1


# ---------------------------------------------------------------------------------------------
# Queries for the estimator


@dataclass(frozen=True)
class KernelCounts:
    kernel: PtxFunction
    lines: Mapping[Key, LineMix] = field(compare=False)
    functions: tuple[str, ...]  # the kernel and every function whose lines are included

    @property
    def total(self) -> LineMix:
        out = EMPTY
        for m in self.lines.values():
            out = out + m
        return out


def find_kernels(module: PtxModule, name: str) -> tuple[PtxFunction, ...]:
    """Kernels matching ``name``: the mangled symbol, the qualified base name, or the last
    component of it (``saxpy`` matches ``ns::saxpy``), in PTX order."""
    fs = list(module.functions.values())
    for pred in (
        lambda f: f.name == name,
        lambda f: f.is_kernel and f.base_name == name,
        lambda f: f.is_kernel and f.short_name == name.rsplit("::", 1)[-1],
    ):
        hits = tuple(f for f in fs if pred(f))
        if hits:
            return hits
    return ()


def counts_for_kernel(
    module: PtxModule,
    kernel_name: str,
    attribution: Attribution = "direct",
    include_callees: bool = True,
) -> dict[Key, LineMix] | None:
    """Per-(file, line) counts of the kernel ``kernel_name`` (the first match of
    :func:`find_kernels`); None when the module has no such kernel (e.g. a template never
    instantiated). ``attribution="direct"`` keys instructions by their own line (an inlined
    device function's lines are its own); ``"callsite"`` by the outermost ``inlined_at`` call
    site, i.e. the kernel body line. With ``include_callees`` the lines of every ``.func``
    called (transitively) are merged in, once each; the call-site lines name them in
    ``LineMix.calls``."""
    kc = kernel_counts(module, kernel_name, attribution, include_callees)
    return dict(kc.lines) if kc is not None else None


def kernel_counts(
    module: PtxModule,
    kernel_name: str,
    attribution: Attribution = "direct",
    include_callees: bool = True,
) -> KernelCounts | None:
    hits = find_kernels(module, kernel_name)
    if not hits:
        return None
    kernel = hits[0]
    order = [kernel.name]
    if include_callees:
        todo = list(kernel.calls)
        while todo:
            c = todo.pop(0)
            if c in order or c not in module.functions:
                continue
            order.append(c)
            todo.extend(module.functions[c].calls)
    lines: dict[Key, LineMix] = {}
    for fname in order:
        f = module.functions[fname]
        src = f.lines if attribution == "direct" else f.callsite_lines
        for k, m in src.items():
            lines[k] = lines.get(k, EMPTY) + m
    return KernelCounts(kernel, lines, tuple(order))


@functools.lru_cache(maxsize=32)
def parse_ptx_cached(text: str) -> PtxModule:
    """:func:`parse_ptx` remembered for the last few PTX texts (one file's kernels are looked
    up one by one)."""
    return parse_ptx(text)


# ---------------------------------------------------------------------------------------------
# One call for the CLI and the server


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

    @property
    def ok(self) -> bool:
        return self.module is not None


async def compile_file(
    path: str,
    source: bytes | None = None,
    *,
    language: Literal["cuda", "omp"] = "cuda",
    gpu: _Named | None = None,
    arch: str | None = None,
    nvcc_setting: str | None = None,
    clang_setting: str | None = None,
    env: Mapping[str, str] | None = None,
    cache: Any = None,
    semaphore: asyncio.Semaphore | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    want: Sequence[str] = (),
    mode: CompileMode = "counting",
) -> CompiledFile:
    """Find the compiler, pick the arch for ``gpu``, pick the translation unit (a header or a
    ``kernels.cu`` is compiled through the file that includes it; then the on-disk version of
    ``path`` is what counts), compile in the bounded pool and parse.

    ``want``: kernel names (CUDA) or ``#pragma omp target`` lines as ``"@<line>"`` (OpenMP)
    the caller needs; when one is missing from the first unit's PTX (a template instantiated
    elsewhere), up to two other including files are tried.
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
            arch = f"sm_{_PROXY_SM}"
    units = await asyncio.to_thread(_units_for, path)
    if not units:
        return CompiledFile(path, None, reason="not a translation unit and no file includes it")
    first_ok: CompiledFile | None = None
    first_fail: CompiledFile | None = None
    for unit in units[:3]:
        buf = source if unit == os.path.abspath(path) else None
        unit_note = note
        if unit != os.path.abspath(path):
            extra = f"compiled through {os.path.basename(unit)}"
            unit_note = f"{note}; {extra}" if note else extra
        if clang is not None:
            res = await compile_omp_ptx_async(
                unit, buf, clang, arch, timeout=timeout, nvcc=nvcc, cache=cache,
                semaphore=semaphore,
            )  # fmt: skip
        else:
            assert nvcc is not None
            res = await compile_ptx_async(
                unit, buf, nvcc, arch, timeout=timeout, cache=cache, semaphore=semaphore,
                mode=mode,
            )  # fmt: skip
        compiler = "clang" if clang else "nvcc"
        if isinstance(res, PtxFailure):
            first_fail = first_fail or CompiledFile(
                path, unit, None, res.reason, arch, unit_note, res.cached, res.seconds, compiler
            )
            continue
        module = await asyncio.to_thread(parse_ptx_cached, res.ptx)
        out = CompiledFile(
            path, unit, module, "", arch, unit_note, res.cached, res.seconds, compiler
        )
        if not want or all(_has(module, w) for w in want):
            return out
        first_ok = first_ok or out
    result = first_ok or first_fail
    assert result is not None
    return result


def _units_for(path: str) -> list[str]:
    target = os.path.abspath(path)
    units = includers_of(target)
    if target.endswith(_TU_SUFFIXES) and not units:
        return [target]
    return units


def _has(module: PtxModule, want: str) -> bool:
    if want.startswith("@"):
        try:
            line = int(want[1:])
        except ValueError:
            return False
        return any((r := omp_region(k.name)) is not None and r[1] == line for k in module.kernels)
    return bool(find_kernels(module, want))


def compile_file_sync(path: str, source: bytes | None = None, **kw: Any) -> CompiledFile:
    """:func:`compile_file` for callers without an event loop."""
    return asyncio.run(compile_file(path, source, **kw))
