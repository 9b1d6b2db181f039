"""The kernel-local storage of a kernel body (arrays declared in it, ``__shared__`` tiles),
which the memory rules leave alone, and the variable of a ``for`` loop. What values are across
the lanes of a warp is ``lanes.py``'s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.advice.nodes import declarator_name
from roofline_lsp.syntax.expr import text


@dataclass(frozen=True)
class ThreadVars:
    """Arrays declared in the body (registers, local or shared memory, not global) and
    whether the kernel stages data in ``__shared__`` memory."""

    local_arrays: set[str]
    shared: bool


def thread_vars(body_nodes: Iterable[Node]) -> ThreadVars:
    """The local arrays of a kernel body, given its nodes (see :class:`ThreadVars`)."""
    arrays: set[str] = set()
    shared = False
    for n in body_nodes:
        if n.type == "declaration":
            if any(text(c) == "__shared__" for c in n.children):
                shared = True
            for d in n.children_by_field_name("declarator"):
                if d.type == "array_declarator":
                    arrays.add(declarator_name(d) or "")
        if n.type == "init_declarator":
            declarator = n.child_by_field_name("declarator")
            name = declarator_name(declarator)
            if name and declarator is not None and declarator.type == "array_declarator":
                arrays.add(name)
    return ThreadVars(arrays, shared)


def loop_var(loop: Node) -> str | None:
    """The variable a ``for`` loop's initializer declares or assigns."""
    if loop.type != "for_statement":
        return None
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    if init.type == "declaration":
        d = init.child_by_field_name("declarator")
        return declarator_name(d.child_by_field_name("declarator") if d else None)
    if init.type == "assignment_expression":
        left = init.child_by_field_name("left")
        return text(left) if left is not None and left.type == "identifier" else None
    return None
