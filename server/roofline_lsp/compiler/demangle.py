"""Symbol names in PTX: the base name of an Itanium-mangled C++ symbol
(:func:`ptx_base_name`) and the function and line of an OpenMP offload entry
(:func:`omp_region`)."""

from __future__ import annotations

import re

__all__ = ["omp_region", "ptx_base_name"]


def ptx_base_name(symbol: str) -> str:
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


_OMP_RE = re.compile(r"^__omp_offloading_([0-9a-f]+)_([0-9a-f]+)_(.+)_l(\d+)$")


def omp_region(entry_name: str) -> tuple[str, int] | None:
    """``("saxpy", 12)`` for ``__omp_offloading_fe00_1a2b_saxpy_l12``: the enclosing function
    (C++ names demangled to their base name, ``_ZN2ns3runEv`` -> ``ns::run``) and the line of
    the ``#pragma omp target``; None for other names."""
    m = _OMP_RE.match(entry_name)
    if not m:
        return None
    return ptx_base_name(m.group(3)), int(m.group(4))
