"""Which variables of a kernel body derive from the thread index (so differ between the threads
of a warp, or between threads at all), and the loop variables of offloaded loop nests, whose
iterations play the part of the threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.advice.nodes import declarator_name, identifiers, walk
from roofline_lsp.model.kernel import Kernel
from roofline_lsp.syntax.expr import text


def mentions_thread_x(node: Node) -> bool:
    """``threadIdx.x`` appears in ``node``."""
    return any(
        n.type == "field_expression"
        and text(n.child_by_field_name("argument")) == "threadIdx"
        and text(n.child_by_field_name("field")) == "x"
        for n in walk(node)
    )


def mentions_builtin_index(node: Node) -> bool:
    """``threadIdx`` or ``blockIdx`` appears in ``node``."""
    return bool(identifiers(node) & {"threadIdx", "blockIdx"})


@dataclass(frozen=True)
class ThreadVars:
    """Variables derived from the thread index: ``x`` from threadIdx.x (consecutive threads
    of a warp differ), ``any`` from any of threadIdx/blockIdx; locals declared in the body."""

    x: set[str]
    any: set[str]
    local_arrays: set[str]
    shared: bool


def thread_vars(kernel: Kernel) -> ThreadVars:
    """The thread-derived variables of ``kernel``'s body (see :class:`ThreadVars`)."""
    body = kernel.body
    x: set[str] = set()
    any_: set[str] = set()
    arrays: set[str] = set()
    shared = False
    if kernel.is_offload:
        loops = offload_loop_vars(body, kernel)
        if loops:
            x.add(loops[-1])
            any_.update(loops)
    assigns: list[tuple[str, Node]] = []
    for n in walk(body):
        if n.type == "declaration":
            if any(text(c) == "__shared__" for c in n.children):
                shared = True
            for d in n.children_by_field_name("declarator"):
                if d.type == "array_declarator":
                    arrays.add(declarator_name(d) or "")
        if n.type == "init_declarator":
            declarator = n.child_by_field_name("declarator")
            name = declarator_name(declarator)
            value = n.child_by_field_name("value")
            if name and value is not None:
                assigns.append((name, value))
                if declarator is not None and declarator.type == "array_declarator":
                    arrays.add(name)
        elif n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            right = n.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                assigns.append((text(left), right))
    for _ in range(3):  # a few rounds reach a fixpoint for ordinary index arithmetic
        for name, value in assigns:
            ids = identifiers(value)
            if mentions_thread_x(value) or ids & x:
                x.add(name)
            if mentions_builtin_index(value) or ids & any_:
                any_.add(name)
    return ThreadVars(x, any_, arrays, shared)


def offload_loop_vars(stmt: Node, kernel: Kernel) -> list[str]:
    """The loop variables of the collapsed loop nest an offload pragma applies to."""
    depth = 1
    for c in kernel.clause("collapse"):
        if c.items and c.items[0].strip().isdigit():
            depth = int(c.items[0])
    out: list[str] = []
    node: Node | None = stmt
    while node is not None and node.type == "for_statement" and len(out) < depth:
        init = node.child_by_field_name("initializer")
        name = None
        if init is not None:
            if init.type == "declaration":
                d = init.child_by_field_name("declarator")
                name = declarator_name(d.child_by_field_name("declarator") if d else None)
            elif init.type == "assignment_expression":
                name = text(init.child_by_field_name("left"))
        if name:
            out.append(name)
        body = node.child_by_field_name("body")
        while body is not None and body.type == "compound_statement" and body.named_child_count:
            stmts = [c for c in body.named_children if c.type != "comment"]
            if len(stmts) != 1:
                break
            body = stmts[0]
        node = body
    return out


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
