"""Finding the compilers and choosing the target architecture.

- :func:`find_nvcc` / :func:`locate_nvcc`: the setting, ``CUDA_HOME``/``CUDA_PATH``, ``PATH``,
  then the toolkit's standard install folders (``/usr/local/cuda/bin``, the newest
  ``/usr/local/cuda-*/bin``, ``/opt/cuda/bin``). :func:`nvcc_version` and
  :func:`supported_archs` ask the compiler once per binary (cached).
- :func:`find_offload_clang`: a clang with the OpenMP NVPTX device runtime installed, for
  ``#pragma omp target`` regions; :func:`cuda_root` the toolkit (libdevice) it needs.
- :func:`arch_for` / :func:`arch_choice`: the ``sm_XY`` matching a GPU profile, clamped to what
  the compiler supports; AMD and Intel GPUs get an NVIDIA arch as an instruction-mix proxy.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = [
    "PROXY_SM",
    "ArchChoice",
    "NamedGpu",
    "arch_choice",
    "arch_for",
    "clang_version",
    "cuda_root",
    "find_nvcc",
    "find_offload_clang",
    "locate_nvcc",
    "nvcc_version",
    "supported_archs",
]

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


class NamedGpu(Protocol):
    """Any GPU description with a name (``GpuProfile``, a test stand-in)."""

    @property
    def name(self) -> str: ...


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


def clang_version(clang: str) -> str | None:
    """``"16.0.6"`` (from ``clang --version``), or None; cached per binary like nvcc's."""
    text = _run_info(_stat_key(clang), "--version")
    if not text:
        return None
    m = re.search(r"version (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else None


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


def cuda_root(nvcc: str | None) -> str | None:
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
PROXY_SM = 80  # NVIDIA arch used as an instruction-mix proxy for AMD and Intel GPUs


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _gpu_sm(gpu: NamedGpu) -> int | None:
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


def _is_nvidia(gpu: NamedGpu) -> bool:
    vendor = str(getattr(gpu, "vendor", "") or "").lower()
    if vendor:
        return vendor == "nvidia"
    n = _norm(" ".join([gpu.name, *getattr(gpu, "aliases", ())]))
    return not any(k in n for k in ("mi1", "mi2", "mi3", "radeon", "gfx", "amd", "intel", "max1"))


def arch_choice(gpu: NamedGpu, supported: Sequence[int] | None = None) -> ArchChoice:
    """The ``sm_XY`` to compile for ``gpu`` (any object with ``.name``; ``.vendor``,
    ``.aliases``, ``.full_name`` and a ``compute_capability`` are used when present), clamped
    to ``supported`` (from :func:`supported_archs`)."""
    note = ""
    if _is_nvidia(gpu):
        wanted = _gpu_sm(gpu)
        sm = wanted if wanted is not None else PROXY_SM
        if wanted is None:
            note = f"unknown NVIDIA GPU {gpu.name}: compiled for sm_{sm}"
    else:
        wanted = None
        sm = PROXY_SM
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


def arch_for(gpu: NamedGpu, supported: Sequence[int] | None = None) -> str:
    """``"sm_86"`` for an RTX 3080, ``"sm_90"`` for an H100, ...; see :func:`arch_choice`."""
    return arch_choice(gpu, supported).arch
