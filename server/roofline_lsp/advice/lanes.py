"""What each value of a kernel body is across the 32 lanes of a warp: the analysis under the
divergence, coalescing, re-read and atomic rules.

A value is *uniform* (the same in every lane: literals, kernel parameters, ``blockIdx``,
``blockDim``, loop counters of loops every lane runs alike, loads at a uniform address),
*slow* (the same in most lanes of a warp, changing at most once or twice across it:
``threadIdx.y``, ``threadIdx.x / 32``, ``idx / N``), a *lane* value (affine in the lane with a
stride: ``threadIdx.x`` has stride 1, ``idx * n`` stride ``n``; ``period`` when it repeats
every few lanes, ``threadIdx.x % 4``), or *varying* (anything else: a loaded value, a hash).

Offloaded loops (OpenMP ``target``, OpenACC ``parallel``/``kernels``) have no thread index:
the loop hierarchy says which loop's iterations run on neighbouring lanes. The loop spread over
threads / vector lanes (``parallel for``, ``simd``, ``loop vector``, or a combined construct)
gives its variable stride 1 (the last of a ``collapse``d nest; the others are slow); the loops
spread only over teams / gangs (``teams distribute`` with an inner ``parallel for``, ``gang``
with an inner ``loop vector``) are uniform within a team.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from roofline_lsp.advice.nodes import BodyIndex, call_name, declarator_name, operator_text, walk
from roofline_lsp.advice.thread_vars import loop_var
from roofline_lsp.detect.textscan import HIP_INDEX_MACROS
from roofline_lsp.model.kernel import Kernel
from roofline_lsp.syntax.expr import subscript_index, text

Kind = Literal["uniform", "slow", "lane", "varying"]
_ORDER: dict[str, int] = {"uniform": 0, "slow": 1, "lane": 2, "varying": 3}
WARP = 32


@dataclass(frozen=True)
class Lane:
    """One value across the lanes of a warp (see the module docstring)."""

    kind: Kind
    stride: str = "1"  # lane values: the difference between neighbouring lanes, as C text
    period: int | None = None  # lane values that repeat every ``period`` lanes

    @property
    def uniform(self) -> bool:
        return self.kind == "uniform"

    @property
    def warp_uniform(self) -> bool:
        """Uniform or slow: at most one or two distinct values per warp."""
        return self.kind in ("uniform", "slow")


UNIFORM, SLOW, VARYING = Lane("uniform"), Lane("slow"), Lane("varying")
LANE1 = Lane("lane")


def join(a: Lane, b: Lane) -> Lane:
    """The least value both ``a`` and ``b`` may be (a variable assigned both)."""
    if a.kind == "lane" and b.kind == "lane":
        return a if a.stride == b.stride else VARYING
    return a if _ORDER[a.kind] >= _ORDER[b.kind] else b


def int_literal(node: Node | None) -> int | None:
    """The value of an integer literal (``32``, ``0x1f``, ``4u``), else None."""
    if node is None:
        return None
    if node.type == "parenthesized_expression" and node.named_child_count == 1:
        return int_literal(node.named_children[0])
    if node.type != "number_literal":
        return None
    try:
        return int(text(node).rstrip("uUlL"), 0)
    except ValueError:
        return None


def _times(stride: str, factor: str) -> str:
    if stride == "1":
        return factor
    if factor == "1":
        return stride
    if stride.isdigit() and factor.isdigit():
        return str(int(stride) * int(factor))
    return f"{stride} * {factor}"


_OMP_TEAMS_ONLY = re.compile(r"\bdistribute\b")
_INNER_PARALLEL = re.compile(
    r"#\s*pragma\s+(?:omp\s+(?:parallel\s+for|for|simd|loop|parallel\s+loop)\b|acc\s+loop\b(?!.*\bseq\b))"
)


class LaneAnalysis:
    """The lane kind of every variable of one kernel body, and of any expression in it."""

    def __init__(self, kernel: Kernel, index: BodyIndex | None = None) -> None:
        self.kernel = kernel
        self.index = index if index is not None else BodyIndex(kernel.body)
        self.env: dict[str, Lane] = {}
        # loops whose iterations are spread over threads or teams (offloaded kernels): their
        # variables are not assigned in the ordinary way
        self.parallel_vars: set[str] = set()
        body = kernel.body
        if body is None:
            return
        if self.index.too_deep:
            return  # no advice is given for the kernel (nodes.MAX_NESTING)
        if kernel.is_offload:
            self._offload_levels(body)
        self._fixpoint(body)

    # -- the loop hierarchy of offloaded kernels ------------------------------------------
    def _offload_levels(self, body: Node) -> None:
        # the detector joins the directives of a nest with " | ": the region's own first
        directive = self.kernel.directive.split("|")[0]
        depth = 1
        for c in self.kernel.clause("collapse"):
            if c.items and c.items[0].strip().isdigit():
                depth = int(c.items[0])
        top = _loop_nest(body, depth)
        inner = [
            (pragma, loop)
            for pragma, loop in _pragma_loops(body)
            if loop != body and _INNER_PARALLEL.match(pragma)
        ]
        if self.kernel.language == "omp":
            thread_level = bool(re.search(r"\b(parallel|for|simd|loop)\b", directive)) and not (
                _OMP_TEAMS_ONLY.search(directive) and not re.search(r"\bfor\b", directive)
            )
        else:
            thread_level = "vector" in directive or (
                "gang" not in directive and "worker" not in directive and not inner
            )
        if thread_level:
            self._spread(top)
        else:
            for v in top:
                self.env[v] = UNIFORM
                self.parallel_vars.add(v)
        for pragma, loop in inner:
            m = re.search(r"collapse\s*\(\s*(\d+)\s*\)", pragma)
            self._spread(_loop_nest(loop, int(m.group(1)) if m else 1))

    def _spread(self, names: list[str]) -> None:
        """The loops of ``names`` run on neighbouring lanes, the last the fastest."""
        for i, v in enumerate(names):
            self.env[v] = LANE1 if i == len(names) - 1 else SLOW
            self.parallel_vars.add(v)

    # -- variables ----------------------------------------------------------------------
    def _fixpoint(self, body: Node) -> None:
        assigns: list[tuple[str, Node, Node | None]] = []  # (name, value, the assignment)
        for n in self.index.nodes:
            if n.type == "init_declarator":
                name = declarator_name(n.child_by_field_name("declarator"))
                value = n.child_by_field_name("value")
                if name and value is not None and name not in self.parallel_vars:
                    assigns.append((name, value, n))
            elif n.type == "assignment_expression":
                left = n.child_by_field_name("left")
                right = n.child_by_field_name("right")
                if (
                    left is not None
                    and left.type == "identifier"
                    and right is not None
                    and text(left) not in self.parallel_vars
                ):
                    assigns.append((text(left), n if operator_text(n) != "=" else right, n))
            elif n.type == "update_expression":
                arg = n.child_by_field_name("argument")
                if (
                    arg is not None
                    and arg.type == "identifier"
                    and text(arg) not in self.parallel_vars
                ):
                    assigns.append((text(arg), arg, n))
        for _ in range(6):
            changed = False
            for name, value, where in assigns:
                lane = self.of(value)
                if where is not None and self._under_lane_branch(where, body):
                    lane = join(lane, VARYING) if not lane.uniform else SLOW
                old = self.env.get(name)
                new = lane if old is None else join(old, lane)
                if new != old:
                    self.env[name] = new
                    changed = True
            if not changed:
                break

    def _under_lane_branch(self, node: Node, stop: Node) -> bool:
        """``node`` runs only in some lanes: in a branch or loop body whose condition is not
        warp-uniform (a loop's own header does not count)."""
        child = node
        p = self.index.parent(node)
        while p is not None and child != stop:
            if p.type in ("if_statement", "while_statement", "do_statement"):
                cond = p.child_by_field_name("condition")
                if cond is not None and child != cond and not self.of(cond).warp_uniform:
                    return True
            elif p.type == "for_statement":
                cond = p.child_by_field_name("condition")
                if (
                    child == p.child_by_field_name("body")
                    and cond is not None
                    and not self.of(cond).warp_uniform
                    and not _grid_stride(p)
                ):
                    return True
            child, p = p, self.index.parent(p)
        return False

    # -- expressions ----------------------------------------------------------------------
    def of(self, node: Node | None) -> Lane:
        """What ``node``'s value is across the lanes of a warp."""
        if node is None:
            return UNIFORM
        t = node.type
        if t in ("number_literal", "true", "false", "null", "string_literal", "char_literal"):
            return UNIFORM
        if t == "sizeof_expression":
            return UNIFORM
        if t == "identifier":
            name = text(node)
            if name in HIP_INDEX_MACROS and name not in self.env:  # hipThreadIdx_x
                return _builtin(*HIP_INDEX_MACROS[name].split("."))
            return self.env.get(name, UNIFORM)
        if t == "field_expression":
            arg = text(node.child_by_field_name("argument"))
            field = text(node.child_by_field_name("field"))
            if arg in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
                return _builtin(arg, field)
            return self._children(node)
        if t in ("parenthesized_expression", "cast_expression"):
            inner = node.child_by_field_name("value") or (
                node.named_children[-1] if node.named_children else None
            )
            return self.of(inner)
        if t == "binary_expression":
            return self._binary(node)
        if t == "unary_expression":
            return self.of(node.child_by_field_name("argument"))
        if t == "pointer_expression" and text(node).startswith("&"):
            return self.address(node.child_by_field_name("argument"))
        if t == "assignment_expression":  # x op= e: x op e
            left, right = (
                self.of(node.child_by_field_name("left")),
                self.of(node.child_by_field_name("right")),
            )
            if operator_text(node) in ("+=", "-="):
                return _add(left, right)
            return join(left, right) if left.warp_uniform and right.warp_uniform else VARYING
        if t == "update_expression":
            return self.of(node.child_by_field_name("argument"))
        if t == "subscript_expression":
            index = subscript_index(node)
            return UNIFORM if self.of(index).uniform else VARYING
        if t == "conditional_expression":
            cond = self.of(node.child_by_field_name("condition"))
            a = self.of(node.child_by_field_name("consequence"))
            b = self.of(node.child_by_field_name("alternative"))
            out = join(a, b)
            return out if cond.warp_uniform else join(out, VARYING)
        if t == "call_expression":
            name = call_name(node)
            if name.startswith("__shfl") or name.startswith("atomic") or name == "clock":
                return VARYING
            method = name.rsplit(".", 1)[-1] if "." in name else ""
            if method == "thread_rank":  # a cooperative group's rank: the lane's index
                return LANE1
            if method.startswith("shfl") or method == "thread_index":
                return VARYING
            args = node.child_by_field_name("arguments")
            kinds = [self.of(a) for a in (args.named_children if args else [])]
            if all(k.uniform for k in kinds):
                return UNIFORM
            if name in ("min", "max", "umin", "umax") and kinds:
                out = kinds[0]
                for k in kinds[1:]:
                    out = join(out, k)
                return out
            return VARYING
        return self._children(node)

    def address(self, node: Node | None) -> Lane:
        """What the address of the element ``node`` names is across the lanes: ``a[i]`` is
        ``a`` (a pointer value) plus ``i``; ``row[j]`` with ``row = &c[i * n]`` strides ``n``
        when ``i`` does."""
        if node is not None and node.type == "subscript_expression":
            base = node.child_by_field_name("argument")
            of_base = (
                self.address(base)
                if base is not None and base.type == "subscript_expression"
                else self.of(base)
            )
            return _add(of_base, self.of(subscript_index(node)))
        if node is not None and node.type == "parenthesized_expression" and node.named_children:
            return self.address(node.named_children[0])
        return self.of(node)

    def _children(self, node: Node) -> Lane:
        out = UNIFORM
        for c in node.named_children:
            k = self.of(c)
            out = join(out, k) if k.kind != "lane" else VARYING
        return out

    def _binary(self, node: Node) -> Lane:
        op = operator_text(node)
        left_node, right_node = node.child_by_field_name("left"), node.child_by_field_name("right")
        a, b = self.of(left_node), self.of(right_node)
        if a.uniform and b.uniform:
            return UNIFORM
        if op in ("+", "-"):
            return _add(a, b)
        if op == "*":
            for x, y, other in ((a, b, right_node), (b, a, left_node)):
                if x.kind == "lane" and y.uniform:
                    k = int_literal(other)
                    if k == 0:
                        return UNIFORM
                    return Lane("lane", _times(x.stride, "1" if k == 1 else text(other)))
                if x.kind == "slow" and y.uniform:
                    return SLOW
            return VARYING
        if op in ("/", ">>") and b.uniform:
            k = int_literal(right_node)
            if k is not None and op == ">>":
                k = 1 << k if 0 <= k < 31 else None
            if a.kind == "slow":
                return SLOW
            if a.kind == "lane":
                if k is None:
                    return SLOW  # idx / N: the same for runs of N lanes
                if a.stride.isdigit() and int(a.stride) % k == 0:
                    return Lane("lane", str(int(a.stride) // k))
                if a.stride == "1":
                    return SLOW if k >= WARP else Lane("lane", "1", None)
                return SLOW
            return VARYING
        if op == "<<" and a.kind == "lane" and b.uniform:
            k = int_literal(right_node)
            if k is not None and 0 <= k < 31:
                return Lane("lane", _times(a.stride, str(1 << k)))
            return VARYING
        if op in ("%", "&") and b.uniform:
            k = int_literal(right_node)
            if op == "&":
                k = k + 1 if k is not None and k >= 0 and (k + 1) & k == 0 else None
                if k is None:
                    return VARYING if a.kind == "lane" else a
            if a.kind == "lane":
                return Lane("lane", a.stride, k)
            return a if a.kind == "slow" and k is None else VARYING
        if op in ("<", "<=", ">", ">="):
            # a threshold on a lane index (``i < n``) splits a warp at most once: the lanes
            # on each side are one run, as for a slow value
            if a.kind != "varying" and b.kind != "varying":
                return SLOW
            return VARYING
        if op in ("==", "!=", "&&", "||"):
            if a.warp_uniform and b.warp_uniform:
                return SLOW
            return VARYING
        return VARYING


def _builtin(name: str, axis: str) -> Lane:
    """``threadIdx.x`` steps by one from lane to lane, its other axes change between rows of
    a block; the block and grid built-ins are the same for every lane."""
    if name == "threadIdx":
        return LANE1 if axis == "x" else SLOW
    return UNIFORM


def _add(a: Lane, b: Lane) -> Lane:
    if a.uniform:
        return b if b.kind != "lane" else Lane("lane", b.stride)
    if b.uniform:
        return a if a.kind != "lane" else Lane("lane", a.stride)
    if a.kind == "slow" and b.kind == "lane":
        return Lane("lane", b.stride)
    if b.kind == "slow" and a.kind == "lane":
        return Lane("lane", a.stride)
    if a.kind == "slow" and b.kind == "slow":
        return SLOW
    return VARYING


def _grid_stride(loop: Node) -> bool:
    """``for (i = ...; i < n; i += blockDim.x * gridDim.x)``: every lane runs alike until
    the tail, so the body is not a lane branch."""
    update = loop.child_by_field_name("update")
    return update is not None and "gridDim" in text(update)


def _loop_nest(stmt: Node, depth: int) -> list[str]:
    """The variables of the ``depth`` perfectly nested ``for`` loops starting at ``stmt``."""
    out: list[str] = []
    node: Node | None = stmt
    while node is not None and node.type == "for_statement" and len(out) < depth:
        name = loop_var(node)
        if name:
            out.append(name)
        body = node.child_by_field_name("body")
        while body is not None and body.type == "compound_statement":
            stmts = [c for c in body.named_children if c.type != "comment"]
            if len(stmts) != 1:
                break
            body = stmts[0]
        node = body
    return out


def _pragma_loops(body: Node) -> list[tuple[str, Node]]:
    """(pragma text, the ``for`` loop it applies to) of every pragma inside ``body``."""
    out = []
    for n in walk(body):
        if n.type != "preproc_call":
            continue
        nxt = n.next_named_sibling
        while nxt is not None and nxt.type == "comment":
            nxt = nxt.next_named_sibling
        if nxt is not None and nxt.type == "for_statement":
            out.append((text(n).strip(), nxt))
    return out
