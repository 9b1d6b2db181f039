"""Calls in the counter: atomics, intrinsics and math functions (costs from ``costs.py``),
OpenMP runtime queries, inlined device functions (with a per-signature cost summary reused
after a few full walks) and expanded macros.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import replace

from tree_sitter import Node

from roofline_lsp.detect.bindings import (
    array_reference_sizes,
    function_params,
    method_class,
    template_params,
)
from roofline_lsp.detect.treewalk import returned_expression
from roofline_lsp.estimate import costs
from roofline_lsp.estimate.macro_expansion import call_tree, macro_tree
from roofline_lsp.estimate.tensor_ops import (
    WARP,
    elements_per_thread,
    file_fragments,
    mma_flops,
    operand_name,
)
from roofline_lsp.estimate.value_domain import (
    DATA,
    NOTHING,
    Val,
    Var,
    call_signature,
    clamped_slope,
    converted,
    extreme_range,
    fixed_constant,
    fold_binary,
    fold_call,
    slope_of,
    value_range,
    widest_type,
)
from roofline_lsp.estimate.walk_groups import GroupWalker
from roofline_lsp.estimate.walk_state import PACK, Frame, InlineSummary, instantiate
from roofline_lsp.syntax.cexpr import evaluate
from roofline_lsp.syntax.datatypes import (
    DOUBLE,
    FLOAT,
    HALF,
    INT,
    LONG,
    UNKNOWN,
    VOID,
    DataType,
    overload_key,
    spellings,
)
from roofline_lsp.syntax.declarations import TemplateInstance
from roofline_lsp.syntax.expr import declarator_stars, declared_name, text, unparenthesized
from roofline_lsp.syntax.functions import function_declarator

MATH_NAMES = set(costs.MATH_F32) | set(costs.MATH_F64)


def _math_name(name: str) -> bool:
    """A C math library function (``fma``, ``fmaf``, ``sqrt``, ``sqrtf``)."""
    return name in MATH_NAMES or name.removesuffix("f") in MATH_NAMES


# cache-hinted loads and stores (``__ldcs(p)``, ``__stcs(p, v)``): an ordinary access of
# ``*p`` of the pointee's width (a ``float4*`` moves 16 bytes)
CACHE_LOADS = frozenset(["__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"])
CACHE_STORES = frozenset(["__stcs", "__stcg", "__stwb", "__stwt"])
COPIES = frozenset(["memcpy", "__builtin_memcpy"])  # (``std::memcpy``: the short name)
# a thread's asynchronous copy from global to shared memory (``cp.async``; the
# ``memcpy_async`` of ``cuda::`` and ``cooperative_groups::``: ``_copy_kind``)
ASYNC_COPIES = frozenset(["__pipeline_memcpy_async"])
_THREAD_COPIES = COPIES | ASYNC_COPIES
# a copy's size given as ``cuda::aligned_size_t<16>(bytes)`` (or ``{bytes}``): the bytes
_ALIGNED_SIZE = re.compile(
    r"^\s*(?:cuda::)?aligned_size_t\s*<(?:[^<>()]|\([^()]*\))*>\s*[({](.*)[)}]\s*$", re.S
)


def _copy_kind(fname: str, short: str, nargs: int) -> str | None:
    """What a call to ``fname`` with ``nargs`` arguments copies: ``"thread"`` for one
    thread's copy (``memcpy(dst, src, n)``, ``__pipeline_memcpy_async(dst, src, n)``,
    ``cuda::memcpy_async(dst, src, n, pipe)``), ``"group"`` for a group's
    (``cooperative_groups::memcpy_async(group, dst, src, n)``,
    ``cuda::memcpy_async(group, dst, src, n, barrier)``), None for any other call."""
    if short == "memcpy_async":
        grouped = nargs != 4 or fname.startswith(("cg::", "cooperative_groups::"))
        return ("group" if nargs >= 4 else None) if grouped else "thread"
    return "thread" if short in _THREAD_COPIES and nargs >= 3 else None


# ``<stdint.h>``'s integer constant macros: their argument, of the type they name
_CONSTANT_MACROS = {"INT32_C": INT, "UINT32_C": INT, "INT64_C": LONG, "UINT64_C": LONG}
OMP_IDS = frozenset(
    [
        "omp_get_thread_num",
        "omp_get_team_num",
        "omp_get_num_threads",
        "omp_get_num_teams",
        "omp_get_max_threads",
        "omp_get_team_size",
    ]
)


# texture fetches (``tex2D<float4>(obj, x, y)``, ``tex2DLod``, ``tex1Dfetch``, a texture
# reference's ``tex2D(ref, x, y)``) and surface reads and writes (``surf2Dwrite(v, s, x, y)``)
_TEXTURE_CALL = re.compile(
    r"tex(?:1D|2D|3D|Cubemap)(?:Layered)?(?:fetch|Lod|Grad|gather)?|texfetch|"
    r"surf(?:1D|2D|3D|Cubemap)(?:Layered)?(?:read|write)"
)
_TEXTURE_TYPE = re.compile(r"texture\s*<\s*([^,>]+)")


class CallWalker(GroupWalker):
    """Function calls, device-function inlining and macro expansion."""

    def texture(self, fn: Node | None, short: str, args: list[Node]) -> Val:
        """A texture fetch or a surface read: a load of the element type (the call's
        template argument, the texture reference's, else a float) from the texture at the
        coordinates; a surface write: a store of the value written."""
        vals = [self.expr(a) for a in args]
        write = short.endswith("write")
        obj = args[1] if write and len(args) > 1 else args[0]
        deps = NOTHING
        for v in vals[2 if write else 1 :]:
            deps = deps | v.deps
        targs = fn.child_by_field_name("arguments") if fn is not None else None
        if write:
            elem = vals[0].type
        elif fn is not None and fn.type == "template_function" and targs is not None:
            elem = self.type_of(text(targs).strip("<> "))
        else:
            declared = self.inputs.texture_types.get(text(obj), "")
            m = _TEXTURE_TYPE.search(declared)
            elem = self.type_of(m.group(1)) if m else FLOAT
        size = elem.size if elem.kind != "unknown" else 4
        kind = "store" if write else "load"
        # the texels the coordinates reach: the product of their ranges (a 5 x 5 blur's
        # x + dx, y + dy read the image once, not 25 times)
        spans = [v.rng[1] - v.rng[0] + 1 for v in vals[2 if write else 1 :] if v.rng is not None]
        coords = len(vals) - (2 if write else 1)
        interval = (0.0, math.prod(spans) - 1) if spans and len(spans) == coords else None
        self.record(text(obj), "global", size, kind, deps, short[:4], interval)
        return Val(VOID, deps) if write else Val(elem, deps | {DATA})

    def tensor_mma(self, node: Node, args: list[Node]) -> Val:
        """``wmma::mma_sync(d, a, b, c)``: a warp's tile multiply-add on the tensor cores,
        its FLOPs per thread (``tensor_ops.mma_flops``) at the line's weight; none when no
        fragment declaration in the file gives its shape."""
        known = file_fragments(node)
        a = known.get(operand_name(text(args[1])))
        counted = mma_flops(a, known, self.shape_value)
        if counted is not None:
            flops, kind = counted
            self.tally.tensor += flops * self.cursor.w
            self.tally.tensor_kind = self.tally.tensor_kind or kind
        return Val(VOID, NOTHING)

    def tile_access(self, frag: Node, ptr: Node, kind: str) -> Val:
        """``wmma::load_matrix_sync(a_frag, p, ld)`` (``store_matrix_sync`` alike): the warp
        moves the fragment's tile, rows x columns elements from ``p`` on, each lane its share
        (``num_elements`` of them). ``p`` is the same for the warp's lanes (the API's rule):
        it tells warps apart, not lanes, so the distinct shares over the launch are the
        distinct warps' pointers x 32 lanes. Nothing when the fragment's shape is not known."""
        shape = self.fragment_named(operand_name(text(frag)), frag)
        share = elements_per_thread(shape, self.shape_value) if shape is not None else None
        v = self.expr(ptr)
        if share is None or not v.type.pointer:
            return Val(VOID, v.deps)
        t = v.type.deref()
        lane = self.par.lane
        warps = self.reach(v.deps - {lane})
        if warps is not None and lane in v.deps:
            warps *= max(self.dimensions.dims.get(lane, WARP) / WARP, 1.0)  # (tx / 32)
        self.record(
            v.buffer or text(ptr),
            v.space or "global",
            int(share * (8 if t.pointer else t.size)),
            kind,
            v.deps | {lane},
            "tile:" + text(ptr),
            lane_stride=1.0,
            distinct=None if warps is None else warps * WARP,
        )
        return Val(VOID, v.deps)

    def call(self, node: Node, kind: str = "load") -> Val:
        """A call's cost and value; ``kind``: how the caller uses the reference it returns
        (``domain.f(i) = v`` stores through it)."""
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [c for c in (args_node.named_children if args_node else []) if c.type != "comment"]
        fname = ""
        receiver: tuple[str, Val] | None = None  # the object a method is called on
        element: Node | None = None  # ... when it is an array element (``pixel[i].set(v)``)
        if fn is not None:
            if fn.type == "template_function":
                fname = text(fn.child_by_field_name("name"))
            elif fn.type == "field_expression":
                fname = text(fn.child_by_field_name("field"))
                obj = fn.child_by_field_name("argument")
                if fname == "size" and not args and obj is not None and obj.type == "identifier":
                    # w.size() in an offload region: the size the host gave the vector
                    host = self.host_value(text(obj), f"{text(obj)}.size()")
                    if host is not None:
                        return Val(INT, NOTHING, host)
                if obj is not None and fname not in ("sync",):
                    ov = self.expr(obj)
                    if obj.type == "identifier":
                        receiver = (text(obj), ov)
                    elif unparenthesized(obj).type == "subscript_expression":
                        element = unparenthesized(obj)
            else:
                fname = text(fn)
        short = fname.rsplit("::", 1)[-1].strip()
        if short.startswith("__builtin_") and _math_name(short[len("__builtin_") :]):
            short = short[len("__builtin_") :]  # ``__builtin_fmaf``: the library function
        cast = self.misread_cast(fn, args)
        if cast is not None:
            return cast
        group = self.group_call(fn, short, args)
        if group is not None:
            return group
        if short == "mma_sync" and len(args) >= 3:
            return self.tensor_mma(node, args)
        if short in ("load_matrix_sync", "store_matrix_sync") and len(args) >= 2:
            load = short == "load_matrix_sync"
            frag, ptr = (args[0], args[1]) if load else (args[1], args[0])
            return self.tile_access(frag, ptr, "load" if load else "store")
        if short in costs.ATOMICS:
            return self.atomic(short, args)
        if short in OMP_IDS:
            return self.omp_id(short)
        if short.startswith(("tex", "surf")) and _TEXTURE_CALL.fullmatch(short) and args:
            return self.texture(fn, short, args)
        if short in CACHE_LOADS and args:
            return self.through_pointer(args[0], "load")
        if short in CACHE_STORES and len(args) >= 2:
            v = self.expr(args[1])
            self.through_pointer(args[0], "store")
            return Val(VOID, v.deps)
        copy = _copy_kind(fname, short, len(args))
        if copy == "group":
            copied = self.group_copy(args)
            if copied is not None:
                return copied
        if copy == "thread":
            # memcpy(&t, &a[i], sizeof(T)) in device code: a load of the source's element,
            # a store of the destination's (a copy of one element, the common use); an
            # asynchronous copy of a wider chunk (``cuda::aligned_size_t<16>(sizeof(float4))``
            # from ``&A[4 * tx]``) reads the elements between its threads' starts
            self.expr(args[2])
            src = self.through_pointer(args[1], "load")
            self.through_pointer(args[0], "store")
            return Val(VOID, src.deps)
        if (
            short in ("static_cast", "reinterpret_cast", "const_cast", "bit_cast")
            and fn is not None
        ):
            targs = fn.child_by_field_name("arguments")
            ty = self.type_of(text(targs).strip("<>")) if targs is not None else UNKNOWN
            v = self.expr(args[0]) if args else Val(ty)
            return self.retyped(v, ty, v.val)
        if short in ("float", "double", "int", "unsigned", "long", "half", "size_t") and args:
            v = self.expr(args[0])
            ty = self.type_of(short)
            return converted(
                v, ty, v.val if ty.kind != "int" or v.val is None else float(int(v.val))
            )
        # a variable in scope hides a function of its name (``f(i)`` with ``f`` a lambda
        # parameter, where another file of the folder defines a function ``f``)
        if fn is not None and fn.type == "identifier" and self.var(short) is not None:
            called_object = self.call_object(fn, short, node, args, receiver, kind)
            if called_object is not None:
                return called_object
        # user functions first (they may shadow library names)
        fnode = self.inputs.functions.get(short)
        if (
            fnode is not None
            and short not in self.cursor.call_stack
            and (len(self.cursor.call_stack) < self.inputs.settings.max_inline_depth)
        ):
            targs = (
                fn.child_by_field_name("arguments")
                if fn is not None and fn.type == "template_function"
                else None
            )
            called = self.inline(
                short, fnode, args, template_args=targs, receiver=receiver, kind=kind
            )
            if element is not None and assigns_members(fnode, self.inputs.structs):
                # a method assigning its object's members, called on an element in memory:
                # the element is read (above) and written back
                self.lvalue(element, "store")
            return called
        m = self.inputs.macros.get(short)
        if m is not None and m[0] is not None and short not in self.cursor.call_stack:
            return self.expand_macro(short, m, args, node, kind)
        named = self.inputs.aliases.get(short)  # template <float (*F)(float)>: F(x)
        fnode = self.inputs.functions.get(named) if named and named != short else None
        if (
            fnode is not None
            and named is not None
            and named not in self.cursor.call_stack
            and len(self.cursor.call_stack) < self.inputs.settings.max_inline_depth
        ):
            return self.inline(named, fnode, args)
        if fn is not None:
            called_object = self.call_object(fn, short, node, args, receiver, kind)
            if called_object is not None:
                return called_object
        vals = [self.expr(a) for a in args]
        deps = NOTHING
        for v in vals:
            deps = deps | v.deps
        w = self.hoisted_weight(deps)
        if short in costs.FREE_CALLS or short.startswith(("make_", "__shfl", "__float2", "__int2")):
            ty = conversion_type(short, vals)
            return Val(ty, deps, None)
        if short in costs.COMPLEX_CALLS:
            prec, flops, result = costs.COMPLEX_CALLS[short]
            scalar = FLOAT if prec == "f32" else DOUBLE
            self.add_flop(scalar, flops, w)
            if result == "real":
                return Val(scalar, deps)
            return Val(DataType(scalar.kind, scalar.size * 2, lanes=2), deps)
        if short in costs.FAST_INTRINSICS:
            f, i = costs.FAST_INTRINSICS[short]
            ty = DOUBLE if short.startswith(("__d", "__fma_rn")) else FLOAT
            self.add_flop(ty, f, w)
            self.add_int(i, w)
            return Val(ty, deps)
        if short in costs.HALF_INTRINSICS:
            self.add_flop(HALF, costs.HALF_INTRINSICS[short], w)
            return Val(HALF, deps)
        if short in ("__mul24", "__umul24") and len(vals) == 2:
            # a 24-bit multiply (``INDEX(i, blockIdx.x, 32)``): the product, as ``a * b``
            a, b = vals
            val = fold_binary("*", a.val, b.val, deps, integer=True)
            if val is None or deps:
                self.add_int(costs.INT_INTRINSICS[short], w)
            return Val(
                INT,
                deps,
                val,
                rng=value_range("*", a, b),
                slope=slope_of("*", a, b, self.par.lane),
            )
        if short in costs.INT_INTRINSICS:
            slope = clamped_slope(short, vals, self.par.lane)
            if short in ("min", "max", "abs") and vals and any(v.type.is_float for v in vals):
                ty = widest_type(vals)
                return Val(ty, deps, fold_call(short, vals), slope=slope)
            ty = widest_type(vals) if vals else INT
            val = fold_call(short, vals)
            if val is None and self.chosen_per_block(deps) and short in ("min", "max"):
                # chosen per block (``min(start + chunk, n)``: the last block stops at n):
                # the side most blocks take
                val = fold_call(short, [Val(v.type, NOTHING, v.val) for v in vals])
            if val is None or deps:
                self.add_int(costs.INT_INTRINSICS[short] * (2 if ty.size > 4 else 1), w)
            rng = None
            if short in ("min", "max", "umin", "umax"):
                rng = extreme_range(short, vals, self.inner_extreme(args))
            return Val(ty if ty.kind == "int" else INT, deps, val, rng=rng, slope=slope)
        base, prec = math_function(short, vals)
        if base is not None:
            ty = DOUBLE if prec == "f64" else FLOAT
            val = fold_call(base, vals)
            if (val is None or deps) and not self.computed_before(node, "math"):
                self.add_math(ty, base, w)
            return Val(ty, deps, val, slope=clamped_slope(base, vals, self.par.lane))
        # unknown function: a small cost
        self.add_int(2.0, w)
        return Val(widest_type(vals) if vals else UNKNOWN, deps | {DATA})

    def group_copy(self, args: list[Node]) -> Val | None:
        """``cooperative_groups::memcpy_async(group, dst, src, bytes)`` (and
        ``cuda::memcpy_async(group, dst, src, bytes, barrier)``): the group's threads copy
        ``bytes`` from ``src`` to ``dst`` between them, walked as the loop it performs, each
        thread taking the elements of its rank a group's size apart. None when the group or
        the source's element is not known."""
        group, dst, src, size = args[:4]
        if self.group_of(group) is None:
            return None
        pointee = self.expr_quiet(src).type
        elem = pointee.deref().size if pointee.pointer else 0
        if elem <= 0:
            return None
        g, n = text(group), _ALIGNED_SIZE.sub(r"\1", text(size))
        i, used = "memcpy_async_i", "".join(text(a) for a in args)
        while i in used:
            i += "_"  # (a name the arguments do not use)
        loop = (
            f"for (int {i} = {g}.thread_rank(); {i} < ({n}) / {elem}; {i} += {g}.size())"
            f" ({text(dst)})[{i}] = ({text(src)})[{i}];"
        )
        tree = macro_tree(loop, expression=False)
        return self.in_macro("memcpy_async", tree, expression=False) if tree is not None else None

    def inner_extreme(self, args: list[Node]) -> tuple[str, float] | None:
        """The argument of a ``min``/``max`` that is the other extreme of a constant
        (``max(bin, 0)`` in ``min(max(bin, 0), 99)``): ``("max", 0.0)``, else None."""
        for a in args:
            while a.type == "parenthesized_expression" and a.named_child_count == 1:
                a = a.named_children[0]
            fn = a.child_by_field_name("function") if a.type == "call_expression" else None
            inner = a.child_by_field_name("arguments")
            name = text(fn).replace(" ", "").rsplit("::", 1)[-1] if fn is not None else ""
            name = name[1:] if name in ("umin", "umax") else name
            if name not in ("min", "max") or inner is None or len(inner.named_children) != 2:
                continue
            for c in inner.named_children:
                v = self.expr_quiet(c)
                if v.val is not None and not v.deps:
                    return name, float(v.val)
        return None

    def misread_cast(self, fn: Node | None, args: list[Node]) -> Val | None:
        """``(real)(i * h)`` with ``real`` a type name, which the grammar reads as a call of
        ``(real)``, and ``UINT64_C(1)`` (``<stdint.h>``'s constant macros): the converted
        value, not an unknown function's result (None: not this form)."""
        if fn is None or len(args) != 1:
            return None
        if fn.type == "identifier" and text(fn) in _CONSTANT_MACROS:
            return self.cast(_CONSTANT_MACROS[text(fn)], args[0])
        if fn.type != "parenthesized_expression":
            return None
        inner = unparenthesized(fn)
        if inner.type not in ("identifier", "type_identifier", "primitive_type"):
            return None
        name = text(inner)
        if self.var(name) is not None or self.inputs.functions.get(name) is not None:
            return None
        ty = self.type_of(name)
        return self.cast(ty, args[0]) if ty.kind != "unknown" else None

    def subscript_operator(self, node: Node, kind: str) -> Val | None:
        """``y[i]`` of an object whose type defines ``operator[]`` (``struct Arr { float *p;
        float &operator[](int i) { return p[i]; } }``, a span): the operator's body, walked
        as a method call on ``y``; None for anything else."""
        base = node.child_by_field_name("argument")
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        if base is None or idx is None or base.type != "identifier":
            return None
        var = self.var(text(base))
        if var is None or var.type.pointer or var.arrdims or var.buffer:
            return None
        struct = var.tname if var.tname in self.inputs.structs else var.type.name
        if var.space in ("local", "shared") or struct not in self.inputs.structs:
            return None
        fnode = self.inputs.functions.get("operator[]")
        args = [c for c in idx.named_children if c.type != "comment"]
        if fnode is None or len(args) != 1 or "operator[]" in self.cursor.call_stack:
            return None
        receiver = (text(base), self.expr(base))
        return self.inline("operator[]", fnode, args, receiver=receiver, kind=kind)

    def overloaded(self, op: str, args: list[Node], vals: list[Val]) -> Val | None:
        """``a + b`` (``op`` ``+``) or ``a += b`` of a struct or vector type that the program
        defines ``operator+`` (``operator+=``) for, by the operands' types: the operator's
        body walked with its parameters bound to the operands (``vals``, walked already).
        None when no overload takes them (the caller checks that an operand is such a
        type)."""
        types = [v.type for v in vals]
        if len(self.cursor.call_stack) >= self.inputs.settings.max_inline_depth:
            return None
        name = "operator" + op
        for combo in itertools.product(*(spellings(t) for t in types)):
            key = overload_key(name, list(combo))
            fnode = self.inputs.functions.get(key)
            if fnode is not None and key not in self.cursor.call_stack:
                return self.inline(key, fnode, args, evaluated=vals)
        return None

    def through_pointer(self, ptr: Node, kind: str) -> Val:
        """``*ptr`` as a load or store: ``&a[i]`` is the access ``a[i]``, ``&s.f`` the field,
        anything else (``p + i``, ``reinterpret_cast<float4*>(q)``) a dereference."""
        while ptr.type == "parenthesized_expression" and ptr.named_children:
            ptr = ptr.named_children[0]
        if ptr.type == "pointer_expression":
            op = ptr.child_by_field_name("operator")
            inner = ptr.child_by_field_name("argument")
            while inner is not None and inner.type == "parenthesized_expression":
                inner = inner.named_children[0] if inner.named_child_count == 1 else None
            if op is not None and op.type == "&" and inner is not None:
                if inner.type == "subscript_expression":
                    return self.memory(inner, kind)
                if inner.type == "field_expression":
                    return self.field(inner, kind)
        return self.deref(ptr, kind)

    def omp_id(self, short: str) -> Val:
        if short == "omp_get_thread_num":
            n = self.par.team_threads
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"tx"}), (n - 1) / 2, rng=(0.0, n - 1), slope=1.0)
        if short == "omp_get_team_num":
            n = self.par.teams
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"bx"}), (n - 1) / 2, rng=(0.0, n - 1))
        if short in ("omp_get_num_threads", "omp_get_max_threads", "omp_get_team_size"):
            return Val(INT, NOTHING, self.par.team_threads)
        return Val(INT, NOTHING, self.par.teams)

    def atomic(self, short: str, args: list[Node]) -> Val:
        if not args:
            return Val(INT)
        target = args[0]
        vals = [self.expr(a) for a in args[1:]]
        # an integer add, min, max or bit operation: a warp's updates of one address are
        # combined into one (``Access.combined``)
        pointee = self.expr_quiet(target).type
        self.cursor.combining = (
            short in costs.REDUCIBLE_ATOMICS
            and not (pointee.deref() if pointee.pointer else pointee).is_float
        )
        try:
            return self.atomic_update(short, target, vals)
        finally:
            self.cursor.combining = False

    def atomic_update(self, short: str, target: Node, vals: list[Val]) -> Val:
        if target.type == "pointer_expression":
            inner = target.child_by_field_name("argument")
            op = target.child_by_field_name("operator")
            if inner is not None and op is not None and op.type == "&":
                if inner.type == "subscript_expression":
                    lv = self.memory(inner, "atomic")
                elif inner.type == "field_expression":
                    lv = self.field(inner, "atomic")
                else:
                    lv = self.expr(inner)
                    self.record(
                        lv.buffer or text(inner),
                        lv.space or "global",
                        lv.type.size,
                        "atomic",
                        lv.deps,
                        text(inner),
                    )
            else:
                lv = self.deref(target, "atomic")
        else:
            pv = self.expr(target)
            t = pv.type.deref() if pv.type.pointer else pv.type
            self.record(
                pv.buffer or text(target),
                pv.space or "global",
                t.size,
                "atomic",
                pv.deps,
                "*" + text(target),
            )
            lv = Val(t, pv.deps)
        t = lv.type if lv.type.kind != "unknown" else (vals[0].type if vals else INT)
        if short.startswith("atomicAdd") and t.is_float:
            # a float add on shared memory is a compare-and-swap loop around an add; on
            # global memory one ``red`` instruction run in L2: Nsight Compute counts no FLOP
            if lv.space == "shared":
                self.add_flop(t, 1.0)
        else:
            self.add_int(1.0)
        return Val(t, lv.deps | self.each_update())  # the value before the update

    def call_object(
        self,
        fn: Node,
        short: str,
        node: Node,
        args: list[Node],
        receiver: tuple[str, Val] | None,
        kind: str,
    ) -> Val | None:
        """The call of a callable object (:meth:`callable_object`) walked, or None when
        ``fn`` names none (or the walk is too deep)."""
        if len(self.cursor.call_stack) >= self.inputs.settings.max_inline_depth:
            return None
        target = self.callable_object(fn, short, node)
        if target is None or target[0] in self.cursor.call_stack:
            return None
        closure = target[1].type == LAMBDA
        if fn.type == "identifier" and not closure:
            # an object's ``operator()`` (``a(i, j)`` of a view): on its members
            receiver = (short, self.identifier(short, fn))
        return self.inline(
            target[0], target[1], args, closure=closure, receiver=receiver, kind=kind
        )

    def pack_lengths(self, params: list[tuple[str, str]], args: list[Node]) -> dict[str, Var]:
        """The lengths of the parameter packs a call gives: ``std::integer_sequence<int,
        I...>`` (or ``std::index_sequence<I...>``) given ``std::make_integer_sequence<int,
        N>()`` (``std::make_index_sequence<N>{}``) holds N elements, as ``...I``."""
        out: dict[str, Var] = {}
        for (ptype, _name), arg in zip(params, args, strict=False):
            pack = _SEQUENCE_PACK.search(ptype)
            made = _MADE_SEQUENCE.search(text(arg)) if pack is not None else None
            if pack is None or made is None:
                continue
            length = made.group(1).rsplit(",", 1)[-1].strip()
            var = self.var(length)
            n = evaluate(length, {}) if var is None else var.val
            if n is None:
                n = self.inputs.lookup_host(length)
            if n is not None and n >= 0:
                out[PACK + pack.group(1)] = fixed_constant(float(n))
        return out

    def callable_object(self, fn: Node, short: str, node: Node) -> tuple[str, Node] | None:
        """What a call of something that is not a function runs: a lambda bound to a local
        (``auto f = [&](int j) {...}; f(i)``), or the ``operator()`` of a functor, named by
        its type (``Op()(x)`` with ``Op`` = ``Square``, ``op(x)`` with ``op`` a ``Square``)
        or, for a callable parameter of a template type the launch does not name, the only
        ``operator()`` the file defines; a lambda called where it is written (``const float
        s = [&]() { ... }();``)."""
        if fn.type == LAMBDA:
            return f"lambda (line {fn.start_point[0] + 1})", fn
        if fn.type == "identifier":
            passed = self.inputs.passed_lambdas.get(short)
            if passed is not None and self.var(short) is not None:
                return f"lambda {short} (the launch's)", passed
            lam = _lambda_named(short, node, self.inlining.lambdas)
            if lam is not None:
                # named by its line too: two lambdas may share a name in one kernel
                return f"lambda {short} (line {lam.start_point[0] + 1})", lam
        ops = self.call_operators(node)
        if not ops:
            return None
        type_name = ""
        if fn.type == "call_expression":  # Op()(x): a temporary of type Op
            inner = fn.child_by_field_name("function")
            type_name = text(inner) if inner is not None else ""
        elif fn.type in ("identifier", "template_function"):
            var = self.var(short)
            if var is None:
                return None
            type_name = var.tname or var.type.name
            if not type_name and var.type.kind in ("unknown", "f32") and len(ops) == 1:
                type_name = next(iter(ops))
        else:
            return None
        type_name = self.inputs.aliases.get(type_name, type_name).split("<", 1)[0].strip()
        type_name = type_name.rsplit("::", 1)[-1]
        op = ops.get(type_name)
        return (type_name + "::operator()", op) if op is not None else None

    def call_operators(self, node: Node) -> dict[str, Node]:
        """``operator()`` definitions of the structs and classes of the kernel's file."""
        root = node
        while root.parent is not None:
            root = root.parent
        cached = self.inlining.call_operators.get(root.id)
        if cached is None:
            cached = self.inlining.call_operators[root.id] = _call_operators(root)
        return cached

    def template_constants(self, fnode: Node, targs: Node | None) -> dict[str, float]:
        """Values of a callee's template parameters that the call's template arguments (or
        the parameters' defaults) give as constants, evaluated in the caller's scope."""
        out: dict[str, float] = {}
        given = [c for c in targs.named_children if c.type != "comment"] if targs else []
        for i, (pname, default) in enumerate(template_params(fnode)):
            if i < len(given):
                node = given[i]
                v = (
                    self.identifier(text(node), node)
                    if node.type == "type_descriptor" and text(node).isidentifier()
                    else self.expr_quiet(node)
                )
                value = v.val if not v.deps else None
            else:
                value = _number(default) if default else None
            if value is not None:
                out[pname] = value
        return out

    def deduced_lengths(
        self, fnode: Node, vals: list[Val], given: dict[str, float]
    ) -> dict[str, float]:
        """Template parameters a call deduces from the lengths of the per-thread arrays it
        passes to parameters ``T (&items)[N]`` (``float vals[4]; load(p, vals)``: N = 4),
        the function's own or, for a method, its class template's (CUB's ``WarpExchange<T,
        ITEMS_PER_THREAD>::BlockedToStriped(T (&items)[ITEMS_PER_THREAD])``)."""
        out: dict[str, float] = {}
        names = {pname for pname, _default in template_params(fnode)}
        owner = fnode.parent
        while owner is not None and owner.type in (
            "field_declaration_list",
            "template_declaration",
        ):
            owner = owner.parent
        if owner is not None and owner.type in ("class_specifier", "struct_specifier"):
            names |= {pname for pname, _default in template_params(owner)}
        for i, size in array_reference_sizes(fnode).items():
            buffer = vals[i].buffer if i < len(vals) else None
            if size not in names or size in given or not buffer:
                continue
            nbytes = self.tally.local_sizes.get(buffer)
            elem = vals[i].type.deref() if vals[i].type.pointer else vals[i].type
            if nbytes and elem.size > 0:
                out[size] = nbytes / elem.size
        return out

    def inline(
        self,
        name: str,
        fnode: Node,
        args: list[Node],
        closure: bool = False,
        template_args: Node | None = None,
        evaluated: list[Val] | None = None,
        receiver: tuple[str, Val] | None = None,
        kind: str = "load",
    ) -> Val:
        """Walk a device function's (``closure``: a lambda's, which sees the enclosing
        function's variables) body with its parameters bound to the call's arguments and
        its numeric template parameters to the call's template arguments (``f<4, 32>(..)``)
        or their defaults. ``evaluated``: the arguments' values, already walked (the operands
        of an overloaded operator). ``receiver``: the object a method is called on
        (``domain.x(i)``), whose data members the method reads (:meth:`members_of`);
        ``kind``: how the caller uses the reference it returns (:class:`Frame`)."""
        constants = self.template_constants(fnode, template_args) if not closure else {}
        params = function_params(fnode) if not closure else _lambda_params(fnode)
        outputs = output_params(fnode)
        vals = evaluated or [
            self.lvalue(a, "store") if i in outputs and is_lvalue(a) else self.expr(a)
            for i, a in enumerate(args)
        ]
        if not closure:
            constants.update(self.deduced_lengths(fnode, vals, constants))
        scope: dict[str, Var] = {n: fixed_constant(v) for n, v in constants.items()}
        scope.update(self.pack_lengths(params, args))
        for i, (ptype, pname) in enumerate(params):
            if not pname:
                continue
            pt = self.type_of(ptype)
            if i < len(vals):
                v = vals[i]
                if pt.kind == "unknown" and v.type.kind != "unknown":
                    pt = v.type if not pt.pointer else v.type
                if (pt.pointer or "&" in ptype) and v.buffer:
                    scope[pname] = Var(
                        pt if pt.pointer else v.type,
                        v.deps,
                        None,
                        v.space,
                        v.buffer,
                        ptype.count("[]"),
                    )
                elif "&" in ptype and i < len(args):
                    # a reference to the caller's variable: writes go to it
                    src = self.var(text(args[i]))
                    if src is not None:
                        scope[pname] = src
                        continue
                    scope[pname] = Var(pt, v.deps, v.val)
                else:
                    # a copy of the argument: its value and growth across the lanes
                    scope[pname] = Var(pt, v.deps, v.val)
                    scope[pname].slope = v.slope
                    src = self.var(text(args[i])) if i < len(args) else None
                    record = not pt.pointer and pt.name in self.inputs.structs
                    if record and src is not None and src.const and not v.deps:
                        # a copy of a struct the host filled: its fields, as the host set them
                        scope[pname].const = True
                        scope[pname].host_name = src.host_name or text(args[i]).strip()
            else:
                scope[pname] = Var(pt)
            if not pt.pointer:  # ``Param<float> p``: the instance's field types
                instantiate(scope[pname], ptype, self.inputs.structs, self.inputs.struct_templates)
        self.bind_groups(params, args, vals, scope)
        if closure and any(fnode is lam for lam in self.inputs.passed_lambdas.values()):
            # what a lambda the launch passes captures: the host's names, its buffers
            for nm, ty in self.inputs.captured_types.items():
                t = self.type_of(ty)
                buffer = nm if t.pointer else None
                space = "global" if t.pointer else None
                scope.setdefault(nm, Var(t, NOTHING, self.inputs.lookup_host(nm), space, buffer))
        if receiver is not None:
            for member, var in self.members_of(fnode, *receiver).items():
                scope.setdefault(member, var)
        instance = self.own_instance(fnode, receiver)
        if instance is not None:  # a method of ``TxN_t<unsigned char, 16>``: ``Ratio`` is 16
            for member in instance.values:
                number = instance.number(member)
                if number is not None:
                    scope.setdefault(member, fixed_constant(number))
        ret_t = self.type_of(return_type_text(fnode)) if not closure else UNKNOWN
        body = fnode.child_by_field_name("body")
        if body is None:
            return Val(ret_t)
        if name not in self.tally.followed:
            self.tally.followed.append(name)
        # a function met again with the same kind of arguments: reuse its cost per call
        # (a one-statement function, an index helper ``idx(x, y, z + 1)``, is walked again for
        # each value of its arguments: what it returns is an access's index, ``Access.center``)
        values = returned_expression(body) is not None
        key = (
            name,
            tuple(call_signature(v) + ((v.val, v.slope) if values else ()) for v in vals),
            tuple(sorted(constants.items())),
            kind,
            receiver[0] if receiver is not None else "",  # whose members it reads
        )
        n_calls = self.inlining.inline_calls.get(name, 0) + 1
        self.inlining.inline_calls[name] = n_calls
        summary = self.inlining.summaries.get(key)
        if summary is not None and n_calls > self.inputs.settings.inline_full_calls:
            return self.apply_summary(summary)
        w0 = self.cursor.w
        ops0 = list(self.tally.ops)
        acc0 = {k: r.weight for k, r in self.tally.accesses.items()}
        saved_scopes = self.cursor.scopes
        self.cursor.scopes = [*saved_scopes, scope] if closure else [saved_scopes[0], scope]
        self.cursor.call_stack.append(name)
        self.cursor.frames.append(
            Frame(kind=kind, own_space=self.own_space(fnode, receiver), instance=instance)
        )
        saved_line, saved_base = self.cursor.line, self.cursor.line_base
        saved_macro = self.cursor.macro_line
        self.cursor.line_base = self.cursor.line  # book the callee's cost on the call's line
        self.cursor.macro_line = None  # (its loops are on its own lines)
        saved_types = self.bind_local_types(instance.types) if instance is not None else None
        try:
            self.stmt(body)
        finally:
            if saved_types is not None:
                self.restore_local_types(saved_types)
            frame = self.cursor.frames.pop()
            self.cursor.call_stack.pop()
            self.cursor.scopes = saved_scopes
            self.cursor.line, self.cursor.line_base = saved_line, saved_base
            self.cursor.macro_line = saved_macro
        deps = NOTHING
        for r in frame.returns:
            deps = deps | r.deps
        val = frame.returns[0].val if len(frame.returns) == 1 else None
        if ret_t.kind == "unknown" and ret_t.name not in self.inputs.structs and frame.returns:
            ret_t = frame.returns[0].type
        buf = next((r.buffer for r in frame.returns if r.buffer), None)
        space = None
        if ret_t.pointer:  # the memory the returned pointer designates
            space = next((r.space for r in frame.returns if r.space), None)
            if buf is None and space is None:
                space = frame.own_space
        # one return: its range and lane growth too (``return v < lo ? lo : v;``: an index
        # helper keeps the index's)
        one = frame.returns[0] if len(frame.returns) == 1 and not ret_t.pointer else None
        result = Val(
            ret_t,
            deps,
            val,
            buf,
            space,
            rng=one.rng if one is not None else None,
            slope=one.slope if one is not None else None,
        )
        if w0 > 0:
            ops_d = [(a - b) / w0 for a, b in zip(self.tally.ops, ops0, strict=True)]
            acc_d = [
                (k, replace(r), (r.weight - acc0.get(k, 0.0)) / w0)
                for k, r in self.tally.accesses.items()
                if r.weight != acc0.get(k, 0.0)
            ]
            self.inlining.summaries[key] = (ops_d, acc_d, result)
        return result

    def own_space(self, fnode: Node, receiver: tuple[str, Val] | None) -> str | None:
        """Where the object method ``fnode`` runs on lives: "local" for the thread's own
        variable (``VecType a; a.load(p, i)``), its buffer's space for an object in memory;
        a method another method calls unqualified (``vectorized_data()``) runs on its
        caller's object. None: not a method, or not known."""
        if receiver is not None:
            ov = receiver[1]
            if ov.type.pointer or ov.buffer is not None:
                return ov.space or "global"
            return ov.space or "local"
        if method_class(fnode) and len(self.cursor.frames) > 1:
            return self.cursor.frames[-1].own_space
        return None

    def own_instance(
        self, fnode: Node, receiver: tuple[str, Val] | None
    ) -> TemplateInstance | None:
        """The struct template instance method ``fnode`` runs on: its object's declared type
        (``VecType a; a.load(p, i)``), or its caller's for a method another method calls
        unqualified. None: not a method of a template instance."""
        if not method_class(fnode):
            return None
        if receiver is not None:
            held = self.var(receiver[0])
            return self.template_instance(held.tname) if held is not None and held.tname else None
        return self.cursor.frames[-1].instance if len(self.cursor.frames) > 1 else None

    def members_of(self, method: Node, obj: str, ov: Val) -> dict[str, Var]:
        """The data members a method of ``obj``'s class reads by name (``m_x`` of ``Real_t&
        x(Index_t i) { return m_x[i]; }``, called as ``domain.x(i)``): a pointer member is
        the array it points to, named for the member (``domain.m_x``), in the object's
        memory space; a number is what the host set (``domain.m_n``), else unknown."""
        held = self.var(obj)
        # an instantiation's own (``View<double>``: ``T *data`` is a ``double *``)
        owner = held.tname if held is not None and held.tname in self.inputs.structs else ""
        fields = self.inputs.structs.get(owner or method_class(method), {})
        out: dict[str, Var] = {}
        for member, type_text in fields.items():
            t = self.type_of(type_text)
            if t.pointer:
                space = ov.space or "global"
                out[member] = Var(t, ov.deps, None, space, f"{obj}.{member}")
            elif not ov.deps:
                offload = self.inputs.offload or (held is not None and held.const)
                hv = self.inputs.lookup_host(f"{obj}.{member}") if offload else None
                out[member] = Var(t, NOTHING, hv)
        return out

    def apply_summary(self, summary: InlineSummary) -> Val:
        ops_d, acc_d, result = summary
        w = self.cursor.w
        for i, d in enumerate(ops_d):
            self.add(i, d, w)
        guessing = self.cursor.guessing
        for k, template, dw in acc_d:
            rec = self.tally.accesses.get(k)
            if rec is None:
                rec = replace(template, weight=0.0, guessed=0.0)
                self.tally.accesses[k] = rec
            rec.weight += dw * w
            # guessed here, or as much as in the call the summary was made from
            share = template.guessed / template.weight if template.weight > 0 else 0.0
            rec.guessed += dw * w * (1.0 if guessing else share)
        return result

    def expand_macro(
        self,
        name: str,
        m: tuple[tuple[str, ...] | None, str],
        args: list[Node],
        node: Node,
        kind: str = "load",
    ) -> Val:
        """A function-like macro's expansion at ``node``; ``kind``: how the caller uses the
        element it names (``lu(1, i, j, k) = v`` with ``#define lu(c, i, j, k) a_lu[...]``
        stores into a_lu)."""
        params, body = m
        assert params is not None
        stmt_ctx = node.parent is not None and node.parent.type == "expression_statement"
        tree = call_tree(params, body, args, expression=not stmt_ctx)
        if tree is None:
            for a in args:
                self.expr(a)
            return Val(UNKNOWN)
        return self.in_macro(name, tree, expression=not stmt_ctx, kind=kind)

    def in_macro(self, name: str, tree: Node, expression: bool, kind: str = "load") -> Val:
        if name not in self.tally.followed:
            self.tally.followed.append(name)
        self.cursor.call_stack.append(name)
        saved_base, saved_macro = self.cursor.line_base, self.cursor.macro_line
        self.cursor.line_base = self.cursor.line
        if saved_macro is None:
            self.cursor.macro_line = self.cursor.line  # the loops it expands to are on it
        try:
            if expression:
                target = unparenthesized(tree)
                if kind != "load" and target.type in _ELEMENTS:
                    return self.lvalue(target, kind)
                return self.expr(tree)
            self.stmt(tree)
            return Val(VOID)
        finally:
            self.cursor.call_stack.pop()
            self.cursor.line_base, self.cursor.macro_line = saved_base, saved_macro


def assigns_members(method: Node, structs: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether a method assigns a data member of its class (``r = red;``, ``this->r = red``,
    ``++count``)."""
    fields = structs.get(method_class(method), {})
    body = method.child_by_field_name("body")
    stack = [body] if body is not None and fields else []
    while stack:
        n = stack.pop()
        if n.type in ("assignment_expression", "update_expression"):
            target = n.child_by_field_name(
                "left" if n.type == "assignment_expression" else "argument"
            )
            target = unparenthesized(target) if target is not None else None
            if target is not None and target.type == "field_expression":
                obj = target.child_by_field_name("argument")
                member = target.child_by_field_name("field")
                if obj is not None and obj.type == "this" and text(member) in fields:
                    return True
            elif target is not None and target.type == "identifier" and text(target) in fields:
                return True
        stack.extend(n.named_children)
    return False


LAMBDA = "lambda_expression"
# a parameter of a pack's integer sequence type (``std::integer_sequence<int, I...>``,
# ``std::index_sequence<I...>``): the pack's name ...
_SEQUENCE_PACK = re.compile(r"(?:integer|index)_sequence\s*<[^<>]*?(\w+)\s*\.\.\.\s*>")
# ... and the argument making one (``std::make_integer_sequence<int, N>()``): its arguments
_MADE_SEQUENCE = re.compile(r"make_(?:integer|index)_sequence\s*<([^<>]*)>\s*[({]\s*[)}]")
# what an assignment can store into (a macro expanding to one is an element too)
_ELEMENTS = frozenset(
    {"subscript_expression", "field_expression", "pointer_expression", "call_expression"}
)


# a block's lambdas: name -> (where the declaration starts, the lambda), in order
Lambdas = dict[str, list[tuple[int, Node]]]


def _lambda_named(name: str, node: Node, blocks: dict[int, Lambdas]) -> Node | None:
    """The lambda a local ``name`` was initialised with in a block enclosing ``node``
    (``auto name = [..](..) {..};`` before it), if any; ``blocks``: each block's lambdas,
    found once per block."""
    p = node.parent
    while p is not None and p.type != "function_definition":
        if p.type == "compound_statement":
            lambdas = blocks.get(p.id)
            if lambdas is None:
                lambdas = blocks[p.id] = _block_lambdas(p)
            for start, value in lambdas.get(name, ()):
                if start < node.start_byte:
                    return value
        p = p.parent
    return None


def _block_lambdas(block: Node) -> Lambdas:
    out: Lambdas = {}
    for st in block.named_children:
        if st.type != "declaration":
            continue
        for d in st.children_by_field_name("declarator"):
            value = d.child_by_field_name("value")
            if d.type == "init_declarator" and value is not None and value.type == LAMBDA:
                name = declared_name(d.child_by_field_name("declarator"))
                out.setdefault(name, []).append((st.start_byte, value))
    return out


def _lambda_params(lam: Node) -> list[tuple[str, str]]:
    """(type text, name) of a lambda's parameters."""
    decl = next((c for c in lam.named_children if c.type == "lambda_declarator"), None)
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    if plist is None and decl is not None:
        plist = next((c for c in decl.named_children if c.type == "parameter_list"), None)
    out = []
    for p in plist.named_children if plist is not None else []:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        d = p.child_by_field_name("declarator")
        ty = p.child_by_field_name("type")
        out.append(
            ((text(ty) if ty is not None else "") + " " + declarator_stars(d), declared_name(d))
        )
    return out


def _call_operators(root: Node) -> dict[str, Node]:
    """struct/class name -> its ``operator()`` definition, over the whole tree."""
    found: dict[str, Node] = {}
    if b"operator" not in (root.text or b""):
        return found  # most files define none: no walk of the tree
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("struct_specifier", "class_specifier"):
            name = n.child_by_field_name("name")
            body = n.child_by_field_name("body")
            if name is not None and body is not None:
                for m in body.named_children:
                    if m.type == "template_declaration":
                        defs = (c for c in m.named_children if c.type == "function_definition")
                        m = next(defs, m)
                    if m.type == "function_definition" and _is_call_operator(m):
                        found.setdefault(text(name).split("<", 1)[0], m)
        stack.extend(c for c in n.named_children if c.type not in _LEAF_STATEMENTS)
    return found


# statements that hold no struct definitions worth finding (speeds the tree scan)
_LEAF_STATEMENTS = frozenset(["expression_statement", "return_statement", "preproc_def"])


def _is_call_operator(fn: Node) -> bool:
    d = function_declarator(fn)
    name = d.child_by_field_name("declarator") if d is not None else None
    return (
        name is not None
        and name.type == "operator_name"
        and text(name).replace(" ", "") == "operator()"
    )


def output_params(fn: Node) -> frozenset[int]:
    """Positions of a function's non-const lvalue-reference parameters (``float& y``):
    an element of memory bound to one is an output the callee writes (a store, not a
    load)."""
    if fn.type == LAMBDA:
        d = next((c for c in fn.named_children if c.type == "lambda_declarator"), None)
    else:
        d = function_declarator(fn)
    plist = d.child_by_field_name("parameters") if d is not None else None
    out = set()
    params = [
        p
        for p in (plist.named_children if plist is not None else [])
        if p.type in ("parameter_declaration", "optional_parameter_declaration")
    ]
    for i, p in enumerate(params):
        decl = p.child_by_field_name("declarator")
        if decl is None or decl.type != "reference_declarator" or text(decl).startswith("&&"):
            continue
        if any(c.type == "type_qualifier" and text(c) == "const" for c in p.children):
            continue
        out.add(i)
    return frozenset(out)


def is_lvalue(arg: Node) -> bool:
    """An element of memory: ``a[i]``, ``s.f``/``p->f``, ``*p``."""
    if arg.type == "pointer_expression":
        op = arg.child_by_field_name("operator")
        return op is not None and op.type == "*"
    return arg.type in ("subscript_expression", "field_expression")


def math_function(short: str, vals: list[Val]) -> tuple[str | None, str]:
    """``expf`` -> ("exp", "f32"); ``exp`` on a double -> ("exp", "f64"); ``std::exp``..."""
    name = short
    if name.startswith("__nv_"):
        name = name[5:]
    prec = ""
    if name in MATH_NAMES:
        arg_t = widest_type(vals) if vals else DOUBLE
        prec = "f32" if arg_t.kind == "f32" or arg_t.kind == "f16" else "f64"
        if arg_t.kind == "int" or (len(vals) > 1 and any(v.type.kind == "int" for v in vals)):
            # an integer argument makes C++'s overload double (``pow(x, 2)`` of a float x
            # is ``pow(double, double)``: nvcc compiles it in FP64); C's is double anyway
            prec = "f64" if name not in ("min", "max", "abs") else "f32"
        return name, prec
    if name.endswith("f") and name[:-1] in MATH_NAMES:
        return name[:-1], "f32"
    if name.startswith("f") and name[1:] in MATH_NAMES and name in ("fsqrt",):
        return name[1:], "f32"
    if name in ("rsqrtf", "rsqrt", "rcbrt", "rcbrtf", "normf", "norm", "rnorm3df", "rnorm3d"):
        return "rsqrt", "f32" if name.endswith("f") else "f64"
    return None, ""


def conversion_type(short: str, vals: list[Val]) -> DataType:
    if short.startswith(
        (
            "make_float",
            "__int2float",
            "__uint2float",
            "__ll2float",
            "__ull2float",
            "__double2float",
            "__half2float",
            "__low2float",
            "__high2float",
            "__bfloat162float",
        )
    ):
        return FLOAT
    if short.startswith(("make_double", "__int2double")):
        return DOUBLE
    if short.startswith(("__float2int", "__float2uint", "__double2int", "make_int", "make_uint")):
        return INT
    if short.startswith("__shfl") and len(vals) >= 2:
        return vals[1].type
    if short.startswith(("__float2half", "__floats2half")):
        return HALF
    return vals[0].type if vals else UNKNOWN


def return_type_text(fn: Node) -> str:
    t = fn.child_by_field_name("type")
    d = fn.child_by_field_name("declarator")
    stars = ""
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        if d.type == "pointer_declarator":
            stars += "*"
        d = d.child_by_field_name("declarator") or next(
            (c for c in d.named_children if "declarator" in c.type), None
        )
    return text(t) + stars


def _number(src: str) -> float | None:
    """A numeric literal's value (``32``, ``4u``), else None."""
    try:
        return float(src.rstrip("uUlL"))
    except ValueError:
        return None
