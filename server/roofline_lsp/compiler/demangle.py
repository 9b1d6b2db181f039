"""Symbol names in PTX: the base name of an Itanium-mangled C++ symbol
(:func:`ptx_base_name`), whether its template arguments are the ones meant
(:func:`spells_template_args`), and the function and line of an OpenMP offload entry
(:func:`omp_region`)."""

from __future__ import annotations

import re

__all__ = ["omp_region", "ptx_base_name", "spells_template_args"]


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


def spells_template_args(symbol: str, args: tuple[str, ...]) -> bool:
    """Whether the template argument list of ``symbol``'s name (an OpenMP entry's enclosing
    function's) spells ``args`` in order: ``float`` as ``f``, ``float4`` as ``6float4``,
    ``3`` and ``true`` as literals (``Li3E``, ``Lb1E``); False for an argument this does not
    spell (a pointer, a nested template)."""
    spelled = [_spelled(a) for a in args]
    region = _OMP_RE.match(symbol)
    listed = _template_args(region.group(3) if region else symbol)
    if listed is None or not spelled or None in spelled:
        return False
    rest = listed[1:]  # after the ``I``
    for sp in spelled:
        assert sp is not None
        hit = re.match(r"L[a-z]" + re.escape(sp[1:]) + "E" if sp[0] == "L" else re.escape(sp), rest)
        if hit is None:
            return False
        rest = rest[hit.end() :]
    return rest == "E"


def _template_args(s: str) -> str | None:
    """The mangled template argument list (``I...E``) of the name of symbol ``s``: of its
    last component when nested (``_ZN2ns3runIfEEv``), None when it has none."""
    if not s.startswith("_Z"):
        return None
    try:
        i = 3 if s[2] == "L" else 2
        if s[i].isdigit():
            _, i = _source_name(s, i)
        elif s[i] == "N":
            i += 1
            while s[i] in "rVKRO":
                i += 1
            while s[i].isdigit():
                _, i = _source_name(s, i)
        return s[i : _skip_args(s, i)] if s[i] == "I" else None
    except (IndexError, ValueError):
        return None


# Itanium ABI spellings of builtin types (a template argument in a mangled name)
_BUILTIN = {
    "void": "v", "bool": "b", "char": "c", "signed char": "a", "unsigned char": "h",
    "short": "s", "unsigned short": "t", "int": "i", "unsigned int": "j", "unsigned": "j",
    "long": "l", "unsigned long": "m", "long long": "x", "unsigned long long": "y",
    "float": "f", "double": "d", "__half": "6__half", "half": "6__half",
    "size_t": "m", "int64_t": "l", "uint64_t": "m", "int32_t": "i", "uint32_t": "j",
}  # fmt: skip


def _spelled(arg: str) -> str | None:
    """How one template argument appears in a mangled name: ``float`` -> ``f``, ``float4``
    -> ``6float4``, ``3`` -> an integer literal ``L3`` (its type letter is matched as any);
    None for what this does not spell."""
    a = " ".join(re.sub(r"\bconst\b", " ", arg).split())
    a = {"true": "1", "false": "0"}.get(a, a)
    if re.fullmatch(r"-?\d+[uUlL]*", a):
        return "L" + a.rstrip("uUlL").replace("-", "n")
    if a in _BUILTIN:
        return _BUILTIN[a]
    name = a.rsplit("::", 1)[-1]
    return f"{len(name)}{name}" if re.fullmatch(r"[A-Za-z_]\w*", name) else None


_OMP_RE = re.compile(r"^__omp_offloading_([0-9a-f]+)_([0-9a-f]+)_(.+)_l(\d+)$")


def omp_region(entry_name: str) -> tuple[str, int] | None:
    """``("saxpy", 12)`` for ``__omp_offloading_fe00_1a2b_saxpy_l12``: the enclosing function
    (C++ names demangled to their base name, ``_ZN2ns3runEv`` -> ``ns::run``) and the line of
    the ``#pragma omp target``; None for other names."""
    m = _OMP_RE.match(entry_name)
    if not m:
        return None
    return ptx_base_name(m.group(3)), int(m.group(4))
