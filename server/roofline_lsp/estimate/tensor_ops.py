"""Tensor-core matrix multiply-adds in source: ``wmma::mma_sync(d, a, b, c)`` multiplies an
M x K tile by a K x N tile for a whole warp, 2 * M * N * K FLOP, which each of the warp's 32
threads is charged a 32nd of (as the PTX counts charge ``wmma.mma``/``mma``); a fragment's
load or store moves its tile, each lane a 32nd of it (``elements_per_thread``). The tile shape
and the operands' type come from the ``wmma::fragment<use, M, N, K, T, layout>`` declarations
of the fragments passed.

Nsight Compute's FLOP counters leave tensor-core work out (the eval labels count none); a
roofline of the GPU's tensor-core peak is the one such a kernel meets, so the verdict weighs
these FLOPs against it (``GpuProfile.tensor_peak``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.syntax.cexpr import split_args

WARP = 32

# ``fragment<matrix_a, 16, 16, 8, precision::tf32, row_major> a_frag, b[2];``
_FRAGMENT = re.compile(
    r"\bfragment\s*<(?P<args>[^;{}<>]*(?:<[^;{}<>]*>[^;{}<>]*)*)>\s*(?P<names>[^;(){}]*);"
)
# ``auto fragA = wmma::fragment<matrix_a, ...>();``
_AUTO_FRAGMENT = re.compile(
    r"\bauto\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?:[\w:]+::)?fragment\s*<"
    r"(?P<args>[^;{}<>]*(?:<[^;{}<>]*>[^;{}<>]*)*)>\s*[({]"
)
_SUBSCRIPT = re.compile(r"\[[^\]]*\]")
# the operand type of a fragment (its fifth template argument) -> its PTX type
_KINDS = (
    (re.compile(r"\btf32\b"), "tf32"),
    (re.compile(r"\b(?:__nv_bfloat16|bfloat16|bf16)\b"), "bf16"),
    (re.compile(r"\b(?:__half|half)\b"), "f16"),
    (re.compile(r"\bdouble\b"), "f64"),
    (re.compile(r"\b(?:unsigned\s+char|uint8_t|u8)\b"), "u8"),
    (re.compile(r"\b(?:signed\s+char|char|int8_t|s8)\b"), "s8"),
    (re.compile(r"\bu4\b"), "u4"),
    (re.compile(r"\bs4\b"), "s4"),
    (re.compile(r"\bb1\b"), "b1"),
)


@dataclass(frozen=True)
class Fragment:
    """A declared fragment: its use (``matrix_a``, ``matrix_b``, ``accumulator``), the tile
    shape texts M, N, K and its operand type text (empty for an accumulator without one)."""

    use: str
    m: str
    n: str
    k: str
    element: str


def fragments(source: str) -> dict[str, Fragment]:
    """The fragments ``source`` declares, by variable name (an array of them by its name)."""
    out: dict[str, Fragment] = {}
    for m in _FRAGMENT.finditer(source):
        frag = _fragment(m.group("args"))
        for name in _SUBSCRIPT.sub("", m.group("names")).split(","):
            name = name.strip().lstrip("*&").strip()
            if frag is not None and re.fullmatch(r"[A-Za-z_]\w*", name):
                out[name] = frag
    for m in _AUTO_FRAGMENT.finditer(source):
        frag = _fragment(m.group("args"))
        if frag is not None:
            out[m.group("name")] = frag
    return out


def _fragment(args_text: str) -> Fragment | None:
    args = split_args(args_text, angles=True)
    if len(args) < 4:
        return None
    use = args[0].rsplit("::", 1)[-1]
    return Fragment(use, args[1], args[2], args[3], args[4] if len(args) > 4 else "")


def file_fragments(node: Node) -> dict[str, Fragment]:
    """The fragments the file holding ``node`` declares (:func:`fragments`), by name."""
    root = node
    while root.parent is not None:
        root = root.parent
    return _file_fragments(root.text or b"")


@functools.lru_cache(maxsize=16)
def _file_fragments(source: bytes) -> dict[str, Fragment]:
    if b"fragment" not in source:
        return {}
    return fragments(source.decode("utf-8", "replace"))


def fragment_type(type_text: str) -> Fragment | None:
    """The fragment a variable's declared type text is (``wmma::fragment<matrix_a, ...>``),
    else None."""
    found = fragments(type_text + " _;")
    return found.get("_")


def elements_per_thread(frag: Fragment, value: Callable[[str], float | None]) -> float | None:
    """``num_elements`` of a fragment: the tile's elements a thread of the warp holds (an
    M x K ``matrix_a``, a K x N ``matrix_b``, an M x N accumulator, over 32 threads)."""
    sides = {"matrix_a": (frag.m, frag.k), "matrix_b": (frag.k, frag.n)}.get(
        frag.use, (frag.m, frag.n)
    )
    rows, cols = value(sides[0]), value(sides[1])
    if rows is None or cols is None:
        return None
    return max(rows * cols / WARP, 1.0)


def operand_name(arg: str) -> str:
    """The fragment variable an ``mma_sync`` argument names (``a_frag[i]``, ``&b``: the
    array / variable)."""
    return _SUBSCRIPT.sub("", arg).strip().lstrip("&*").strip()


def operand_kind(element: str) -> str:
    """The PTX type of a fragment's operand type text (``precision::tf32``: ``tf32``,
    ``half``: ``f16``); ``f16`` when the text names none of them."""
    for pattern, kind in _KINDS:
        if pattern.search(element):
            return kind
    return "f16"


def mma_flops(
    a: Fragment | None, known: dict[str, Fragment], value: Callable[[str], float | None]
) -> tuple[float, str] | None:
    """FLOPs per thread of one ``mma_sync`` whose A operand is fragment ``a`` (else the first
    ``matrix_a`` fragment ``known`` holds), and its operands' PTX type; None when no fragment
    is declared in view or its shape is not a number (``value`` evaluates a shape text)."""
    frag = a or next((f for f in known.values() if f.use == "matrix_a"), None)
    frag = frag or next(iter(known.values()), None)
    if frag is None:
        return None
    dims = [value(t) for t in (frag.m, frag.n, frag.k)]
    if any(d is None or d <= 0 for d in dims):
        return None
    m, n, k = (float(d) for d in dims if d is not None)
    element = frag.element if frag.use != "accumulator" else ""
    if not element:
        element = next((f.element for f in known.values() if f.use == "matrix_a"), "")
    return 2.0 * m * n * k / WARP, operand_kind(element)
