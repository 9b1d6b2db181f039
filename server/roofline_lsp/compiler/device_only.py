"""A translation unit's device code alone, for when the whole file does not compile here.

A project's host code often needs what the tool cannot see: a header from another folder
(``SDKBitMap.h``, ``cublas_v2.h``), a library, an API an older toolkit had. The kernels rarely
do. :func:`device_only` blanks the host-only function definitions and host variables of a
source (spaces in place of their bytes, newlines kept, so every line keeps its number and the
PTX line info still points at the original lines); the compile is retried on that text, with
an empty stand-in for each header still missing (:func:`missing_header`).

Kept: kernels and device functions (``__global__``, ``__device__``, or a macro the file
defines as one: ``#define HD __host__ __device__``), ``constexpr`` functions, functions
holding an OpenMP/OpenACC offload region or in a ``declare target`` block, and host functions
launching a template kernel (the launch instantiates it). A host function such a launcher
calls (``cudaCheck(cudaGetLastError())`` calling ``cuda_check``) can be kept as a declaration,
its body left out (:func:`undeclared_names` reads which from the compiler's errors).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from tree_sitter import Node

from roofline_lsp.syntax.functions import function_declarator, function_name
from roofline_lsp.syntax.parsing import parse

__all__ = ["device_only", "missing_header", "undeclared_names"]

_DEVICE = re.compile(rb"\b__(?:global|device)__\b|\bconstexpr\b")
# a region of device code (not ``target data``/``update``: they only move data)
_OFFLOAD = re.compile(
    rb"#\s*pragma\s+(?:omp\s+target(?!\s+(?:data|enter|exit|update)\b)"
    rb"|acc\s+(?:parallel|kernels|serial)\b)"
)
_TEMPLATE_LAUNCH = re.compile(rb"\b[A-Za-z_]\w*\s*<[^<>;{}]*>\s*<<<")
_DECLARE_TARGET = re.compile(
    rb"#\s*pragma\s+omp\s+(?:begin\s+)?declare\s+target\b.*?#\s*pragma\s+omp\s+end\s+declare"
    rb"\s+target\b",
    re.S,
)
_DEVICE_VARIABLE = re.compile(rb"\b__(?:device|constant|shared|managed)__\b|\bconst(?:expr)?\b")
# gcc/nvcc: ``x.cu:7:10: fatal error: SDKBitMap.h: No such file or directory``;
# clang: ``x.cpp:7:10: fatal error: 'SDKBitMap.h' file not found``
_MISSING = re.compile(
    r"fatal error: (?:'([^'\n]+)' file not found|([^:\n]+): No such file or directory)"
)


# nvcc: ``error: identifier "cuda_check" is undefined``; clang: ``error: use of undeclared
# identifier 'cuda_check'``
_UNDECLARED = re.compile(
    r"error: (?:identifier \"([A-Za-z_]\w*)\" is undefined"
    r"|use of undeclared identifier '([A-Za-z_]\w*)')"
)


def missing_header(log: str) -> str | None:
    """The include a failed compile could not find, as the source wrote it."""
    m = _MISSING.search(log)
    return (m.group(1) or m.group(2)).strip() if m else None


def undeclared_names(log: str) -> set[str]:
    """The identifiers a failed compile found undeclared."""
    return {m.group(1) or m.group(2) for m in _UNDECLARED.finditer(log)}


def device_only(source: bytes, declared: Collection[str] = ()) -> bytes | None:
    """``source`` with its host-only function definitions and host variables blanked (those
    of the functions named in ``declared`` but their declaration); None when there is
    nothing to leave out."""
    tree = parse(source)
    keep_ranges = [(m.start(), m.end()) for m in _DECLARE_TARGET.finditer(source)]
    device = _device_markers(source)
    spans: list[tuple[int, int]] = []
    ends: list[int] = []  # where a kept declaration's ``;`` goes
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            if not _kept(node, source, keep_ranges, device):
                head = _declaration_end(node) if declared else None
                if head is not None and function_name(node) in declared:
                    spans.append((head, node.end_byte))
                    ends.append(head)
                else:
                    spans.append(_whole(node))
            continue
        if node.type == "declaration" and node.parent is not None:
            if node.parent.type in ("translation_unit", "declaration_list") and _host_variable(
                node, source
            ):
                spans.append(_whole(node))
            continue
        if node.type in ("translation_unit", "declaration_list", "namespace_definition",
                         "linkage_specification", "template_declaration", "preproc_if",
                         "preproc_ifdef", "preproc_else", "preproc_elif"):  # fmt: skip
            stack.extend(node.children)
    if not spans:
        return None
    out = bytearray(source)
    for start, end in spans:
        for i in range(start, end):
            if out[i] not in (10, 13):
                out[i] = 32
    for at in ends:
        out[at] = ord(";")
    return bytes(out)


def _device_markers(source: bytes) -> re.Pattern[bytes]:
    """``__global__``/``__device__``/``constexpr``, and the macros of ``source`` that expand
    to them (``#define HD __host__ __device__``)."""
    names = [
        re.escape(m.group(1))
        for m in re.finditer(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]*)", source, re.M)
        if _DEVICE.search(m.group(2))
    ]
    return re.compile(_DEVICE.pattern + b"".join(rb"|\b" + n + rb"\b" for n in names))


def _kept(
    fn: Node, source: bytes, keep_ranges: list[tuple[int, int]], device: re.Pattern[bytes]
) -> bool:
    body = fn.child_by_field_name("body")
    head = source[fn.start_byte : body.start_byte if body is not None else fn.end_byte]
    if body is None or device.search(head) or function_declarator(fn) is None:
        return True  # (``struct __align__(8) T {...};``: a type the grammar took for one)
    if any(a <= fn.start_byte and fn.end_byte <= b for a, b in keep_ranges):
        return True
    inside = source[body.start_byte : body.end_byte]
    return bool(_OFFLOAD.search(inside) or _TEMPLATE_LAUNCH.search(inside))


def _declaration_end(fn: Node) -> int | None:
    """Where a function definition's declaration ends (its body, a constructor's member
    initializers or a ``try`` after it): the definition becomes a declaration with a ``;``
    there."""
    d = fn.child_by_field_name("declarator")
    if d is None or fn.child_by_field_name("body") is None:
        return None
    return d.end_byte


def _host_variable(decl: Node, source: bytes) -> bool:
    """A file-scope variable device code cannot use: not ``__device__``/``__constant__``,
    not ``const`` (a constant a kernel may read); not a function's declaration, nor one that
    defines a type (``struct T {...} t;``)."""
    declarators = decl.children_by_field_name("declarator")
    if not declarators or any(d.type == "function_declarator" for d in declarators):
        return False
    kind = decl.child_by_field_name("type")
    if kind is not None and any(
        c.type in ("field_declaration_list", "enumerator_list") for c in kind.children
    ):
        return False
    return not _DEVICE_VARIABLE.search(source[decl.start_byte : decl.end_byte])


def _whole(node: Node) -> tuple[int, int]:
    """The bytes to blank for ``node``: with the ``template <...>`` or ``extern "C"`` that
    only it follows."""
    while node.parent is not None and node.parent.type in (
        "template_declaration",
        "linkage_specification",
    ):
        if (
            node.parent.type == "linkage_specification"
            and node.parent.child_by_field_name("body") != node
        ):
            break
        node = node.parent
    return node.start_byte, node.end_byte
