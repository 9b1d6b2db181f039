"""Tree-sitter queries the advice rules share: walking a subtree, names, calls, enclosing
loops and parents, and which names a kernel body may write.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

from tree_sitter import Node

from roofline_lsp.syntax.expr import root_identifier, stored_names, text

SPECIAL_FUNCTIONS = frozenset(
    (  # noqa: SIM905
        "sin cos tan asin acos atan atan2 sinh cosh tanh exp exp2 exp10 expm1 log log2 log10 "
        "log1p pow sqrt cbrt erf erfc tgamma lgamma fmod hypot sincos sinf cosf tanf asinf "
        "acosf atanf atan2f sinhf coshf tanhf expf exp2f exp10f expm1f logf log2f log10f log1pf "
        "powf sqrtf cbrtf erff erfcf fmodf hypotf sincosf"
    ).split()
)
LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
BRANCHES = (*LOOPS, "if_statement", "switch_statement")
# loops and branches nested in one kernel body beyond which no advice is given: the lane
# analysis walks up every enclosing branch from every assignment (quadratic in the depth);
# real kernels nest a few levels, and the estimator gives up on thousands
MAX_NESTING = 128


def walk(node: Node) -> Iterator[Node]:
    """All descendants of ``node`` (itself included) in document order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def identifiers(node: Node) -> set[str]:
    """Every identifier named in ``node``."""
    return {text(n) for n in walk(node) if n.type == "identifier"}


def call_name(call: Node) -> str:
    """The called function's name without its namespace (``std::pow`` -> ``pow``)."""
    fn = call.child_by_field_name("function")
    name = text(fn)
    return name.rsplit("::", 1)[-1]


def call_args(call: Node) -> list[Node]:
    """The argument nodes of a call, comments left out."""
    args = call.child_by_field_name("arguments")
    return [a for a in (args.named_children if args else []) if a.type != "comment"]


def enclosing_loop(node: Node, stop: Node, ancestors: Iterable[Node] | None = None) -> Node | None:
    """The innermost loop around ``node`` inside ``stop`` (None when there is none);
    ``ancestors``: ``node``'s, innermost first, when known faster than :func:`parents`."""
    for p in parents(node) if ancestors is None else ancestors:
        if p == stop:
            break
        if p.type in LOOPS:
            return p
    if stop.type in LOOPS:
        return stop
    return None


def first_line_span(source: bytes, node: Node) -> tuple[int, int]:
    """The node's span cut to its first line (diagnostics on the exact line)."""
    end = source.find(b"\n", node.start_byte, node.end_byte)
    return node.start_byte, (node.end_byte if end < 0 else end)


def declarator_name(d: Node | None) -> str | None:
    """The identifier a nested declarator declares: ``p`` for ``*p``, ``a[4]``, ``p = 0``."""
    while d is not None:
        if d.type == "identifier":
            return text(d)
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            ids = [c for c in d.named_children if c.type == "identifier"]
            return text(ids[0]) if ids else None
        d = nxt
    return None


def operator_text(node: Node) -> str:
    """The operator of a binary or assignment expression (``*``, ``+=``)."""
    op = node.child_by_field_name("operator")
    return text(op)


def address_taken(node: Node) -> bool:
    """``node`` is the operand of ``&`` (``&in[i]``, ``&(in[i])``): an address computed, no
    memory read."""
    p = node.parent
    while p is not None and p.type == "parenthesized_expression":
        p = p.parent
    return p is not None and p.type == "pointer_expression" and operator_text(p) == "&"


def parents(node: Node) -> Iterator[Node]:
    """The ancestors of ``node``, innermost first."""
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def is_pure(node: Node) -> bool:
    """No call, assignment or increment inside: safe to evaluate twice."""
    return not any(
        n.type in ("call_expression", "assignment_expression", "update_expression")
        for n in walk(node)
    )


class BodyIndex:
    """The nodes of one kernel body in document order and the parent of each, found in one
    walk. Tree-sitter nodes have no parent pointer: ``Node.parent`` searches down from the
    tree's root, a cost that grows with the depth, so walking up from every node of a deep
    body (a 100 KB sum, thousands of nested loops) with it is cubic; here it is linear."""

    def __init__(self, body: Node | None) -> None:
        self.body = body
        self.nodes: list[Node] = []
        # for each node that is the body or inside it: its parent, the innermost and the
        # outermost loop around it inside the body (ancestors only, not the node); the loop
        # around the body itself is _outer_around_body
        self._around: dict[int, tuple[Node | None, Node | None, Node | None]] = {}
        self.too_deep = False  # more than MAX_NESTING loops and branches nest in the body
        if body is None:
            return
        self._around[body.id] = (None, None, None)  # (its parent: from the tree when asked)
        nodes, around = self.nodes, self._around
        stack: list[tuple[Node, int, Node | None, Node | None]] = [(body, 0, None, None)]
        while stack:
            n, depth, inner, outer = stack.pop()
            nodes.append(n)
            children = n.children
            if not children:
                continue
            t = n.type
            if t in BRANCHES:
                depth += 1
                if depth > MAX_NESTING:
                    self.too_deep = True
                if t in LOOPS:
                    inner = n
                    outer = outer or n
            for c in reversed(children):
                around[c.id] = (n, inner, outer)
                stack.append((c, depth, inner, outer))

    def parent(self, node: Node) -> Node | None:
        """``node.parent``, from the index inside the body."""
        around = self._around.get(node.id)
        return around[0] if around is not None and node != self.body else node.parent

    def parents(self, node: Node) -> Iterator[Node]:
        """The ancestors of ``node``, innermost first (beyond the body: the tree's own)."""
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def enclosing_loop(self, node: Node, stop: Node) -> Node | None:
        """The innermost loop around ``node`` inside ``stop`` (None when there is none)."""
        around = self._around.get(node.id)
        if around is None or stop != self.body:
            return enclosing_loop(node, stop, self.parents(node))
        loop = around[1]
        if loop is not None and loop != stop:
            return loop
        return stop if stop.type in LOOPS else None

    def share_a_loop(self, a: Node, b: Node) -> bool:
        """Some loop holds both ``a`` and ``b`` (nodes of the body): a loop around the body,
        else the outermost loop around each in the body, the same for both."""
        if self._outer_around_body is not None:
            return True
        outer = self._around[a.id][2]
        return outer is not None and outer == self._around[b.id][2]

    @functools.cached_property
    def _outer_around_body(self) -> Node | None:
        """The outermost loop around the body (found when first asked: ``Node.parent`` is
        slow on a long file)."""
        ancestors = reversed(list(parents(self.body))) if self.body is not None else iter(())
        return next((p for p in ancestors if p.type in LOOPS), None)

    def is_inner_subscript(self, n: Node) -> bool:
        """``a[i]`` inside ``a[i][j]``: only the outer one is checked."""
        p = self.parent(n)
        return (
            p is not None
            and p.type == "subscript_expression"
            and p.child_by_field_name("argument") == n
        )

    def is_plain_assignment_target(self, n: Node) -> bool:
        """``n`` is the left side of a plain ``=`` (written, not read)."""
        p = self.parent(n)
        if p is None:
            return False
        if p.type == "assignment_expression" and p.child_by_field_name("left") == n:
            return operator_text(p) == "="
        return False


def pointer_root(node: Node | None) -> str | None:
    """The array a pointer expression points into: ``c`` for ``c``, ``&c[i * n]``,
    ``c + i * n``, ``(float *)c``, ``&c[i].x``."""
    while node is not None:
        if node.type == "identifier":
            return text(node)
        if node.type == "pointer_expression" and text(node).startswith("&"):
            return root_identifier(node.child_by_field_name("argument"))
        if node.type == "binary_expression" and operator_text(node) in ("+", "-"):
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            root = pointer_root(left)
            node = right if root is None and operator_text(node) == "+" else None
            if root is not None:
                return root
        elif node.type in ("cast_expression", "parenthesized_expression"):
            node = node.child_by_field_name("value") or (
                node.named_children[-1] if node.named_children else None
            )
        else:
            return None
    return None


def pointer_aliases(body_nodes: Iterable[Node]) -> dict[str, str]:
    """Local pointers made from another array (``float *row = &c[i * n]``, ``row = c + k``)
    among a body's nodes: each local name -> the array it points into (followed through
    chains of aliases). Writes through the alias are writes to that array."""
    direct: dict[str, str] = {}
    for n in body_nodes:
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is None or d.type != "pointer_declarator":
                continue
            name, value = declarator_name(d), n.child_by_field_name("value")
        elif n.type == "assignment_expression" and operator_text(n) == "=":
            left = n.child_by_field_name("left")
            if left is None or left.type != "identifier":
                continue
            name, value = text(left), n.child_by_field_name("right")
        else:
            continue
        root = pointer_root(value)
        if name and root and root != name:
            direct.setdefault(name, root)
    out: dict[str, str] = {}
    for name in direct:
        seen, cur = {name}, direct[name]
        while cur in direct and cur not in seen:
            seen.add(cur)
            cur = direct[cur]
        out[name] = cur
    return out


def written_names(body: Node, aliases: dict[str, str] | None = None) -> set[str]:
    """Names whose memory the body may write: stored to (``syntax.expr.stored_names``:
    assigned, incremented), passed by address or
    passed to a call as a pointer into them (conservative); a write through a local alias
    (``row[j] = ...`` with ``row = &c[i * n]``) writes the array it points into."""
    out: set[str] = set(stored_names(body))
    for n in walk(body):
        if n.type == "pointer_expression" and text(n).startswith("&"):
            name = root_identifier(n.child_by_field_name("argument"))
            if name:
                out.add(name)
        elif n.type == "call_expression":
            fname = call_name(n)
            for a in call_args(n):
                if fname in SPECIAL_FUNCTIONS:
                    continue
                name = pointer_root(a) if a.type != "identifier" else text(a)
                if name:
                    out.add(name)
                elif fname.startswith("atomic") and a is call_args(n)[0]:
                    name = root_identifier(a)
                    if name:
                        out.add(name)
    for local, target in (aliases or {}).items():
        if local in out:
            out.add(target)
    return out


def line_starts(source: bytes) -> list[int]:
    """The byte offset where each line of ``source`` starts."""
    starts = [0]
    starts.extend(m.end() for m in re.finditer(rb"\n", source))
    return starts
