"""Small tree-sitter helpers of kernel detection: declared names, enclosing functions,
qualifiers, calls and the local declarations before a point.
"""

from __future__ import annotations

import bisect

from tree_sitter import Node

from roofline_lsp.detect.textscan import kernel_ref
from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.parsing import captures


def qualified_declarator_name(declarator: Node | None) -> str | None:
    """The name declared by a (function) declarator: identifier, A::f, operator, template."""
    while declarator is not None:
        t = declarator.type
        if t in ("identifier", "field_identifier", "qualified_identifier", "destructor_name"):
            return text(declarator)
        if t == "template_function":
            name = declarator.child_by_field_name("name")
            return text(name) if name else None
        if t == "operator_name":
            return text(declarator)
        nxt = declarator.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in declarator.named_children if "identifier" in c.type]
            return text(named[0]) if named else None
        declarator = nxt
    return None


def function_declarator(fn: Node) -> Node | None:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    return d


def unqualified_name(name: str) -> str:
    return name.rsplit("::", 1)[-1]


def enclosing_function(node: Node | None) -> Node | None:
    """The ``function_definition`` around ``node``, if any."""
    p = node.parent if node is not None else None
    while p is not None and p.type != "function_definition":
        p = p.parent
    return p


def function_qualifiers(fn: Node) -> tuple[str, ...]:
    quals = []
    for c in fn.children:
        if (
            c.type.startswith("__")
            and c.type.endswith("__")
            or c.type
            in (
                "storage_class_specifier",
                "type_qualifier",
                "virtual",
            )
        ):
            quals.append(text(c))
        if c.type in ("function_declarator", "compound_statement"):
            break
    return tuple(quals)


def local_values(body: Node, stop: int) -> dict[str, str]:
    """The values of the local declarations in ``body`` before byte ``stop``."""
    env: dict[str, str] = {}
    for decl in descendants_of_type(body, "declaration", stop=stop):
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                name = d.child_by_field_name("declarator")
                value = d.child_by_field_name("value")
                if name is not None and name.type == "identifier" and value is not None:
                    v = text(value)
                    if value.type in ("argument_list", "initializer_list"):
                        v = "dim3(" + v.strip("(){}") + ")"
                    env[text(name)] = v
            elif d.type == "function_declarator":  # `dim3 grid(n / 256)` (vexing parse)
                name = d.child_by_field_name("declarator")
                params = d.child_by_field_name("parameters")
                if name is not None and params is not None:
                    env[text(name)] = "dim3(" + text(params).strip("()") + ")"
    return env


# (node id, type) -> (the node, kept so that its id is not reused; its descendants of the
# type by start): a function with many launches is walked once, not once per launch
_DESCENDANTS: dict[tuple[int, str], tuple[Node, list[Node], list[int]]] = {}


def descendants_of_type(node: Node, type_: str, stop: int) -> list[Node]:
    """``node`` and its descendants of type ``type_`` that start before byte ``stop``, in
    source order."""
    hit = _DESCENDANTS.get((node.id, type_))
    if hit is None or hit[0] != node:
        out: list[Node] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == type_:
                out.append(n)
            stack.extend(reversed(n.named_children))
        out.sort(key=lambda n: n.start_byte)
        hit = (node, out, [n.start_byte for n in out])
        if len(_DESCENDANTS) >= 16:
            _DESCENDANTS.pop(next(iter(_DESCENDANTS)))
        _DESCENDANTS[(node.id, type_)] = hit
    return hit[1][: bisect.bisect_left(hit[2], stop)]


def start_line(node: Node) -> int:
    return node.start_point.row + 1


def inside_error(node: Node) -> bool:
    p = node.parent
    while p is not None:
        if p.type == "ERROR":
            return True
        p = p.parent
    return False


def called_names(node: Node) -> tuple[str, ...]:
    return tuple(
        unqualified_name(kernel_ref(text(n)))
        for n in captures("cuda-calls", node).get("callee", [])
    )
