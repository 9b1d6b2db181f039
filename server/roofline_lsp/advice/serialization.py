"""Checks for work that serializes: atomics every thread issues on one address (RL005) and
branches that split the lanes of a warp into paths run one after the other (RL006). Both rest
on what a value is across the lanes of a warp (``lanes.py``)."""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Severity
from roofline_lsp.advice.impact import Gain, Ops, fewer_ops, line_ops, line_runs, serialized_updates
from roofline_lsp.advice.kernel_context import KernelContext
from roofline_lsp.advice.lanes import WARP, int_literal
from roofline_lsp.advice.nodes import LOOPS, call_args, call_name, operator_text, parents, walk
from roofline_lsp.estimate.costs import REDUCIBLE_ATOMICS
from roofline_lsp.syntax.expr import text

_PRAGMA_ATOMIC = re.compile(r"#\s*pragma\s+(omp|acc)\s+atomic\b(?!\s+(read|write|capture)\b)")
_REDUCTION_OPS = {"+=": "+", "-=": "+", "*=": "*", "&=": "&", "|=": "|", "^=": "^"}


class SerializationChecks(KernelContext):
    """RL005, RL006: threads wait for each other on one address or on the other side of a
    branch."""

    # RL005 ---------------------------------------------------------------------------------
    def atomics(self) -> None:
        for n in self.nodes:
            # only atomics a reduction can stand in for (``costs.REDUCIBLE_ATOMICS``)
            if n.type == "call_expression" and call_name(n) in REDUCIBLE_ATOMICS:
                args = call_args(n)
                if not args or not self._same_address(args[0]):
                    continue
                if n.parent is None or n.parent.type != "expression_statement":
                    continue  # the old value is used (a ticket, a slot): one atomic per
                    # block would hand every thread the same one
                if self._guarded_to_few_lanes(n):
                    continue
                self.add(
                    "RL005",
                    n,
                    f"every thread runs `{call_name(n)}` on the same address "
                    f"(`{text(args[0])}`): the updates serialize in L2. Reduce within the warp "
                    "(`__shfl_down_sync`) and the block (shared memory) first and issue one "
                    "atomic per block.",
                    gain=self._serial_gain(n, 1 / WARP),
                )
            elif n.type == "preproc_call" and _PRAGMA_ATOMIC.match(text(n)):
                self._pragma_atomic(n)

    def _pragma_atomic(self, pragma: Node) -> None:
        stmt = pragma.next_named_sibling
        while stmt is not None and stmt.type == "comment":
            stmt = stmt.next_named_sibling
        if stmt is None or stmt.type != "expression_statement" or not stmt.named_children:
            return
        update = stmt.named_children[0]
        if update.type == "assignment_expression":
            target = update.child_by_field_name("left")
            op = _REDUCTION_OPS.get(operator_text(update))
        elif update.type == "update_expression":
            target = update.child_by_field_name("argument")
            op = "+"
        else:
            return
        if target is None:
            return
        if target.type == "identifier":  # a variable names one address unless private
            if text(target) in _declared(self.k.body):
                return
        elif not self.lanes.address(target).uniform:
            return
        lang = self.k.language
        clause = f"reduction({op}: {text(target)})" if op else "a reduction clause"
        start = pragma.start_byte
        end = self.source.find(b"\n", start, pragma.end_byte)
        self.add(
            "RL005",
            (start, pragma.end_byte if end < 0 else end),
            f"every iteration updates `{text(target)}` with `#pragma {lang} atomic`: the "
            f"updates of all threads serialize on one address. Put `{clause}` on the "
            "parallel loop instead (each thread keeps a private partial result).",
            gain=self._serial_gain(stmt, 0.0),
        )

    def _serial_gain(self, n: Node, after_share: float) -> Gain | None:
        """What the serialized updates on ``n``'s line cost beside the kernel's roofline time,
        and what is left of them after the fix (``after_share``: 1/32 when one lane per
        warp updates, a lower bound of the fix's worth since it issues one per block)."""
        runs = line_runs(self.counts, self.offset(n))
        return serialized_updates(self.gpu, self.counts, runs, after_share)

    def _same_address(self, addr: Node) -> bool:
        """Every lane of a warp updates the same memory: ``sum``, ``&s[blockIdx.x]``."""
        return self.lanes.of(addr).uniform

    def _guarded_to_few_lanes(self, node: Node) -> bool:
        """Inside ``if (threadIdx.x == 0)`` / ``if (lane == 0)``: one lane per block or warp."""
        for p in parents(node):
            if p == self.k.body:
                return False
            if p.type == "if_statement":
                cond = p.child_by_field_name("condition")
                if cond is not None and any(
                    b.type == "binary_expression"
                    and operator_text(b) == "=="
                    and not self.lanes.of(b.child_by_field_name("left")).warp_uniform
                    for b in walk(cond)
                ):
                    return True
        return False

    # RL006 ---------------------------------------------------------------------------------
    def divergence(self) -> None:
        if self.k.is_offload:
            return
        for n in self.nodes:
            if n.type not in ("if_statement", "while_statement", "conditional_expression"):
                continue
            cond = n.child_by_field_name("condition")
            if cond is None:
                continue
            for b in walk(cond):
                if b.type != "binary_expression" or operator_text(b) not in ("%", "&"):
                    continue
                if self._splits_warps(b, n):
                    self._diverges(cond, b)
                    break

    def _splits_warps(self, b: Node, branch: Node) -> bool:
        """``lane % k`` with 1 < k < 32 lanes per period: every warp takes both sides. A
        period of a whole warp (``% 32``, ``& 31``: one lane per warp) or a warp-uniform
        operand (``(threadIdx.x / 32) % 2``) does not split warps; a period that grows with
        a loop counter (``tid % (2 * s)``) does in the loop's first iterations."""
        left, right = b.child_by_field_name("left"), b.child_by_field_name("right")
        lane = self.lanes.of(left)
        if lane.kind != "lane" or lane.stride != "1" or not self.lanes.of(right).uniform:
            return False
        k = int_literal(right)
        if k is not None:
            period = k if operator_text(b) == "%" else k + 1
            return 1 < period < WARP
        if operator_text(b) != "%" or right is None:
            return False
        counters = {v for loop in parents(branch) if loop.type in LOOPS for v in _assigned(loop)}
        return any(c.type == "identifier" and text(c) in counters for c in walk(right))

    def _diverges(self, cond: Node, b: Node) -> None:
        compute = self.bound == "compute"
        gain = self._branch_work(cond)
        sev: Severity = "information" if compute else "hint"
        cost = (
            "both paths run one after the other, which costs compute throughput "
            f"in this compute-bound kernel {self.on()}"
            if compute
            else "both paths run one after the other (little cost while the "
            "kernel is bandwidth-bound)"
        )
        self.add(
            "RL006",
            cond,
            f"`{text(b)}` splits every warp: {cost}. Branch on a warp-uniform "
            "value (e.g. `threadIdx.x / 32`), or index so that neighbouring threads take the "
            "same path (in a reduction: `s = blockDim.x / 2; s > 0; s >>= 1` with "
            "`tid < s`).",
            sev,
            gain=gain,
        )

    def _branch_work(self, cond: Node) -> Gain | None:
        """The most making warps take one path can save: the work of the branch's own lines
        (its bodies; a loop's body), which a split warp runs with some lanes idle."""
        branch = cond.parent
        if branch is None or self.counts is None:
            return None
        bodies = [
            c
            for c in branch.named_children
            if c != cond and c.type != "comment" and c.start_point.row > cond.end_point.row
        ]
        if not bodies:  # the body starts on the condition's line
            bodies = [c for c in branch.named_children if c != cond]
        first = min((b.start_point.row for b in bodies), default=cond.end_point.row)
        last = max((b.end_point.row for b in bodies), default=cond.end_point.row)
        work: Ops = (0.0, 0.0, 0.0, 0.0)
        for row in range(first, last + 1):
            ops = line_ops(self.counts, row + 1 - self.k.line)
            work = (work[0] + ops[0], work[1] + ops[1], work[2] + ops[2], work[3] + ops[3])
        return fewer_ops(self.gpu, self.counts, work, "at most the branch's own work")


def _assigned(loop: Node) -> set[str]:
    """The variables a loop's header assigns (its counters)."""
    out: set[str] = set()
    for field in ("initializer", "update"):
        part = loop.child_by_field_name(field)
        if part is None:
            continue
        for n in walk(part):
            if n.type in ("init_declarator", "assignment_expression"):
                left = n.child_by_field_name("declarator") or n.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    out.add(text(left))
            elif n.type == "update_expression":
                arg = n.child_by_field_name("argument")
                if arg is not None and arg.type == "identifier":
                    out.add(text(arg))
    return out


def _declared(body: Node | None) -> set[str]:
    """Names declared inside ``body`` (private to each thread of an offloaded loop)."""
    out: set[str] = set()
    for n in walk(body) if body is not None else ():
        if n.type in ("init_declarator", "declaration"):
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                out.add(text(d))
    return out
