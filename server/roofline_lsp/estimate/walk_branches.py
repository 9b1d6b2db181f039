"""Branch probabilities of the counter: the fraction of executions for which a condition
holds (thread-uniform model), and problem sizes inferred from bound checks.
"""

from __future__ import annotations

import math

from tree_sitter import Node

from roofline_lsp.estimate.macro_expansion import call_tree
from roofline_lsp.estimate.value_domain import (
    AXES,
    COMPARISONS,
    DATA,
    NOTHING,
    THREAD_SET,
    Val,
    fold_binary,
)
from roofline_lsp.estimate.walk_state import WalkerBase
from roofline_lsp.syntax.expr import misread_shift, text


class BranchWalker(WalkerBase):
    """Probabilities of conditions (``if``, ``?:``, ``&&``/``||``)."""

    def probability(self, cond: Node | None) -> float:
        """Fraction of executions for which ``cond`` holds (thread-uniform model: a
        thread-dependent value is spread evenly over its range)."""
        if cond is None:
            return self.inputs.settings.default_branch
        t = cond.type
        if t == "parenthesized_expression" and cond.named_children:
            return self.probability(cond.named_children[-1])
        if t == "condition_clause":
            v = cond.child_by_field_name("value")
            return self.probability(v) if v is not None else self.inputs.settings.default_branch
        if t == "call_expression":
            expanded = self.expanded_condition(cond)
            if expanded is not None:  # ``IN_RANGE(tx, 1, n - 2)``: the test it expands to
                name, tree = expanded
                self.cursor.call_stack.append(name)  # not expanded again inside itself
                try:
                    return self.probability(tree)
                finally:
                    self.cursor.call_stack.pop()
        if t == "identifier":
            held = self.var(text(cond))
            if held is not None and held.test is not None:
                test, held.test = held.test, None  # (``ok = ok && x``: not into itself)
                try:
                    return self.probability(test)  # ``int in = (i < n); if (in)``
                finally:
                    held.test = test
        if t == "unary_expression":
            op = cond.child_by_field_name("operator")
            if op is not None and op.type == "!":
                return 1.0 - self.probability(cond.child_by_field_name("argument"))
        if t == "binary_expression":
            op_node = cond.child_by_field_name("operator")
            bop = op_node.type if op_node is not None else ""
            left = cond.child_by_field_name("left")
            right = cond.child_by_field_name("right")
            reread = self.shift_comparison(cond) if bop == ">" else None
            if reread is not None:
                (left, right), bop = reread, "<"
            if bop == "&&":
                return self.probability(left) * self.probability(right)
            if bop == "||":
                pa, pb = self.probability(left), self.probability(right)
                return 1 - (1 - pa) * (1 - pb)
            if bop in ("==", "!=") and left is not None and right is not None:
                bit = self.bit_test(left, right)
                if bit is not None:
                    return bit if bop == "==" else 1.0 - bit
            if bop in COMPARISONS and left is not None and right is not None:
                if bop in ("<", "<=", ">", ">="):
                    self.infer_size(left, right)
                va = self.expr_quiet(left)
                vb = self.expr_quiet(right)
                last = self.last_block(bop, (left, va), (right, vb))
                if last is not None:
                    return last
                return self.compare_probability(bop, va, vb)
        cv = self.expr_quiet(cond)
        if cv.val is not None and not cv.deps:
            return 1.0 if cv.val else 0.0
        return self.inputs.settings.default_branch

    def bit_test(self, left: Node, right: Node) -> float | None:
        """``(i & k) == 0`` (or ``== k``) with ``k`` one bit and ``i`` varying from thread to
        thread or trip to trip: a bitonic sort's direction, true for half of them (the
        values ``i & k`` takes are 0 and k, not the range between). None: not this form."""
        for masked, other in ((left, right), (right, left)):
            node = masked
            while node.type == "parenthesized_expression" and node.named_children:
                node = node.named_children[-1]
            op = node.child_by_field_name("operator") if node.type == "binary_expression" else None
            a = node.child_by_field_name("left")
            b = node.child_by_field_name("right")
            if op is None or op.type != "&" or a is None or b is None:
                continue
            va, vb = self.expr_quiet(a), self.expr_quiet(b)
            if vb.deps and not va.deps:
                va, vb = vb, va
            if not va.deps or vb.deps or vb.val is None:
                continue
            k = int(vb.val)
            vo = self.expr_quiet(other)
            if k > 0 and k & (k - 1) == 0 and not vo.deps and vo.val in (0, k):
                return 0.5
        return None

    def expanded_condition(self, call: Node) -> tuple[str, Node] | None:
        """The macro and the expression a function-like macro call in a condition expands
        to (None: not a macro, or one being expanded already)."""
        fn = call.child_by_field_name("function")
        name = text(fn) if fn is not None and fn.type == "identifier" else ""
        m = self.inputs.macros.get(name)
        if m is None or m[0] is None or name in self.cursor.call_stack:
            return None
        args_node = call.child_by_field_name("arguments")
        args = list(args_node.named_children) if args_node else []
        tree = call_tree(m[0], m[1], args, expression=True)
        return (name, tree) if tree is not None else None

    def shift_comparison(self, node: Node) -> tuple[Node, Node] | None:
        """``j < n >> 3`` with ``j`` a variable, which the grammar read as the template
        ``j<n>`` compared with 3: ``j`` and ``n >> 3``."""
        reread = misread_shift(node)
        return reread if reread is not None and self.var(text(reread[0])) is not None else None

    def last_block(self, op: str, left: tuple[Node, Val], right: tuple[Node, Val]) -> float | None:
        """``ticket == gridDim.x - 1``, a value read from memory (an atomic counter's old
        value) against the grid's size: the last-block-done idiom, true for one block of
        the grid (None: not this form)."""
        if op not in ("==", "!="):
            return None
        for (_node, data), (other, _v) in ((left, right), (right, left)):
            axes = [a for a in "xyz" if f"gridDim.{a}" in text(other)]
            if DATA in data.deps and axes and "blockIdx" not in text(other):
                blocks = math.prod(self.inputs.grid[AXES.index(a)] for a in axes)
                p = 1.0 / max(blocks, 1)
                return p if op == "==" else 1.0 - p
        return None

    def infer_size(self, left: Node, right: Node) -> None:
        """``if (i < n)`` with ``i`` a thread index and ``n`` an unknown kernel parameter:
        launches are sized to the problem, so ``n`` is about the end of ``i``'s range."""
        for name_node, other in ((right, left), (left, right)):
            if name_node.type != "identifier":
                continue
            var = self.var(text(name_node))
            if var is None or var.val is not None or var.type.kind != "int":
                continue
            # a parameter, or a size every thread reads from memory alike
            # (``n = params->count``): neither varies with the thread
            if not var.const and not (var.deps and var.deps <= {DATA}):
                continue
            v = self.expr_quiet(other)
            if not v.deps or v.val is None or not v.deps <= THREAD_SET:
                continue
            ext = self.extent(v.deps)
            if ext is None or ext <= 1:
                continue
            var.val = math.floor(v.val - (ext - 1) / 2 + ext)
            var.deps = NOTHING  # now a known size, like a parameter's
            self.tally.inferred.append(text(name_node))
            return

    def compare_probability(self, op: str, a: Val, b: Val) -> float:
        if a.val is not None and b.val is not None and not a.deps and not b.deps:
            return 1.0 if fold_binary(op, a.val, b.val, NOTHING) else 0.0
        # normalise to: x OP c with x varying
        if b.deps and not a.deps:
            a, b = b, a
            op = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}[op]
        if (
            b.val is not None
            and self.chosen_per_block(b.deps)
            and DATA not in b.deps
            and a.deps
            and not a.deps & b.deps
        ):
            # a bound chosen per block (``vmin = (bx == 0) ? 1 : 0``, a grid's edge blocks):
            # the value most blocks take, against the thread's own index
            b = Val(b.type, NOTHING, b.val)
        if b.deps and (DATA in b.deps or b.deps & THREAD_SET or b.deps & a.deps):
            return self.inputs.settings.default_branch  # both sides vary together: no simple model
        if a.deps and not b.deps and b.val is None and a.deps <= THREAD_SET:
            # a thread index (its value known or lost: ``team % numTeamsX``) against an
            # unknown size (``i > x4 - 1``, x4 a kernel parameter): a bounds check, and
            # launches are sized to the problem (as ``infer_size`` assumes of ``i < n``):
            # nearly every thread passes
            if op in ("<", "<="):
                return 1.0
            if op in (">", ">="):
                return 0.0
        if not a.deps or b.val is None:
            return self.inputs.settings.default_branch
        # a bound that varies only with an enclosing loop is taken at its mean
        if a.rng is not None:
            lo, hi = a.rng
            count = max(hi - lo + 1, 1.0)
            c = b.val
            if op in ("==", "!="):
                p = (1.0 / count) if lo <= c <= hi else 0.0
                return p if op == "==" else 1 - p
            if op in ("<", "<="):
                n = c - lo + (1 if op == "<=" else 0)
            else:
                n = hi - c + (1 if op == ">=" else 0)
            return min(1.0, max(0.0, n / count))
        if a.val is None:
            return self.inputs.settings.default_branch
        ext = self.extent(a.deps)
        if ext is None or ext <= 1:
            return self.inputs.settings.default_branch
        lo = a.val - (ext - 1) / 2
        c = b.val
        if op in ("==", "!="):
            inside = lo <= c <= lo + ext - 1
            p = (1.0 / ext) if inside else 0.0
            return p if op == "==" else 1 - p
        if op in ("<", "<="):
            n = c - lo + (1 if op == "<=" else 0)
            return min(1.0, max(0.0, n / ext))
        n = lo + ext - 1 - c + (1 if op == ">=" else 0)
        return min(1.0, max(0.0, n / ext))
