"""Memory access checks: pointer parameters without ``__restrict__`` where aliasing costs
reloads (RL007), strided or uncoalesced global accesses (RL008) and global data many threads
re-read in a loop instead of sharing a tile of it (RL009). Which accesses are strided comes
from what their address is across the lanes of a warp (``lanes.py``); aliases of a pointer
parameter (``float *row = &c[i * n]``) count as accesses to it.
"""

from __future__ import annotations

import functools
import re

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Fix, Severity, TextEdit
from roofline_lsp.advice.impact import (
    Gain,
    fewer_dram_bytes,
    line_runs,
    unmodelled,
    without_dram_bytes,
)
from roofline_lsp.advice.kernel_context import KernelContext
from roofline_lsp.advice.lanes import int_literal
from roofline_lsp.advice.nodes import (
    address_taken,
    declarator_name,
    identifiers,
    operator_text,
)
from roofline_lsp.advice.thread_vars import loop_var
from roofline_lsp.detect.program import units_mentioning
from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.model.verdict import LineInstructions
from roofline_lsp.syntax.expr import root_identifier, subscript_index, text
from roofline_lsp.syntax.functions import function_declarator

SECTOR = 32  # bytes a DRAM access moves at least
TILE = 16  # the side of a shared-memory tile the RL009 estimate assumes
SMALL_TABLE = 64  # a loop over at most this many elements reads a table the caches keep


class MemoryAccessChecks(KernelContext):
    """RL007-RL009: loads and stores that move more memory traffic than the data needs."""

    # RL007 ---------------------------------------------------------------------------------
    def restrict(self) -> None:
        """Once per kernel, where a load of one pointer parameter follows a store through
        another in program order or in the same loop: the compiler must reload it."""
        fn = self.k.node
        if fn is None:
            return
        decl = function_declarator(fn)
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        if plist is None:
            return
        pointers: list[tuple[str, Node]] = []
        for p in plist.named_children:
            d = p.child_by_field_name("declarator") if p.type == "parameter_declaration" else None
            if d is None or d.type != "pointer_declarator":
                continue
            quals = {text(c) for c in d.children if c.type == "type_qualifier"}
            if not quals & {"__restrict__", "__restrict", "restrict"}:
                pointers.append((declarator_name(d) or "?", d))
        names = {n for n, _ in pointers}
        reloads = self._reloads_after_stores(names) if len(pointers) >= 2 else []
        # with PTX counts, only loads the compiled code makes (a load of the value just
        # stored through the same pointer is forwarded from the register)
        reloads = [ld for ld in reloads if _loads(self.compiled(ld))]
        if not reloads:
            return
        shared = self._aliased_at_launch(fn, names)
        if shared is None:
            return  # a launch passes one buffer twice: restrict would change results
        stars = [next((c for c in d.children if c.type == "*"), None) for _n, d in pointers]
        edits = tuple(TextEdit(s.end_byte, s.end_byte, "__restrict__ ") for s in stars if s)
        listed = ", ".join(f"`{n}`" for n, _ in pointers)
        launches = " (no launch passes one buffer to two of them)" if shared else ""
        self.add(
            "RL007",
            (self.k.name_span.start_byte, self.k.name_span.end_byte),
            f"pointer parameters {listed} have no `__restrict__`: a load through one of them "
            "follows a store through another, so the compiler must assume they alias and "
            "reloads the values after every store instead of keeping them in registers. Add "
            f"`__restrict__` if they never overlap{launches}.",
            "information",
            Fix("Add `__restrict__` to the pointer parameters", edits) if shared else None,
            gain=self._reload_gain(reloads),
        )

    def _reload_gain(self, reloads: list[Node]) -> Gain:
        """The reloads aliasing forces, per thread (each load's line runs that often): they
        hit L1, so the DRAM bytes and the roofline time stay; what is saved is load
        instructions and their latency, which the roofline does not model."""
        runs = 0.0
        for ld in reloads:
            r = line_runs(self.counts, self.offset(ld))
            if r is None:
                return unmodelled(self.gpu, "same DRAM bytes (the reloads hit L1)")
            runs += r
        return unmodelled(
            self.gpu,
            f"same DRAM bytes: up to {fmt_num(runs)} fewer L1 reloads per "
            f"{'iteration' if self.k.is_offload else 'thread'}, which the roofline does not "
            "count",
        )

    def _reloads_after_stores(self, names: set[str]) -> list[Node]:
        """The loads through one of ``names`` that may follow a store through another (or
        through itself, in the loop's next iteration): the ones aliasing makes reload."""
        stores: list[tuple[str, Node]] = []
        loads: list[tuple[str, Node]] = []
        index = self.index
        for n in self.nodes:
            if n.type != "subscript_expression" or index.is_inner_subscript(n):
                continue
            name = self._param_of(root_identifier(n.child_by_field_name("argument")))
            if name not in names:
                continue
            p = index.parent(n)
            written = p is not None and (
                (p.type == "assignment_expression" and p.child_by_field_name("left") == n)
                or p.type == "update_expression"
            )
            if written and p is not None:
                stores.append((name, p))  # the whole assignment: its loads come first
            if not index.is_plain_assignment_target(n) and not address_taken(n):
                loads.append((name, n))
        out: list[Node] = []
        for lname, ld in loads:
            for sname, s in stores:
                if ld.start_byte > s.end_byte or (
                    # the next iteration loads after this one's store
                    (lname != sname or not _inside(ld, s)) and index.share_a_loop(s, ld)
                ):
                    out.append(ld)
                    break
        return out

    def _param_of(self, name: str | None) -> str | None:
        """The pointer parameter a name accesses (itself, or the parameter a local pointer
        was made from)."""
        return self.aliases.get(name, name) if name is not None else None

    def _aliased_at_launch(self, fn: Node, names: set[str]) -> bool | None:
        """True: launches of this kernel in the file (else in the other source files of its
        folder, the program's), none passing one argument to two of these parameters; None:
        one does; False: no launch seen."""
        launches = self.detection.launches
        if not any(site.kernel == self.k.name for site in launches) and self.detection.file:
            pattern = re.compile(rb"\b" + re.escape(self.k.name.encode()) + rb"\s*<<<")
            launches = tuple(
                site
                for unit in units_mentioning(self.detection.file, pattern)
                for site in unit.detection.launches
            )
        params = [n for _t, n in self.k.params]
        seen = False
        for site in launches:
            if site.kernel != self.k.name or len(site.args) != len(params):
                continue
            seen = True
            args = [
                re.sub(r"\s+", "", a) for a, p in zip(site.args, params, strict=True) if p in names
            ]
            if len(set(args)) < len(args):
                return None
        return seen

    # RL008, RL009 --------------------------------------------------------------------------
    def access_patterns(self) -> None:
        strided: set[str] = set()
        reread: set[str] = set()
        accesses = self._global_accesses()
        for n, name in accesses:
            if name not in strided:
                lane = self.lanes.address(n)
                if lane.kind == "lane" and lane.stride != "1":
                    strided.add(name)
                    share = sum(1 for _m, nm in accesses if nm == name) / len(accesses)
                    self._strided(n, name, lane.stride, share)
            if (
                name not in reread
                and not self.vars.shared
                and not self.k.is_offload
                and not self.index.is_plain_assignment_target(n)
            ):
                loop = self.index.enclosing_loop(n, self.k.body)
                if loop is not None and self._rereads(n, loop):
                    reread.add(name)
                    self._reread(n, name)

    def _global_accesses(self) -> list[tuple[Node, str]]:
        """Every outermost subscript of a global array (through aliases), with its array; not
        an address taken (``&in[i]``, which reads nothing: the pointer it makes may load a
        whole vector, ``reinterpret_cast<const uint4 *>(&in[16 * tid])``), nor an array of
        the kernel's or of the file's in shared or constant memory (``extern __shared__
        unsigned char tile[]``), which moves no DRAM sectors."""
        on_chip = on_chip_names(self.source)
        out = []
        for n in self.nodes:
            if (
                n.type != "subscript_expression"
                or self.index.is_inner_subscript(n)
                or address_taken(n)
            ):
                continue
            name = root_identifier(n.child_by_field_name("argument"))
            if name is None or name in self.vars.local_arrays or name.encode() in on_chip:
                continue
            out.append((n, self._param_of(name) or name))
        return out

    def _elem_bytes(self, name: str) -> int:
        for t, p in self.k.params:
            if p == name:
                if "double" in t or "long" in t or "int64" in t:
                    return 8
                if "half" in t or "short" in t:
                    return 2
                if "char" in t:
                    return 1
        return 4

    def _strided(self, n: Node, name: str, stride: str, share: float) -> None:
        elem = self._elem_bytes(name)
        counted = self.counts.sector_bytes.get(name) if self.counts is not None else None
        if counted is not None and counted <= 0:
            return  # the estimate finds every byte of the sectors used (x[3i], x[3i+1], ..)
        if counted is not None:
            # the estimate already charges the partly used sectors: the fix removes them
            gain = without_dram_bytes(self.gpu, self.counts, counted)
        else:
            moved = min(int(stride) * elem, SECTOR) if stride.isdigit() else SECTOR
            waste = max(moved / elem, 1.0)
            gain = fewer_dram_bytes(self.gpu, self.counts, share * (waste - 1.0))
        sev: Severity = "information" if self.bound == "bandwidth" else "hint"
        who = "iterations" if self.k.is_offload else "threads of a warp"
        cost = f"each access moves a whole {SECTOR}-byte sector for one {elem}-byte element" + (
            f", multiplying the DRAM traffic that bounds this bandwidth-bound kernel {self.on()}"
            if self.bound == "bandwidth"
            else ""
        )
        fix = (
            "make the thread index the fastest-varying (last) index, transpose the data, or "
            "stage tiles through shared memory"
            if not self.k.is_offload
            else "make the innermost parallel loop's index the last array index (swap the "
            "loops or transpose the data)"
        )
        self.add(
            "RL008",
            n,
            f"uncoalesced access to `{name}`: consecutive {who} touch elements `{stride}` "
            f"apart; {cost}. To fix, {fix}.",
            sev,
            gain=gain,
        )

    def _rereads(self, n: Node, loop: Node) -> bool:
        """``n`` is read in ``loop`` at an element that changes with the loop's counter and
        that the threads of a block share by rows (a slow address: ``A[row * n + k]`` with
        ``row`` from ``threadIdx.y``), over more elements than a small table: many warps
        fetch the same data, each on its own. A uniform address (``x[k]``, weights) is one
        broadcast per warp that the caches serve."""
        var = loop_var(loop)
        index = subscript_index(n)
        if var is None or index is None or var not in identifiers(index):
            return False
        if not self.lanes.of(loop.child_by_field_name("condition")).warp_uniform:
            return False
        if self.lanes.address(n).kind != "slow":
            return False  # lane-varying: coalesced; uniform: one broadcast per warp
        return not _small_trip_count(loop)

    def _reread(self, n: Node, name: str) -> None:
        sev: Severity = "information" if self.bound == "bandwidth" else "hint"
        self.add(
            "RL009",
            n,
            f"`{text(n)}` is read from global memory in a loop, and the threads of a block "
            f"read the same elements, each on its own: load a tile of `{name}` into "
            "`__shared__` memory once per block (then `__syncthreads()`) and read it from "
            "there; the reuse raises the arithmetic intensity"
            + (f", which is what limits this kernel {self.on()}." if sev == "information" else "."),
            sev,
            gain=Gain(None, float(TILE), self.gpu.name, f"with {TILE}-wide tiles"),
        )


def _small_trip_count(loop: Node) -> bool:
    """``for (k = 0; k < 9; k++)``: a literal bound of at most :data:`SMALL_TABLE`."""
    cond = loop.child_by_field_name("condition")
    if cond is None or cond.type != "binary_expression":
        return False
    if operator_text(cond) not in ("<", "<=", ">", ">=", "!="):
        return False
    k = int_literal(cond.child_by_field_name("right"))
    return k is not None and abs(k) <= SMALL_TABLE


def _loads(ptx: LineInstructions | None) -> bool:
    """The compiled statement loads from global memory (True with source counts)."""
    return ptx is None or ptx.global_loads > 0


def _inside(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


_ON_CHIP_DECLARATION = re.compile(rb"__(?:constant|shared)__[^;{]*")


@functools.lru_cache(maxsize=8)  # asked for each kernel of the same source
def on_chip_names(source: bytes) -> frozenset[bytes]:
    """The names declared ``__constant__`` or ``__shared__`` in ``source`` (every word of
    such a declaration: the type's too, which no array access names)."""
    return frozenset(
        w for m in _ON_CHIP_DECLARATION.finditer(source) for w in re.findall(rb"\w+", m.group())
    )
