"""A function definition's parts on the tree-sitter tree: its declarator and its name.

Shared by the detection and analysis of kernels and by the compile of a file's device code
alone, which needs them without the rest of detection.
"""

from __future__ import annotations

from tree_sitter import Node

from roofline_lsp.syntax.expr import text

__all__ = ["function_declarator", "function_name"]


def function_declarator(fn: Node) -> Node | None:
    """The ``function_declarator`` of a function definition, under any pointer or reference
    declarators around it; None when it has none (a type definition the grammar misread)."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        inner = d.child_by_field_name("declarator")
        if inner is None and d.type == "reference_declarator":
            # ``Real_t& x(Index_t i)``: the grammar gives a reference no declarator field
            inner = d.named_children[0] if d.named_children else None
        d = inner
    return d


def function_name(fn: Node) -> str:
    """A function definition's unqualified name (``f`` of ``void ns::f(int)``); "" when it
    declares no function."""
    d = function_declarator(fn)
    if d is None:
        return ""
    name = d.child_by_field_name("declarator")
    return text(name).rsplit("::", 1)[-1]
