"""Memory access checks: pointer parameters without ``__restrict__`` (RL007), strided or
uncoalesced global accesses (RL008) and global data every thread re-reads in a loop instead of
sharing a tile of it (RL009).
"""

from __future__ import annotations

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Fix, Severity, TextEdit
from roofline_lsp.advice.kernel_context import KernelContext
from roofline_lsp.advice.nodes import (
    declarator_name,
    enclosing_loop,
    identifiers,
    is_inner_subscript,
    is_plain_assignment_target,
    operator_text,
    root_identifier,
    walk,
    written_names,
)
from roofline_lsp.advice.thread_vars import loop_var, mentions_thread_x
from roofline_lsp.detect.treewalk import function_declarator
from roofline_lsp.syntax.expr import text


class MemoryAccessChecks(KernelContext):
    """RL007-RL009: loads and stores that move more DRAM traffic than the data needs."""

    # RL007 ---------------------------------------------------------------------------------
    def restrict(self) -> None:
        fn = self.k.node
        if fn is None:
            return
        decl = function_declarator(fn)
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        if plist is None:
            return
        pointers = []
        for p in plist.named_children:
            if p.type != "parameter_declaration":
                continue
            d = p.child_by_field_name("declarator")
            if d is None or d.type != "pointer_declarator":
                continue
            pointers.append((p, d))
        if len(pointers) < 2:
            return
        written = written_names(self.k.body)
        for p, d in pointers:
            quals = {text(c) for c in d.children if c.type == "type_qualifier"}
            if quals & {"__restrict__", "__restrict", "restrict"}:
                continue
            name = declarator_name(d) or "?"
            const = any(text(c) == "const" for c in p.children if c.type == "type_qualifier")
            read_only = name not in written
            star = next((c for c in d.children if c.type == "*"), None)
            if star is None:
                continue
            why = (
                "the compiler must assume the pointers alias, so it reloads values after "
                "every store and cannot keep them in registers"
            )
            if read_only and not const:
                why += (
                    f"; `{name}` is only read: `const float *__restrict__` lets loads go "
                    "through the read-only data cache"
                )
            sev: Severity = "information" if self.bound == "bandwidth" and read_only else "hint"
            self.add(
                "RL007",
                (d.start_byte, d.end_byte),
                f"pointer parameter `{name}` has no `__restrict__`: {why}. Add it if no "
                "other pointer parameter overlaps it.",
                sev,
                Fix(
                    f"Add `__restrict__` to `{name}`",
                    (TextEdit(star.end_byte, star.end_byte, "__restrict__ "),),
                ),
            )

    # RL008, RL009 --------------------------------------------------------------------------
    def access_patterns(self) -> None:
        strided: set[str] = set()
        reread: set[str] = set()
        for n in self.nodes:
            if n.type != "subscript_expression":
                continue
            name = root_identifier(n.child_by_field_name("argument"))
            if name is None or name in self.vars.local_arrays or is_inner_subscript(n):
                continue
            index = n.child_by_field_name("indices") or n.child_by_field_name("index")
            if index is None:
                index = next((c for c in n.children if c.type == "subscript_argument_list"), None)
            if index is None:
                continue
            if name not in strided:
                factor = self._thread_stride(index)
                if factor is not None:
                    strided.add(name)
                    self._strided(n, name, factor)
            if name not in reread and not self.vars.shared and not is_plain_assignment_target(n):
                loop = enclosing_loop(n, self.k.body)
                if loop is not None and self._rereads(index, loop):
                    reread.add(name)
                    self._reread(n, name, loop)

    def _thread_stride(self, index: Node) -> str | None:
        """The factor multiplying the warp-varying index, when it is not 1."""
        for b in walk(index):
            if b.type == "subscript_expression":
                continue
            if b.type != "binary_expression" or operator_text(b) != "*":
                continue
            left, right = b.child_by_field_name("left"), b.child_by_field_name("right")
            if left is None or right is None:
                continue
            for a, other in ((left, right), (right, left)):
                if (a.type == "identifier" and text(a) in self.vars.x) or (
                    a.type == "field_expression" and text(a).replace(" ", "") == "threadIdx.x"
                ):
                    t = text(other)
                    if t in ("1", "sizeof(float)", "sizeof(double)"):
                        continue
                    if identifiers(other) & self.vars.x or mentions_thread_x(other):
                        continue
                    return t
        return None

    def _strided(self, n: Node, name: str, factor: str) -> None:
        sev: Severity = "information" if self.bound == "bandwidth" else "hint"
        who = "iterations" if self.k.is_offload else "threads of a warp"
        if self.bound == "bandwidth":
            cost = (
                f"each access moves whole 32-byte sectors for one element, multiplying the DRAM "
                f"traffic that bounds this bandwidth-bound kernel {self.on()}"
            )
        else:
            cost = "each access moves whole 32-byte sectors for one element"
        fix = (
            "make the thread index the fastest-varying (last) index, transpose the data, or "
            "stage tiles through shared memory"
            if not self.k.is_offload
            else "make the innermost (vectorised) loop index the last array index"
        )
        self.add(
            "RL008",
            n,
            f"uncoalesced access to `{name}`: consecutive {who} touch elements `{factor}` apart;"
            f" {cost}. To fix, {fix}.",
            sev,
        )

    def _rereads(self, index: Node, loop: Node) -> bool:
        var = loop_var(loop)
        ids = identifiers(index)
        if var is None or var not in ids:
            return False
        if self.k.is_offload:
            return False  # iterations of an offloaded loop are the threads
        # the same elements for every thread that shares this index (no warp-varying index)
        return not (ids & self.vars.x or mentions_thread_x(index))

    def _reread(self, n: Node, name: str, loop: Node) -> None:
        sev: Severity = "information" if self.bound == "bandwidth" else "hint"
        self.add(
            "RL009",
            n,
            f"`{text(n)}` is read from global memory in a loop, and every thread of the block "
            f"reads the same elements: load a tile of `{name}` into `__shared__` memory once "
            "per block (then `__syncthreads()`) and read it from there; the reuse raises the "
            "arithmetic intensity"
            + (f", which is what limits this kernel {self.on()}." if sev == "information" else "."),
            sev,
        )
