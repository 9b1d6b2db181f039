"""Trip counts of loops whose bounds differ from thread to thread through clamps and selects:
a window clipped at the edges (``for (k = max(0, i - R); k < min(n, i + R + 1); k++)``),
col2im's ``start = (t < ext) ? 0 : (t - ext) / stride + 1`` up to ``min(t / stride + 1, m)``.

The counter's values are means over the threads (``value_domain``), and a clamp or select of
a mean is not the mean of the clamps. Here the loop's start, bound and step are rewritten in
the values they derive from: constants and kernel parameters by their values, a local by the
expression that defines it (declared once, never assigned), down to *roots* that vary
(``threadIdx.x``, ``blockIdx.y``, the counter of an enclosing loop) with their ranges. The
count is then the mean of the exact counts at ``SAMPLES`` threads drawn from those ranges
(the same draw every time). A rare thread is seldom drawn: when lane 0 of 256 alone runs on
to the end of the array, its extra work is mostly left out of the mean.

Pure analysis on the syntax tree and the counter's values (``value_of``): None when any part
is not expressible that way (a value read from memory, a call, the counter of a loop that
doubles or halves it: its values are not spread evenly over its range).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from roofline_lsp.estimate.value_domain import DATA, Val
from roofline_lsp.syntax.cexpr import evaluate
from roofline_lsp.syntax.expr import LoopHeader, declared_name, loop_header, text, trips

__all__ = ["sampled_trips"]

SAMPLES = 128
_MAX_DEPTH = 12
_MAX_TEXT = 4000
# clamps the expression evaluator knows by their ``std::`` names
_CLAMPS = {
    "min": "std::min",
    "max": "std::max",
    "umin": "std::min",
    "umax": "std::max",
    "llmin": "std::min",
    "llmax": "std::max",
    "std::min": "std::min",
    "std::max": "std::max",
    "::min": "std::min",
    "::max": "std::max",
}
_LITERALS = ("number_literal", "char_literal", "true", "false")
_FUNCTIONS = ("function_definition", "lambda_expression")


@dataclass
class _Rewrite:
    """Expressions used at ``site`` rewritten in roots: each root's placeholder and range."""

    value_of: Callable[[Node], Val]
    site: Node
    roots: dict[str, tuple[int, int]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # root text -> placeholder

    def expand(self, node: Node, depth: int = 0) -> str | None:
        """``node`` as text in constants and roots; ``depth``: definitions substituted."""
        if depth > _MAX_DEPTH:
            return None
        t = node.type
        if t in ("identifier", "field_expression"):
            return self.leaf(node, depth)
        if t in _LITERALS:
            return text(node)
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            name = text(fn).replace(" ", "") if fn is not None else ""
            if name.startswith(("static_cast<", "const_cast<")) and args is not None:
                inner = [self.expand(a, depth) for a in args.named_children]
                return f"{name}({inner[0]})" if len(inner) == 1 and inner[0] else None
            clamp = _CLAMPS.get(name)
            if clamp is None or args is None:
                return self.constant(node)
            parts = [self.expand(a, depth) for a in args.named_children]
            if any(p is None for p in parts) or len(parts) != 2:
                return None
            return f"{clamp}({parts[0]}, {parts[1]})"
        if t in ("subscript_expression", "pointer_expression", "sizeof_expression"):
            return self.constant(node)
        if node.child_count == 0:
            return text(node)
        out: list[str] = []
        for c in node.children:
            if c.type == "comment":
                continue
            part = self.expand(c, depth) if c.is_named else text(c)
            if part is None:
                return None
            out.append(part)
        return " ".join(out)

    def constant(self, node: Node) -> str | None:
        """``node``'s value when the counter knows it and it is the same for every thread."""
        v = self.value_of(node)
        if v.deps or v.val is None or not math.isfinite(v.val):
            return None
        if v.type.kind == "int" or v.val == int(v.val) and not v.type.is_float:
            return str(int(v.val))
        return repr(float(v.val))

    def leaf(self, node: Node, depth: int) -> str | None:
        v = self.value_of(node)
        if DATA in v.deps:
            return None
        if not v.deps:
            return self.constant(node)
        if node.type == "identifier":
            kind, defined = _definition(self.site, text(node), self.value_of)
            if kind == "opaque":
                return None
            if defined is not None:
                inner = self.expand(defined, depth + 1)
                return f"({inner})" if inner is not None else None
        # a value that varies: a root, drawn from its range
        if v.rng is None or not all(math.isfinite(x) for x in v.rng):
            return None
        key = text(node).replace(" ", "")
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = f"root_{len(self.names)}"
            lo, hi = v.rng
            self.roots[name] = (math.ceil(lo), max(math.floor(hi), math.ceil(lo)))
        return name


def _definition(site: Node, name: str, value_of: Callable[[Node], Val]) -> tuple[str, Node | None]:
    """How local ``name`` is known for the code at ``site``: ``("defined", expression)``, its
    initializer, when the enclosing function declares it once, before the site, and assigns
    it nowhere else; ``("root", None)`` for a value drawn from its range: the counter of an
    enclosing loop stepping by a constant amount (one starting at a per-thread value, a
    grid-stride loop, is ``defined`` by that value: its first pass), a parameter, a local
    assigned more than once; ``("opaque", None)`` for the counter of a loop that scales it
    (``s >>= 1``: its values are not spread evenly over its range)."""
    fn = site.parent
    while fn is not None and fn.type not in _FUNCTIONS:
        fn = fn.parent
    if fn is None:
        return "root", None
    found: Node | None = None
    counter_of: Node | None = None
    stack = [fn]
    while stack:
        n = stack.pop()
        if n.type == "init_declarator" and declared_name(n) == name:
            if found is not None or n.start_byte >= site.start_byte:
                return "root", None
            found = n.child_by_field_name("value")
            decl = n.parent
            owner = decl.parent if decl is not None else None
            if (
                owner is not None
                and owner.type == "for_statement"
                and owner.child_by_field_name("initializer") == decl
            ):
                counter_of = owner
        elif n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if target is not None and target.type == "identifier" and text(target) == name:
                up = n.parent
                while up is not None and up.type not in ("for_statement", *_FUNCTIONS):
                    up = up.parent
                in_header = (
                    up is not None
                    and up.type == "for_statement"
                    and (u := up.child_by_field_name("update")) is not None
                    and u.start_byte <= n.start_byte < u.end_byte
                )
                if not in_header:
                    return "root", None
        stack.extend(n.named_children)
    if found is None or found.type in ("initializer_list", "argument_list"):
        return "root", None
    if counter_of is not None:
        hdr = loop_header(counter_of)
        if hdr is None or hdr.step_op not in ("+", "-"):
            return "opaque", None
        body = counter_of.child_by_field_name("body")
        inside = body is not None and body.start_byte <= site.start_byte < body.end_byte
        if not inside or not value_of(found).deps:
            return "root", None  # a counter over a range
    return "defined", found


def sampled_trips(
    hdr: LoopHeader, loop: Node, value_of: Callable[[Node], Val], samples: int = SAMPLES
) -> float | None:
    """The mean trip count over threads of a counted loop whose start, bound or step vary
    with the thread through clamps or selects (see the module docstring); None when the
    header is not expressible in values the counter knows and per-thread roots."""
    if hdr.start is None or hdr.bound is None:
        return None
    rw = _Rewrite(value_of, loop)
    start = rw.expand(hdr.start)
    bound = rw.expand(hdr.bound)
    step = rw.expand(hdr.step) if hdr.step is not None else "1"
    if start is None or bound is None or step is None or not rw.roots:
        return None
    if max(len(start), len(bound), len(step)) > _MAX_TEXT:
        return None
    counts: list[float] = []
    for env in _draws(rw.roots, samples):
        s, b, st = (evaluate(x, env) for x in (start, bound, step))
        if s is None or b is None or st is None:
            continue
        n = trips(s, b, hdr.bound_op, st, hdr.step_op, exact=True)
        if n is None:
            continue
        counts.append(max(n - 1.0, 0.0) if hdr.pre_step else n)
    if not counts or len(counts) < samples // 2:
        return None  # most threads' counts could not be evaluated
    return sum(counts) / len(counts)


def _draws(roots: dict[str, tuple[int, int]], samples: int) -> list[dict[str, int]]:
    """``samples`` threads: a value of each root, drawn evenly from its range."""
    draw = random.Random(len(roots))  # the same threads every time
    return [{k: draw.randint(lo, hi) for k, (lo, hi) in roots.items()} for _ in range(samples)]
