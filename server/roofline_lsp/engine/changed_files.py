"""Narrowing ``check``'s files for CI: the files changed since a git revision (and the files
that include them), and one shard of a deterministic split for a CI matrix."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from roofline_lsp.compiler.compile_units import local_includes
from roofline_lsp.engine.files import InputError
from roofline_lsp.syntax.sources import fallback_folders, read_from_disk


def _git(cwd: str, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", cwd, *args], capture_output=True, timeout=60, check=False
        )
    except FileNotFoundError:
        raise InputError("--changed-since: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"--changed-since: git {args[0]} timed out") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[0] if lines else f"git {args[0]} failed"
        raise InputError(f"--changed-since: {why}")
    return proc.stdout.decode("utf-8", "replace")


def changed_paths(ref: str, where: str) -> set[str]:
    """Absolute paths of the files changed between ``ref`` and the working tree of the git
    repository holding ``where`` (committed, staged or not, and untracked files)."""
    folder = where if os.path.isdir(where) else os.path.dirname(os.path.abspath(where))
    root = _git(folder, "rev-parse", "--show-toplevel").strip()
    try:
        _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except InputError:
        raise InputError(f"--changed-since {ref}: not a commit in {root}") from None
    names = _git(root, "diff", "--name-only", "-z", ref, "--").split("\0")
    names += _git(root, "ls-files", "--others", "--exclude-standard", "-z").split("\0")
    return {os.path.realpath(os.path.join(root, n)) for n in names if n}


def changed_files(files: Sequence[str], changed: set[str]) -> list[str]:
    """The files of ``files`` that changed or whose local includes (transitively, resolved
    from the including file's folder, then the project's header folders a build's
    ``-I../include`` would name) reach a changed file; in the order of ``files``."""
    out: list[str] = []
    for f in files:
        real = os.path.realpath(f)
        if real in changed:
            out.append(f)
            continue
        data = read_from_disk(f)  # a regular file only: never a FIFO
        if (
            data is not None
            and b"include" in data
            and any(
                os.path.realpath(p) in changed
                for p, _ in local_includes(real, data, fallback_folders(os.path.dirname(real)))
            )
        ):
            out.append(f)
    return out


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` (1 <= I <= N) as ``(I, N)``; InputError otherwise."""
    left, sep, right = text.partition("/")
    try:
        i, n = int(left), int(right)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise InputError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. 1/4")
    return i, n


def shard(files: Sequence[str], i: int, n: int) -> list[str]:
    """Shard ``i`` of ``n`` (1-based) of ``files``: every n-th file from the i-th, so shards
    are balanced in count, disjoint, and together are ``files``."""
    return list(files[i - 1 :: n])
