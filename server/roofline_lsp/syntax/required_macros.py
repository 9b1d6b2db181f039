"""Configurations a source demands from its build, which a Makefile's ``-D`` flags give: a
chain of alternatives that stops the preprocessor at an ``#error`` when the build defines
none of them (``#if defined SHORT`` ... ``#elif defined INT`` ... ``#else #error Must define
one of SHORT, INT, or LONG``). The analysis reads the first branch's definitions
(``conditionals.py``: a name defined only on branches not taken keeps the first of them), so
the compile is given the first alternative too (:func:`required_macros`, for
``compiler/compile_jobs.py``).

A name whose ``#ifdef`` branch alone holds the GPU code (``#ifdef OMP_TARGET`` around a
``#pragma omp target``) is not defined up front: such a name often needs others of the build
with it, and the compile then failed where it had compiled (without the region). The
analysis reads the region as offloaded all the same; :func:`guarding_names` gives the names
for a second compile when the first one's PTX lacks the region (``compiled_file.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_DIRECTIVE = re.compile(rb"^\s*#\s*(\w+)(.*)$")
_DEFINED = re.compile(rb"^\s*(?:defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+))\s*$")
_DEFINE = re.compile(rb"^\s*#\s*define\s+(\w+)", re.M)


@dataclass(frozen=True)
class RequiredChoice:
    """One ``#if defined A / #elif defined B / ... / #else #error`` chain: ``names`` in
    order, the ``#error`` on ``line`` of ``file``."""

    file: str
    line: int
    names: tuple[str, ...]


@dataclass
class _Chain:
    names: list[str | None]  # the name each branch tests (None: another condition)
    in_else: bool = False
    error_line: int = 0


def required_choices(path: str, source: bytes) -> list[RequiredChoice]:
    """The chains of ``source`` (the file ``path``) whose ``#else`` is an ``#error``."""
    out: list[RequiredChoice] = []
    stack: list[_Chain] = []
    for n, raw in enumerate(source.splitlines(), 1):
        m = _DIRECTIVE.match(raw)
        if m is None:
            continue
        d, rest = m.group(1), m.group(2).split(b"//", 1)[0].strip()
        if d in (b"if", b"ifdef", b"ifndef"):
            stack.append(_Chain([_tested_name(d, rest)]))
        elif d in (b"elif", b"elifdef", b"elifndef") and stack:
            stack[-1].names.append(_tested_name(b"if" if d == b"elif" else d[2:], rest))
        elif d == b"else" and stack:
            stack[-1].in_else = True
        elif d == b"error" and stack and stack[-1].in_else and not stack[-1].error_line:
            stack[-1].error_line = n
        elif d == b"endif" and stack:
            c = stack.pop()
            names = [x for x in c.names if x is not None]
            if c.error_line and len(names) == len(c.names) >= 2:
                out.append(RequiredChoice(path, c.error_line, tuple(names)))
    return out


def _tested_name(directive: bytes, condition: bytes) -> str | None:
    if directive == b"ifdef":
        return condition.split()[0].decode() if condition.split() else None
    if directive == b"ifndef":
        return None
    m = _DEFINED.match(condition)
    if m is None:
        return None
    return (m.group(1) or m.group(2)).decode()


def required_macros(
    texts: Iterable[tuple[str, bytes]], flags: Iterable[str]
) -> tuple[tuple[str, RequiredChoice], ...]:
    """For each chain of ``texts`` (a file and its local includes) whose names none of the
    ``-D`` ``flags`` and no ``#define`` of the texts defines: the first name, to define for
    the compile, with its chain."""
    texts = list(texts)
    args = list(flags)
    defined = {
        (f[2:] or (args[i + 1] if i + 1 < len(args) else "")).split("=", 1)[0]
        for i, f in enumerate(args)
        if f.startswith("-D")
    }
    for _, body in texts:
        defined.update(m.group(1).decode() for m in _DEFINE.finditer(body))
    out: list[tuple[str, RequiredChoice]] = []
    for path, body in texts:
        for choice in required_choices(path, body):
            if not defined.intersection(choice.names):
                out.append((choice.names[0], choice))
                defined.add(choice.names[0])
    return tuple(out)


def guarding_names(source: bytes, lines: Iterable[int]) -> tuple[str, ...]:
    """The names the ``#ifdef NAME`` / ``#if defined(NAME)`` around each of ``lines`` test
    (on their first branch), that ``source`` does not ``#define``: what the build's ``-D``
    gives for the code on those lines to be compiled."""
    want = set(lines)
    defined = {m.group(1).decode() for m in _DEFINE.finditer(source)}
    out: list[str] = []
    stack: list[str | None] = []  # the name each open conditional's current branch needs
    for n, raw in enumerate(source.splitlines(), 1):
        m = _DIRECTIVE.match(raw)
        d, rest = (m.group(1), m.group(2).split(b"//", 1)[0].strip()) if m else (b"", b"")
        if d in (b"if", b"ifdef", b"ifndef"):
            stack.append(_tested_name(d, rest))
        elif d in (b"elif", b"else", b"elifdef", b"elifndef") and stack:
            stack[-1] = None
        elif d == b"endif" and stack:
            stack.pop()
        elif n in want:
            for name in stack:
                if name is not None and name not in defined and name not in out:
                    out.append(name)
    return tuple(out)
