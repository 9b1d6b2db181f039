"""Which ``#if``/``#ifdef``/``#elif``/``#else`` branch the preprocessor keeps.

A file often defines one name on several branches (``#ifdef DOUBLE_PRECISION`` /
``#define FP double`` / ``#else`` / ``#define FP float``); the definition that counts is the
one on the branch taken with the definitions in effect: those earlier in the file and in the
files it includes. A name nothing defines is undefined, as for the preprocessor (a build's
``-D`` flags are not in the source), except the names reserved to the implementation
(``__CUDACC__``, ``__CUDA_ARCH__``, ``_OPENMP``: the compiler predefines them, per pass), which
are unknown. A condition this module cannot evaluate decides nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from tree_sitter import Node

from roofline_lsp.syntax.cexpr import evaluate
from roofline_lsp.syntax.expr import text

CONDITIONALS = frozenset({"preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef"})

# whether a name is defined before a byte offset of the file (None: cannot be known)
Defined = Callable[[str, int], bool | None]
_RESERVED = re.compile(r"_[A-Z_]")


def defined_before(starts: Mapping[str, list[int]], included: set[str]) -> Defined:
    """``defined`` for a file whose own definitions of each name start at ``starts`` and
    whose included files define ``included``; a reserved name nothing here defines (the
    compiler's own) is unknown."""

    def defined(name: str, at: int) -> bool | None:
        if name in included or any(s < at for s in starts.get(name, ())):
            return True
        if name not in starts and _RESERVED.match(name):
            return None
        return False

    return defined


def branch_taken(node: Node, defined: Defined, values: Mapping[str, str]) -> bool | None:
    """Whether the preprocessor keeps ``node``: False when an enclosing condition is decided
    against its branch, True when every enclosing condition is decided for it, None when one
    cannot be evaluated. ``values``: object-like macros' bodies, for ``#if N == 1``."""
    taken: bool | None = True
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in CONDITIONALS:
            cond = condition_holds(parent, defined, values)
            in_alternative = parent.child_by_field_name("alternative") == child
            if in_alternative:
                cond = None if cond is None else not cond
            if cond is False:
                return False
            if cond is None:
                taken = None
        child, parent = parent, parent.parent
    return taken


def condition_holds(node: Node, defined: Defined, values: Mapping[str, str]) -> bool | None:
    """The truth of one ``#if``/``#elif`` condition or ``#ifdef``/``#ifndef`` name."""
    at = node.start_byte
    if node.type in ("preproc_ifdef", "preproc_elifdef"):
        name = node.child_by_field_name("name")
        if name is None:
            return None
        negated = node.children[0].type.endswith("ndef") if node.children else False
        d = defined(text(name), at)
        return None if d is None else d != negated
    cond = node.child_by_field_name("condition")
    return None if cond is None else _truth(cond, defined, values, at)


def _truth(node: Node, defined: Defined, values: Mapping[str, str], at: int) -> bool | None:
    t = node.type
    if t == "preproc_defined":
        name = next((c for c in node.named_children if c.type == "identifier"), None)
        return None if name is None else defined(text(name), at)
    if t == "parenthesized_expression" and len(node.named_children) == 1:
        return _truth(node.named_children[0], defined, values, at)
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is not None and op.type == "!" and arg is not None:
            inner = _truth(arg, defined, values, at)
            return None if inner is None else not inner
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if op is not None and left is not None and right is not None and op.type in ("&&", "||"):
            a = _truth(left, defined, values, at)
            b = _truth(right, defined, values, at)
            if op.type == "&&":
                return False if False in (a, b) else (None if None in (a, b) else True)
            return True if True in (a, b) else (None if None in (a, b) else False)
    # arithmetic over macro values; a name nothing defined before here is 0 (C11 6.10.1)
    expr = text(node)
    if "defined" in expr:
        return None
    env: dict[str, str] = {}
    for name in set(re.findall(r"[A-Za-z_]\w*", expr)):
        d = defined(name, at)
        if d is False:
            env[name] = "0"
        elif d and name in values:
            env[name] = values[name]
        else:
            return None
    v = evaluate(expr, env)
    return None if v is None else v != 0


_BRANCHES = CONDITIONALS | {"preproc_else"}


def file_defined(node: Node) -> Defined:
    """``defined`` for the file holding ``node``, from its own ``#define``s: a name it
    defines is defined from there on; a name it never defines is unknown (the files it
    includes or the build's ``-D`` flags may define it: ``OMP_TARGET``, ``VERIFY``)."""
    root = node
    while root.parent is not None:
        root = root.parent
    starts: dict[str, list[int]] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("preproc_def", "preproc_function_def"):
            name = n.child_by_field_name("name")
            if name is not None:
                starts.setdefault(text(name), []).append(n.start_byte)
        elif n.type in ("translation_unit", "declaration_list", "linkage_specification") or (
            n.type in _BRANCHES
        ):
            stack.extend(n.named_children)
    known = defined_before(starts, set())

    def defined(name: str, at: int) -> bool | None:
        return known(name, at) if name in starts else None

    return defined


def default_build(node: Node) -> Defined:
    """``defined`` for the file holding ``node`` built without ``-D`` flags: its own
    ``#define``s (:func:`file_defined`), and no other name of the program's (``#ifdef
    EXAMPLE`` takes its ``#else``); the compiler's own names (``__CUDACC__``, ``_OPENMP``)
    stay unknown."""
    own = file_defined(node)

    def defined(name: str, at: int) -> bool | None:
        d = own(name, at)
        return d if d is not None or name.startswith("_") else False

    return defined


def branch_parts(node: Node) -> list[Node]:
    """What a conditional's branch holds: its children other than the condition, the
    name and the alternative."""
    skip = {
        c.id
        for f in ("condition", "name", "alternative")
        if (c := node.child_by_field_name(f)) is not None
    }
    return [c for c in node.named_children if c.id not in skip]


def dropped(node: Node, defined: Defined) -> bool:
    """Whether ``node``, a part of a conditional's branch, is on a branch the preprocessor
    drops (an undecidable condition drops nothing)."""
    return branch_taken(node, defined, {}) is False


def active_text(node: Node, defined: Defined) -> str:
    """``node``'s text as the compiler sees it: the directive lines of its conditionals
    (``#ifdef VERIFY``, ``#else``, ``#endif``) and the branches the preprocessor drops are
    blanked (newlines kept), so ``if (++i < argc) <#ifdef VERIFY: n = 1; #else: n =
    atoi(argv[i]); #endif>`` reads ``if (++i < argc) n = atoi(argv[i]);``."""
    src = bytearray(node.text or b"")
    base = node.start_byte

    def blank(start: int, end: int) -> None:
        for i in range(max(start - base, 0), min(end - base, len(src))):
            if src[i] not in (10, 13):
                src[i] = 32

    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in _BRANCHES:
            parts = branch_parts(n)
            # the directive line: from the ``#`` to the first part (or the alternative)
            alt = n.child_by_field_name("alternative")
            firsts = [p.start_byte for p in parts] + ([alt.start_byte] if alt else [])
            blank(n.start_byte, min(firsts, default=n.end_byte))
            for c in n.children:
                if c.type == "#endif":
                    blank(c.start_byte, c.end_byte)
            for p in parts:
                if dropped(p, defined):
                    blank(p.start_byte, p.end_byte)
                else:
                    stack.append(p)
            if alt is not None:
                stack.append(alt)
        else:
            stack.extend(n.named_children)
    return src.decode("utf-8", "replace")
