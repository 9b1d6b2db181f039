"""Memory references of the counter: subscripts, dereferences and fields become
:class:`~roofline_lsp.estimate.thread_counts.Access` records (merged within a loop body,
loop-invariant loads hoisted), plus the CUDA built-in index variables.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from roofline_lsp.estimate.memory import APART
from roofline_lsp.estimate.tensor_ops import (
    Fragment,
    elements_per_thread,
    file_fragments,
    fragment_type,
)
from roofline_lsp.estimate.value_domain import (
    AXES,
    DATA,
    NOTHING,
    THREAD_DIMS,
    Val,
    Var,
    carried,
    host_constant,
    lane_slope,
)
from roofline_lsp.estimate.walk_branches import BranchWalker
from roofline_lsp.estimate.walk_state import UNFOLLOWED, AccessRecord
from roofline_lsp.syntax.carith import TREE_DIALECT, parse_literal
from roofline_lsp.syntax.cexpr import evaluate
from roofline_lsp.syntax.datatypes import INT, UNKNOWN, DataType
from roofline_lsp.syntax.expr import binary_operands, has_effects, reads_memory, text

# the values an integer of this many bytes holds, signed or unsigned
_NARROW = {1: (-128.0, 255.0), 2: (-32768.0, 65535.0)}


# the distance taken for a multiple of an unknown stride of a structure of arrays
# (``nijk * 2``): farther than any other constant offset of an index
COMPONENT_STRIDE = float(2**40)


# 32-bit unsigned values: a sum with a constant wraps, so it is no address immediate
_UNSIGNED = re.compile(r"\bunsigned\b|\buint(?:32_t)?\b")
_UNSIGNED_BUILTINS = frozenset(("threadIdx", "blockIdx", "blockDim", "gridDim"))


def _dot_member(node: Node) -> tuple[str, str] | None:
    """(``s``, ``u``) of ``s.u``: a member of a struct variable named in place (not of a
    pointer's target, ``p->u``); None for anything else."""
    if node.type != "field_expression":
        return None
    arg = node.child_by_field_name("argument")
    op = node.child_by_field_name("operator")
    if arg is None or arg.type != "identifier" or (op is not None and op.type == "->"):
        return None
    return text(arg), text(node.child_by_field_name("field"))


class ReferenceWalker(BranchWalker):
    """Memory accesses: ``a[i][j]``, ``*p``, ``s.f``/``p->f``, and their bookkeeping."""

    def memory(self, node: Node, kind: str, element: bool = False) -> Val:
        """A subscript chain ``a[i][j]``: one access of the element type (``element``, of
        its address: the element's address with its lane slope, ``a[i].x`` of a struct)."""
        wrapped = self.subscript_operator(node, kind)
        if wrapped is not None:
            return wrapped
        chain: list[Node] = []
        base = node
        while base.type == "subscript_expression":
            idx = base.child_by_field_name("indices") or base.child_by_field_name("index")
            if idx is not None:
                chain.append(idx)
            arg = base.child_by_field_name("argument")
            if arg is None:
                break
            base = arg
        deps: frozenset[str] = NOTHING
        moved: frozenset[str] = NOTHING  # what the base pointer itself moves with
        base_slope: float | None = 0.0  # elements the base pointer moves a lane
        key_parts = []
        idx_vals: list[Val] = []
        idx_nodes: list[Node] = []
        folded: int | None = None
        for idx in reversed(chain):
            for c in idx.named_children:
                idx_nodes.append(c)
                folded = self.folded_offset(c)
                outer, self.cursor.offset_index = self.cursor.offset_index, folded
                v = self.expr(c)
                self.cursor.offset_index = outer
                deps = deps | v.deps
                idx_vals.append(v)
                key_parts.append(text(c))
        bname = text(base) if base.type == "identifier" else self.this_member(base)
        if bname is not None:
            var = self.var(bname)
            buffer: str | None
            space: str | None
            if var is None:
                # a name declared out of view (a class member, a header's global): its array
                bv = self.identifier(bname, base)
                bt, space, buffer, arrdims = bv.type, bv.space or "global", bv.buffer or bname, 0
            else:
                bt, space, arrdims = var.type, var.space, var.arrdims
                buffer = var.buffer or bname
                moved = var.deps if var.buffer else NOTHING
                if var.buffer:
                    base_slope = lane_slope(var, self.par.lane)
                deps = deps | moved
                if space is None:
                    space = "global" if bt.pointer else "local"
                if buffer is None:
                    buffer = bname
        elif base.type == "field_expression" and self.fragment_of(base) is not None:
            # ``a_frag.x[t]``: an element of a tensor-core fragment, held in registers
            return Val(self.type_of("float"), deps)
        elif (whole := self.global_array_member(base)) is not None:
            # ``gs.u[i]`` of a global struct's array member: its own run of global memory
            bt, space, buffer, arrdims = whole, "global", text(base).replace(".", "->"), 0
        elif (own := self.local_array_member(base)) is not None:
            # ``acc.v[j]`` of a struct the thread declared: a per-thread array like
            # ``float v[256]`` (in local memory when indexed at run time)
            bt, space, buffer, arrdims = own, "local", text(base), 0
        else:
            member = base.type == "field_expression"
            bv = self.field(base, "address") if member else self.expr(base)
            if member and bv.type.pointer >= 2 and "->" in text(base):
                # ``g->u[i]``: the pointer member's value is the array indexed (its own
                # buffer), not the member's address in the struct
                ptr = self.field(base, "load")
                bv = Val(ptr.type, ptr.deps - {DATA}, None, text(base), ptr.space or "global")
            elif member and bv.buffer and bv.space in (None, "global"):
                # ``p->row[i]``, ``a[k].row[i]``: an array member is its own run of elements
                # in the struct, apart from the others and from the struct's count
                fname = text(base.child_by_field_name("field"))
                bv = Val(bv.type, bv.deps, None, f"{bv.buffer}->{fname}", bv.space)
                key_parts.insert(0, text(base))
            bt, space, buffer, arrdims = bv.type, bv.space or "global", bv.buffer, 0
            moved = bv.deps
            if not member and bt.pointer:
                # ``(in + 4 * i)[k]``, ``reinterpret_cast<float4 *>(in + off)[k]``
                base_slope = lane_slope(bv, self.par.lane)
            deps = deps | moved
            if buffer is None:
                buffer = text(base)
        levels = len(chain)
        elem_t = bt.deref(levels)
        if not bt.pointer and bt.kind not in ("unknown",):
            # subscripting a non-pointer: vector component or a local array we did not see
            space = space if space in ("shared", "local", "constant") else "local"
        if kind == "address":
            slope = self.lane_stride(idx_vals, base_slope) if element else None
            return Val(elem_t.pointer_to(), deps, None, buffer, space, slope=slope)
        if elem_t.pointer and levels and arrdims >= levels:
            # partial subscript of a multi-dimensional array: an address, not a load
            return Val(elem_t, deps, None, buffer, space)
        # pointer tables (float **p; p[i][j]) load the row pointer too
        if levels >= 2 and bt.pointer - arrdims >= 2 and space == "global":
            self.record((buffer or "?") + "[]", "global", 8, "load", deps, "|".join(key_parts[:1]))
        elem = int(self.type_bytes(elem_t))  # a pointer's 8, whatever it points to
        stride = self.lane_stride(idx_vals, base_slope)
        if stride and self.cursor.pinned_lane:
            stride = APART  # the lanes taking the branch are apart: a sector each
        interval = None
        if len(idx_vals) == 1 and not moved:
            # the index alone spans [lo, hi] (the base pointer does not move with threads);
            # a byte or short read from memory (``bins[img[i]]``) is one of 2^8 or 2^16 values
            iv, it = idx_vals[0], idx_vals[0].type
            narrow = DATA in iv.deps and it.kind == "int" and not it.pointer
            interval = iv.rng if iv.rng is not None else _NARROW.get(it.size) if narrow else None
        key = "|".join(key_parts)
        offset: tuple[str, float] | None = (key, 0.0)
        run = None
        if len(idx_nodes) == 1:
            terms, const = self._terms(idx_nodes[0])
            offset = (" ".join(sorted(t for t, _ in terms)), const) if terms else None
            # (only an index that depends on loaded data: evaluating terms costs walk budget)
            if DATA in idx_vals[0].deps:
                run = self.dense_run(idx_nodes[0], [n for _, n in terms])
        self.record(
            buffer or "?",
            space or "global",
            elem,
            kind,
            deps,
            key,
            interval,
            gathered=len(idx_nodes) == 1 and self.gathers(idx_nodes[0]),
            lane_stride=stride,
            offset=offset,
            # indices a constant apart share the address of their symbolic part, unless the
            # constant must be added apart (a 32-bit unsigned sum wraps)
            address_key=offset[0]
            if len(idx_nodes) == 1 and offset is not None and (folded is not None or not offset[1])
            else None,
            run=run,
            center=idx_vals[0].val if len(idx_vals) == 1 and not moved else None,
        )
        loaded_deps = deps | {DATA} | self.stored_in_loops(bname)
        if base.type == "identifier" and space in ("local", "shared"):
            held = self.var(text(base))
            if held is not None:
                loaded_deps = loaded_deps | held.held
        if kind == "load" and bname is not None and len(idx_vals) == 1:
            i = idx_vals[0]
            if i.val is not None and not i.deps and i.val == int(i.val):
                host = self.host_value(bname, f"{bname}[{int(i.val)}]")
                if host is not None:
                    return Val(elem_t, NOTHING, host)
        return Val(elem_t, loaded_deps, None, buffer if elem_t.pointer else None, space)

    def global_array_member(self, node: Node) -> DataType | None:
        """``gs.u`` of a struct held in global memory (a file-scope or mapped host struct,
        not a local or a kernel's by-value parameter) whose member ``u`` is an array: a
        pointer to its elements; None for anything else."""
        member = _dot_member(node)
        if member is None or any(member[0] in scope for scope in self.cursor.scopes):
            return None
        held = self.inputs.globals.get(member[0])
        if held is None or held.type.pointer or held.space in ("shared", "local"):
            return None
        found = self._array_member(held, member[1])
        return found[0].pointer_to() if found is not None else None

    def local_array_member(self, node: Node) -> DataType | None:
        """``acc.v`` of a struct variable the kernel's body declares (``Acc acc;``) whose member
        ``v`` is an array: a pointer to its elements, with the member's bytes booked as a
        per-thread array (``local_sizes``); None for anything else."""
        member = _dot_member(node)
        if member is None:
            return None
        # declared in the kernel's body, not a parameter or host object (the outer scope)
        scopes = reversed(self.cursor.scopes[1:])
        held = next((sc[member[0]] for sc in scopes if member[0] in sc), None)
        if held is None or held.type.pointer or held.arrdims or held.space not in (None, "local"):
            return None
        found = self._array_member(held, member[1])
        if found is None or not found[1] or found[0].pointer:
            return None
        self.tally.local_sizes.setdefault(text(node), found[1] * self.type_bytes(found[0]))
        return found[0].pointer_to()

    def _array_member(self, held: Var, fname: str) -> tuple[DataType, float] | None:
        """The element type and count of array member ``fname`` of the struct variable
        ``held``; None when it is no array member of a struct the program declares."""
        struct = held.tname if held.tname in self.inputs.struct_arrays else held.type.name
        count = self.inputs.struct_arrays.get(struct, {}).get(fname)
        elem = self.type_of(self.inputs.structs.get(struct, {}).get(fname, ""))
        if count is None or (elem.kind == "unknown" and not elem.name):
            return None
        return elem, count

    def stored_in_loops(self, name: str | None) -> frozenset[str]:
        """The enclosing loops that store to buffer ``name``, as :func:`carried` marks: a
        value loaded from it changes with them (``x[i] = x[i] * a + b`` computes anew each
        trip), while its address, and so the elements it can reach, does not."""
        if name is None:
            return NOTHING
        return frozenset(carried(d) for d, stored in self.cursor.loop_stores if name in stored)

    def host_value(self, name: str, key: str) -> float | None:
        """An offload region's read of host memory as the host code set it before the
        region: an element of a host array at a constant index (``cfg[1]`` of ``int
        cfg[2] = {n, 1000}``), what a pointer to a variable points at (``*n`` or ``n[0]``
        after ``run(&n)``), a field through a pointer to a struct (``p->iters`` after
        ``run(&params)``). ``name``: the host variable read (``key`` is what the host scope
        calls the value). A value, not data: a loop bounded by it has a count; unless the
        region writes that memory itself. A CUDA kernel reads them from a parameter whose
        memory the host copied them to (``cudaMemcpy(d_p, &p, ...)``)."""
        if not (self.inputs.offload or name in self.inputs.copied):
            return None
        if name in self.inputs.written or self.var(name) is None:
            return None
        return self.inputs.lookup_host(key)

    def dense_run(self, index: Node, terms: list[Node]) -> float | None:
        """How many consecutive elements an index is known to cover, when part of it is a
        value read from memory (``k + tid`` with ``k = begins[seg]`` and ``tid`` in [0, 7]:
        8; its other terms' ranges summed): copies of the access at constant offsets at
        least that far apart touch different elements. None when no term is read from
        memory (the index is as dense as the threads) or a term is not a name of known
        range or a read (``ni * j``: its spacing is not known here). ``terms``: the index's
        symbolic terms (:meth:`_terms`)."""
        if has_effects(index):
            return None  # evaluated once already: ``b[k++]`` must not step k again
        data = False
        run = 1.0
        for n in terms:
            if reads_memory(n):
                data = True
                continue
            if n.type != "identifier":
                return None
            v = self.expr_quiet(n)
            if DATA in v.deps:
                data = True
            elif v.rng is not None:
                run += v.rng[1] - v.rng[0]
            else:
                return None
        return run if data else None

    def _terms(self, index: Node) -> tuple[list[tuple[str, Node]], float]:
        """An index as the sum of its symbolic terms (signed text, node) and a constant:
        ``k + tid + 128`` -> ([("+k", k), ("+tid", tid)], 128.0)."""
        terms: list[tuple[str, Node]] = []
        const = 0.0
        stack: list[tuple[Node, float]] = [(index, 1.0)]
        while stack:
            n, sign = stack.pop()
            while n.type == "parenthesized_expression" and n.named_child_count == 1:
                n = n.named_children[0]
            op = n.child_by_field_name("operator") if n.type == "binary_expression" else None
            if op is not None and op.type in ("+", "-"):
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                if left is not None and right is not None:
                    stack.append((left, sign))
                    stack.append((right, sign if op.type == "+" else -sign))
                    continue
            # a literal or a name with a value (a macro, a constant); other terms symbolic
            v = self.expr_quiet(n) if n.type in ("number_literal", "identifier") else None
            if v is not None and v.val is not None and not v.deps:
                const += sign * v.val
                continue
            component = self._component(n)
            if component is not None:
                # ``met[base + i + nijk * 2]``: the third of a structure of arrays' components,
                # ``nijk`` (not known, the same for every thread) apart: a distance larger
                # than any other tile of the index (``_tiles``)
                stride, c = component
                terms.append((("+" if sign > 0 else "-") + "@" + stride, n))
                const += sign * c * COMPONENT_STRIDE
            else:
                terms.append((("+" if sign > 0 else "-") + text(n), n))
        return terms, const

    def _component(self, n: Node) -> tuple[str, float] | None:
        """``nijk * 2`` or ``2 * nijk``: a name whose value is not known, the same for every
        thread and loop trip, times a constant: (the name, the constant)."""
        sides = binary_operands(n, ("*",))
        if sides is None:
            return None
        left, right = sides
        for name, factor in ((left, right), (right, left)):
            if name.type != "identifier" or factor.type != "number_literal":
                continue
            c = parse_literal(text(factor), TREE_DIALECT)
            if c is not None and self._unknown_constant(text(name), name):
                return text(name), float(c)
        return None

    def _unknown_constant(self, name: str, node: Node) -> bool:
        """Whether ``name`` (a variable or a macro) has no known value and is the same for
        every thread and trip; walked once per name (the walk's budget is not spent on
        every index that uses it)."""
        known = self.tally.strides.get(name)
        if known is None:
            v = self.expr_quiet(node)
            known = self.tally.strides[name] = v.val is None and not v.deps
        return known

    def gathers(self, index: Node) -> bool:
        """Whether an index is a value read from memory as is: ``x[col[j]]``, or ``x[c]``
        after ``int c = col[j]``."""
        if index.type == "identifier":
            v = self.var(text(index))
            return v is not None and v.gathered
        return reads_memory(index)

    def record(
        self,
        buffer: str,
        space: str,
        elem: int,
        kind: str,
        deps: frozenset[str],
        key: str,
        interval: tuple[float, float] | None = None,
        gathered: bool = False,
        lane_stride: float | None = None,
        offset: tuple[str, float] | None = None,
        run: float | None = None,
        center: float | None = None,
        lane_bytes: float | None = None,
        address_key: str | None = None,
        distinct: float | None = None,
    ) -> None:
        """Book one access (merged with an identical one in the same loop body);
        ``interval``: the elements ``[lo, hi]`` its index spans, when known; ``gathered``:
        the index is a value read from memory; ``address_key``: what its address is computed
        from, when not ``key`` (``x[b + 1]`` is ``[R + 4]`` of x[b]'s ``R``); ``distinct``:
        the distinct elements it reaches over the launch, when not ``reach(deps)``."""
        if space == "local":
            # a per-thread array indexed anywhere by a value known only at run time (data,
            # the thread's index, a rolled loop's counter) cannot live in registers: it is
            # in local memory (cached in L1/L2, backed by DRAM), all its accesses with it
            # (``result`` drops those of the others)
            if buffer not in self.tally.local_sizes:
                # ``p[j].x`` of a per-thread array of structs (``P p[64]``): an access to
                # the array whose element it is a field of
                base = buffer.partition(".")[0]
                if base not in self.tally.local_sizes:
                    return
                buffer = base
            if any(d not in self.dimensions.unrolled_dims for d in deps):
                self.tally.local_dynamic.add(buffer)
            buffer, space = "local:" + buffer, "localmem"
        # (an element of a pack expansion is an access of its own: ``x[i + I]`` at I=0, 1...)
        ident = key + self.cursor.pack_element
        ck = (buffer, ident, kind)
        seen = self.cursor.seen[-1]
        # loop-invariant loads are hoisted, except from shared memory (written by other
        # threads between iterations)
        w = self.hoisted_weight(deps) if kind == "load" and space != "shared" else self.cursor.w
        if ck in seen and kind == "load":
            return
        seen.add(ck)
        # one address computation serves a load and a store, and every index a constant
        # apart (``x[b]``, ``x[b + 1]``: ``[R]``, ``[R + 4]``)
        address = (buffer, address_key or key, "")
        if space in ("global", "shared", "constant") and address not in seen:
            seen.add(address)
            self.add_int(self.inputs.settings.int_address * (0.5 if space == "shared" else 1.0), w)
        distinct = self.reach(deps) if distinct is None else distinct
        if interval is not None and distinct is not None:
            distinct = min(distinct, max(interval[1] - interval[0] + 1, 1.0))
        akey = (buffer, kind, ident, self.cursor.line)
        rec = self.tally.accesses.get(akey)
        if rec is None:
            self.tally.accesses[akey] = AccessRecord(
                buffer,
                space,
                elem,
                kind,
                w,
                distinct,
                self.cursor.line,
                key,
                interval,
                UNFOLLOWED in deps,
                gathered and DATA in deps,
                lane_stride,
                frozenset(
                    d
                    for d, _, par in self.cursor.loops
                    if d in deps
                    and not par
                    and d not in self.dimensions.unrolled_dims
                    and d not in self.dimensions.strided_dims
                ),
                offset,
                run,
                max(
                    (self.dimensions.searches[d] for d in deps if d in self.dimensions.searches),
                    default=None,
                ),
                self.sharers(deps),
                combined=kind == "atomic" and self.cursor.combining,
                center=center,
                lane_bytes=lane_bytes,
            )
            rec = self.tally.accesses[akey]
        else:
            rec.weight += w
        if self.cursor.guessing:
            rec.guessed += w

    def folded_offset(self, index: Node) -> int | None:
        """The node id of index ``p + c`` / ``p - c`` (``c`` a number) whose constant the
        compiler puts in the memory operand's immediate (``[R + 4]``): a signed or 64-bit
        sum, whose overflow the compiler may ignore; a 32-bit unsigned one wraps (a thread
        index, a variable declared ``unsigned``), so its sum is computed apart."""
        while index.type == "parenthesized_expression" and index.named_child_count == 1:
            index = index.named_children[0]
        if index.type != "binary_expression":
            return None
        op = index.child_by_field_name("operator")
        left, right = index.child_by_field_name("left"), index.child_by_field_name("right")
        if op is None or op.type not in ("+", "-") or left is None or right is None:
            return None
        if right.type == "number_literal":
            p = left
        elif op.type == "+" and left.type == "number_literal":
            p = right
        else:
            return None
        return None if self.is_unsigned32(p) else index.id

    def is_unsigned32(self, node: Node) -> bool:
        """Whether integer expression ``node`` is 32-bit unsigned, C's arithmetic conversions
        taken: a thread-index built-in or a variable declared ``unsigned`` in it, and no
        64-bit one (``blockIdx.x * blockDim.x + threadIdx.x`` wraps; ``i + 1`` of an int i
        does not)."""
        unsigned = False
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "field_expression":
                if text(n).split(".", 1)[0] in _UNSIGNED_BUILTINS:
                    unsigned = True
                    continue
                return False
            if n.type == "identifier":
                var = self.var(text(n))
                if var is not None and var.type.size > 4:
                    return False
                unsigned = unsigned or (var is not None and bool(_UNSIGNED.search(var.tname)))
                continue
            if n.type in ("binary_expression", "parenthesized_expression"):
                stack.extend(n.named_children)
            elif n.type != "number_literal":
                return False
        return unsigned

    def sharers(self, deps: frozenset[str]) -> float:
        """Threads of a CUDA block an index does not tell apart: the product of the block's
        dimensions it does not depend on (``inp[bt * C + i]`` with ``bt`` from threadIdx.x
        in a 32 x 32 block: 32). Offload regions: 1 (their teams' threads are iterations)."""
        if self.inputs.offload:
            return 1.0
        n = 1.0
        for d in THREAD_DIMS[:3]:  # threadIdx.x, .y, .z
            if d not in deps:
                n *= self.dimensions.dims.get(d, 1.0)
        return n

    def deref(self, arg: Node, kind: str) -> Val:
        v = self.expr(arg)
        t = v.type.deref() if v.type.pointer else v.type
        buffer = v.buffer or text(arg)
        space = v.space or ("global" if v.type.pointer else "local")
        if kind != "address":
            # ``*(in + 4 * i)``: lanes the pointer's stride apart (one address: ``*p``)
            stride = lane_slope(v, self.par.lane) if v.type.pointer else None
            if stride and self.cursor.pinned_lane:
                stride = APART
            self.record(
                buffer,
                space,
                t.size if not t.pointer else 8,
                kind,
                v.deps,
                "*" + text(arg),
                lane_stride=stride,
            )
        if kind == "load" and arg.type == "identifier":
            host = self.host_value(text(arg), f"{text(arg)}[0]")
            if host is not None:
                return Val(t, NOTHING, host)
        moved = self.stored_in_loops(text(arg)) if arg.type == "identifier" else NOTHING
        return Val(t, v.deps | {DATA} | moved, None, buffer if t.pointer else None, space)

    def lane_stride(self, idx_vals: list[Val], base_slope: float | None) -> float | None:
        """Elements between the addresses consecutive lanes subscript with ``idx_vals``
        from a base pointer that moves ``base_slope`` elements a lane; None: not known."""
        lane = self.par.lane
        stride = lane_slope(idx_vals[-1], lane) if idx_vals else None
        if stride is not None and any(lane_slope(v, lane) != 0.0 for v in idx_vals[:-1]):
            return None  # a[i][j] with i moving across lanes: rows of unknown length
        if stride is None or base_slope is None:
            return None
        return stride + base_slope

    def fragment_of(self, node: Node) -> Fragment | None:
        """The tensor-core fragment the object of member access ``node`` is (``a_frag`` of
        ``a_frag.x``), else None."""
        obj = node.child_by_field_name("argument")
        while obj is not None and obj.type == "subscript_expression":  # ``c[i][j].x``
            obj = obj.child_by_field_name("argument")
        if obj is None or obj.type != "identifier" or self.var(text(obj)) is None:
            return None
        return self.fragment_named(text(obj), obj)

    def fragment_named(self, name: str, node: Node) -> Fragment | None:
        """The tensor-core fragment variable ``name`` is: by its declared type, else by a
        declaration in ``node``'s file (``auto a = fragment<...>()``); None if neither."""
        held = self.var(name)
        declared = fragment_type(held.tname) if held is not None and held.tname else None
        return declared or file_fragments(node).get(name)

    def shape_value(self, shape: str) -> float | None:
        """A tile dimension's text (``16``, ``WMMA_M``, a template parameter) as a number."""
        macros = {n: body for n, (params, body) in self.inputs.macros.items() if params is None}
        v = evaluate(self.bound_text(shape), macros)
        return v if v is not None else self.inputs.lookup_host(shape.strip())

    def field(self, node: Node, kind: str) -> Val:
        arg = node.child_by_field_name("argument")
        fname = text(node.child_by_field_name("field"))
        if fname == "num_elements" and (frag := self.fragment_of(node)) is not None:
            count = elements_per_thread(frag, self.shape_value)
            if count is not None:
                return Val(INT, NOTHING, count)
        op = node.child_by_field_name("operator")
        arrow = op is not None and op.type == "->"
        if arg is None:
            return Val(UNKNOWN)
        if arg.type == "identifier" and not arrow:
            an = text(arg)
            if an in ("threadIdx", "blockIdx", "blockDim", "gridDim") and self.var(an) is None:
                return self.builtin(an, fname)
        member = self.this_member(node)
        if member is not None:
            return self.identifier(member, node) if kind != "address" else self.expr(node)
        if arrow:
            base = self.expr(arg)
            st = base.type.deref()
            ft = self.field_type(st, fname)
            if kind == "address":
                return Val(ft.pointer_to(), base.deps, None, base.buffer, base.space)
            if base.type.pointer:
                # q->x with q = p + i: consecutive threads' structs a struct's size apart
                slope = lane_slope(base, self.par.lane)
                whole = self.struct_size(st)
                self.record(
                    (base.buffer or text(arg)) + "." + fname,
                    base.space or "global",
                    ft.size if not ft.pointer else 8,
                    kind,
                    base.deps,
                    "->",
                    lane_bytes=abs(slope) * whole if slope and whole else None,
                )
            if kind == "load" and arg.type == "identifier" and not ft.pointer:
                host = self.host_value(text(arg), f"{text(arg)}->{fname}")
                if host is not None:
                    return Val(ft if ft.kind != "unknown" else INT, NOTHING, host)
            return Val(
                ft, base.deps | {DATA}, None, base.buffer if ft.pointer else None, base.space
            )
        if arg.type == "subscript_expression":
            # a[i].x: an access to the element's field
            inner = self.memory(arg, "address", element=True)
            st = inner.type.deref()
            ft = self.field_type(st, fname)
            if kind == "address":
                return Val(ft.pointer_to(), inner.deps, None, inner.buffer, inner.space)
            whole = self.struct_size(st)
            self.record(
                (inner.buffer or "?") + "." + fname,
                inner.space or "global",
                ft.size if not ft.pointer else 8,
                kind,
                inner.deps,
                text(arg) + "." + fname,
                # the threads' structs apart: a field's lanes are a struct's size apart
                lane_bytes=abs(inner.slope) * whole if inner.slope and whole else None,
            )
            return Val(
                ft, inner.deps | {DATA}, None, inner.buffer if ft.pointer else None, inner.space
            )
        held = self.var(text(arg)) if arg.type == "identifier" else None
        if held is not None and held.tname:
            hv = self.inputs.lookup_host(f"{held.tname}::{fname}")  # a static member: x.size
            if hv is not None:
                return host_constant(hv)
        if (
            arg.type == "identifier"
            and self.inputs.offload
            and held is None
            and text(arg) not in self.inputs.written
        ):
            # a field of a global struct, as the host set it before the region
            # (``params.n = atoi(argv[1])`` in main)
            hv = self.inputs.lookup_host(f"{text(arg)}.{fname}")
            if hv is not None:
                return host_constant(hv)
        base = self.expr(arg)
        ft = self.field_type(base.type, fname)
        if held is not None and fname in self.inputs.structs.get(held.tname, {}):
            ft = self.type_of(self.inputs.structs[held.tname][fname])  # ``Param<float> p``
        if base.type.pointer and not ft.pointer:
            return Val(ft, base.deps, None)
        if arg.type == "identifier" and not ft.pointer and not base.deps:
            # a field of a struct passed by value, as the host set it (``p.n = 4096``)
            const = held is not None and held.const
            owner = (held.host_name if held is not None else "") or text(arg)
            hv = self.inputs.lookup_host(f"{owner}.{fname}") if const else None
            if hv is not None:
                return Val(ft if ft.kind != "unknown" else INT, NOTHING, hv)
        if ft.pointer and base.buffer is None and not base.type.pointer:
            # a pointer member of a struct held by value (``p.src`` of a kernel's parameter
            # struct): the array it points to, named for the member
            return Val(ft, base.deps, None, text(node), _pointee_space(base.space))
        if ft.pointer:
            return Val(ft, base.deps, None, base.buffer, _pointee_space(base.space))
        return Val(ft, base.deps, None, None, base.space)

    def this_member(self, node: Node) -> str | None:
        """``this->x`` of a method, when the walk knows ``x`` (a data member the host code
        declares): the name ``x``, which the method may also write bare."""
        if node.type != "field_expression":
            return None
        arg = node.child_by_field_name("argument")
        name = text(node.child_by_field_name("field"))
        if arg is None or arg.type != "this" or self.var(name) is None:
            return None
        return name

    def field_type(self, st: DataType, fname: str) -> DataType:
        if st.lanes > 1 and fname in ("x", "y", "z", "w"):
            return st.lane()
        if st.kind == "unknown" and st.name in self.inputs.structs:
            ft = self.inputs.structs[st.name].get(fname)
            if ft is not None:
                return self.type_of(ft)
        if st.lanes > 1:
            return st.lane()
        if st.kind == "unknown":
            return UNKNOWN
        return st

    def builtin(self, an: str, f: str) -> Val:
        axis = AXES.index(f) if f in AXES else 0
        if an == "threadIdx":
            n = self.inputs.block[axis]
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"t" + f}), (n - 1) / 2, rng=(0.0, n - 1.0), slope=1.0)
        if an == "blockIdx":
            n = self.inputs.grid[axis]
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"b" + f}), (n - 1) / 2, rng=(0.0, n - 1.0))
        if an == "blockDim":
            return Val(INT, NOTHING, float(self.inputs.block[axis]))
        return Val(INT, NOTHING, float(self.inputs.grid[axis]))

    def is_local_struct(self, left: Node) -> bool:
        arg = left.child_by_field_name("argument")
        op = left.child_by_field_name("operator")
        if arg is None or arg.type != "identifier" or op is None or op.type == "->":
            return False
        v = self.var(text(arg))
        return v is not None and not v.type.pointer and v.space in (None, "local")

    def lvalue(self, left: Node, kind: str) -> Val:
        if left.type == "subscript_expression":
            return self.memory(left, kind)
        if left.type == "field_expression":
            return self.field(left, kind)
        if left.type == "call_expression":  # a function returning a reference
            return self.call(left, kind)
        arg = left.child_by_field_name("argument")
        return self.deref(arg, kind) if arg is not None else Val(UNKNOWN)


def _pointee_space(holder: str | None) -> str:
    """Where a pointer member points, given where its struct is: global memory, but for a
    struct in shared or local memory, which may point at its own space (a struct of
    ``__constant__`` parameters holds device pointers: ``cp.y[i]`` is a global access)."""
    return holder if holder in ("shared", "local") else "global"
