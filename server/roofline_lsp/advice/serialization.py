"""Checks for work that serializes: atomics every thread issues on one address (RL005) and
branches on the thread index that split every warp into paths run one after the other (RL006).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Severity
from roofline_lsp.advice.kernel_context import KernelContext
from roofline_lsp.advice.nodes import (
    call_args,
    call_name,
    identifiers,
    operator_text,
    parents,
    walk,
)
from roofline_lsp.advice.thread_vars import mentions_builtin_index, mentions_thread_x
from roofline_lsp.syntax.expr import text

_ATOMIC = re.compile(r"^atomic(Add|Sub|Max|Min|Inc|Dec|Exch|CAS|And|Or|Xor)(_system|_block)?$")


class SerializationChecks(KernelContext):
    """RL005, RL006: threads wait for each other on one address or on the other side of a
    branch."""

    # RL005 ---------------------------------------------------------------------------------
    def atomics(self) -> None:
        for n in self.nodes:
            if n.type != "call_expression" or not _ATOMIC.match(call_name(n)):
                continue
            args = call_args(n)
            if not args:
                continue
            addr = args[0]
            if mentions_builtin_index(addr) or identifiers(addr) & self.vars.any:
                continue
            if self.k.is_offload and identifiers(addr) & self.vars.any:
                continue
            if self._guarded_to_one_thread(n):
                continue
            self.add(
                "RL005",
                n,
                f"every thread runs `{call_name(n)}` on the same address "
                f"(`{text(addr)}`): the updates serialize in L2. Reduce within the warp "
                "(`__shfl_down_sync`) and the block (shared memory) first and issue one "
                "atomic per block.",
            )

    def _guarded_to_one_thread(self, node: Node) -> bool:
        for p in parents(node):
            if p == self.k.body:
                return False
            if p.type == "if_statement":
                cond = p.child_by_field_name("condition")
                if (
                    cond is not None
                    and "==" in text(cond)
                    and (mentions_builtin_index(cond) or identifiers(cond) & self.vars.any)
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
                left, right = b.child_by_field_name("left"), b.child_by_field_name("right")
                if left is None or right is None:
                    continue
                if not (mentions_thread_x(left) or identifiers(left) & self.vars.x):
                    continue
                try:
                    k = int(text(right).rstrip("uUlL"), 0)
                except ValueError:
                    continue
                period = k if operator_text(b) == "%" else k + 1
                if 1 < period <= 32:
                    sev: Severity = "information" if self.bound == "compute" else "hint"
                    cost = (
                        "both paths run one after the other, which costs compute throughput "
                        f"in this compute-bound kernel {self.on()}"
                        if self.bound == "compute"
                        else "both paths run one after the other (little cost while the "
                        "kernel is bandwidth-bound)"
                    )
                    self.add(
                        "RL006",
                        cond,
                        f"`{text(b)}` splits every warp: {cost}. Branch on a warp-uniform "
                        "value (e.g. `threadIdx.x / 32`) or reorder the data so neighbouring "
                        "threads take the same path.",
                        sev,
                    )
                    break
