"""Calls in the counter: atomics, intrinsics and math functions (costs from ``costs.py``),
OpenMP runtime queries, inlined device functions (with a per-signature cost summary reused
after a few full walks) and expanded macros.
"""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from roofline_lsp.detect.bindings import function_params
from roofline_lsp.estimate import costs
from roofline_lsp.estimate.macro_expansion import macro_tree, substitute_macro
from roofline_lsp.estimate.value_domain import (
    DATA,
    NOTHING,
    Val,
    Var,
    call_signature,
    fold_call,
    widest_type,
)
from roofline_lsp.estimate.walk_groups import GroupWalker
from roofline_lsp.estimate.walk_state import Frame, InlineSummary
from roofline_lsp.syntax.datatypes import DOUBLE, FLOAT, HALF, INT, UNKNOWN, VOID, DataType
from roofline_lsp.syntax.expr import text

MATH_NAMES = set(costs.MATH_F32) | set(costs.MATH_F64)
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


class CallWalker(GroupWalker):
    """Function calls, device-function inlining and macro expansion."""

    def call(self, node: Node) -> Val:
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        args = [c for c in (args_node.named_children if args_node else []) if c.type != "comment"]
        fname = ""
        if fn is not None:
            if fn.type == "template_function":
                fname = text(fn.child_by_field_name("name"))
            elif fn.type == "field_expression":
                fname = text(fn.child_by_field_name("field"))
                obj = fn.child_by_field_name("argument")
                if obj is not None and fname not in ("sync",):
                    self.expr(obj)
            else:
                fname = text(fn)
        short = fname.rsplit("::", 1)[-1].strip()
        group = self.group_call(fn, short, args)
        if group is not None:
            return group
        if short in costs.ATOMICS:
            return self.atomic(short, args)
        if short in OMP_IDS:
            return self.omp_id(short)
        if short in ("tex1Dfetch", "tex1D", "tex2D", "tex3D", "tex2DLayered", "texfetch"):
            vals = [self.expr(a) for a in args]
            deps = NOTHING
            for v in vals[1:]:
                deps = deps | v.deps
            self.record(text(args[0]) if args else "tex", "global", 4, "load", deps, "tex")
            return Val(FLOAT, deps | {DATA})
        if short in ("__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv") and args:
            return (
                self.deref(args[0], "load")
                if args[0].type != "pointer_expression"
                else (self.expr(args[0]))
            )
        if (
            short in ("static_cast", "reinterpret_cast", "const_cast", "bit_cast")
            and fn is not None
        ):
            targs = fn.child_by_field_name("arguments")
            ty = self.type_of(text(targs).strip("<>")) if targs is not None else UNKNOWN
            v = self.expr(args[0]) if args else Val(ty)
            return Val(ty, v.deps, v.val, v.buffer, v.space)
        if short in ("float", "double", "int", "unsigned", "long", "half", "size_t") and args:
            v = self.expr(args[0])
            ty = self.type_of(short)
            return Val(
                ty, v.deps, v.val if ty.kind != "int" or v.val is None else float(int(v.val))
            )
        # user functions first (they may shadow library names)
        fnode = self.inputs.functions.get(short)
        if (
            fnode is not None
            and short not in self.cursor.call_stack
            and (len(self.cursor.call_stack) < self.inputs.settings.max_inline_depth)
        ):
            return self.inline(short, fnode, args)
        m = self.inputs.macros.get(short)
        if m is not None and m[0] is not None and short not in self.cursor.call_stack:
            return self.expand_macro(short, m, args, node)
        vals = [self.expr(a) for a in args]
        deps = NOTHING
        for v in vals:
            deps = deps | v.deps
        w = self.hoisted_weight(deps)
        if short in costs.FREE_CALLS or short.startswith(("make_", "__shfl", "__float2", "__int2")):
            ty = conversion_type(short, vals)
            return Val(ty, deps, None)
        if short in costs.FAST_INTRINSICS:
            f, i = costs.FAST_INTRINSICS[short]
            ty = DOUBLE if short.startswith(("__d", "__fma_rn")) else FLOAT
            self.add_flop(ty, f, w)
            self.add_int(i, w)
            return Val(ty, deps)
        if short in costs.HALF_INTRINSICS:
            self.add_flop(HALF, costs.HALF_INTRINSICS[short], w)
            return Val(HALF, deps)
        if short in costs.INT_INTRINSICS:
            if short in ("min", "max", "abs") and vals and any(v.type.is_float for v in vals):
                ty = widest_type(vals)
                return Val(ty, deps, fold_call(short, vals))
            ty = widest_type(vals) if vals else INT
            val = fold_call(short, vals)
            if val is None:
                self.add_int(costs.INT_INTRINSICS[short] * (2 if ty.size > 4 else 1), w)
            return Val(ty if ty.kind == "int" else INT, deps, val)
        base, prec = math_function(short, vals)
        if base is not None:
            table = costs.MATH_F64 if prec == "f64" else costs.MATH_F32
            f, i = table[base]
            ty = DOUBLE if prec == "f64" else FLOAT
            val = fold_call(base, vals)
            if val is None or deps:
                self.add_flop(ty, f, w)
                self.add_int(i, w)
            return Val(ty, deps, val)
        # unknown function: a small cost
        self.add_int(2.0, w)
        return Val(widest_type(vals) if vals else UNKNOWN, deps | {DATA})

    def omp_id(self, short: str) -> Val:
        if short == "omp_get_thread_num":
            n = self.par.team_threads
            if n <= 1:
                return Val(INT, NOTHING, 0.0)
            return Val(INT, frozenset({"tx"}), (n - 1) / 2, rng=(0.0, n - 1))
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
            self.add_flop(t, 1.0)
        else:
            self.add_int(1.0)
        return Val(t, lv.deps | {DATA})

    def inline(self, name: str, fnode: Node, args: list[Node]) -> Val:
        params = function_params(fnode)
        vals = [self.expr(a) for a in args]
        scope: dict[str, Var] = {}
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
                    scope[pname] = Var(pt, v.deps, v.val)
            else:
                scope[pname] = Var(pt)
        self.bind_groups(params, args, vals, scope)
        ret_t = self.type_of(return_type_text(fnode))
        body = fnode.child_by_field_name("body")
        if body is None:
            return Val(ret_t)
        if name not in self.tally.followed:
            self.tally.followed.append(name)
        # a function met again with the same kind of arguments: reuse its cost per call
        key = (name, tuple(call_signature(v) for v in vals))
        n_calls = self.inlining.inline_calls.get(name, 0) + 1
        self.inlining.inline_calls[name] = n_calls
        summary = self.inlining.summaries.get(key)
        if summary is not None and n_calls > self.inputs.settings.inline_full_calls:
            return self.apply_summary(summary)
        w0 = self.cursor.w
        ops0 = list(self.tally.ops)
        acc0 = {k: r.weight for k, r in self.tally.accesses.items()}
        saved_scopes = self.cursor.scopes
        self.cursor.scopes = [saved_scopes[0], scope]
        self.cursor.call_stack.append(name)
        self.cursor.frames.append(Frame())
        saved_line, saved_base = self.cursor.line, self.cursor.line_base
        self.cursor.line_base = self.cursor.line  # book the callee's cost on the call's line
        try:
            self.stmt(body)
        finally:
            frame = self.cursor.frames.pop()
            self.cursor.call_stack.pop()
            self.cursor.scopes = saved_scopes
            self.cursor.line, self.cursor.line_base = saved_line, saved_base
        deps = NOTHING
        for r in frame.returns:
            deps = deps | r.deps
        val = frame.returns[0].val if len(frame.returns) == 1 else None
        if ret_t.kind == "unknown" and frame.returns:
            ret_t = frame.returns[0].type
        buf = next((r.buffer for r in frame.returns if r.buffer), None)
        result = Val(ret_t, deps, val, buf)
        if w0 > 0:
            ops_d = [(a - b) / w0 for a, b in zip(self.tally.ops, ops0, strict=True)]
            acc_d = [
                (k, replace(r), (r.weight - acc0.get(k, 0.0)) / w0)
                for k, r in self.tally.accesses.items()
                if r.weight != acc0.get(k, 0.0)
            ]
            self.inlining.summaries[key] = (ops_d, acc_d, result)
        return result

    def apply_summary(self, summary: InlineSummary) -> Val:
        ops_d, acc_d, result = summary
        w = self.cursor.w
        for i, d in enumerate(ops_d):
            self.add(i, d, w)
        for k, template, dw in acc_d:
            rec = self.tally.accesses.get(k)
            if rec is None:
                rec = replace(template, weight=0.0)
                self.tally.accesses[k] = rec
            rec.weight += dw * w
        return result

    def expand_macro(
        self, name: str, m: tuple[tuple[str, ...] | None, str], args: list[Node], node: Node
    ) -> Val:
        params, body = m
        assert params is not None
        arg_texts = [text(a) for a in args]
        expanded = substitute_macro(body, params, arg_texts)
        stmt_ctx = node.parent is not None and node.parent.type == "expression_statement"
        tree = macro_tree(expanded, expression=not stmt_ctx)
        if tree is None:
            for a in args:
                self.expr(a)
            return Val(UNKNOWN)
        return self.in_macro(name, tree, expression=not stmt_ctx)

    def in_macro(self, name: str, tree: Node, expression: bool) -> Val:
        if name not in self.tally.followed:
            self.tally.followed.append(name)
        self.cursor.call_stack.append(name)
        saved_base = self.cursor.line_base
        self.cursor.line_base = self.cursor.line
        try:
            if expression:
                return self.expr(tree)
            self.stmt(tree)
            return Val(VOID)
        finally:
            self.cursor.call_stack.pop()
            self.cursor.line_base = saved_base


def math_function(short: str, vals: list[Val]) -> tuple[str | None, str]:
    """``expf`` -> ("exp", "f32"); ``exp`` on a double -> ("exp", "f64"); ``std::exp``..."""
    name = short
    if name.startswith("__nv_"):
        name = name[5:]
    prec = ""
    if name in MATH_NAMES:
        arg_t = widest_type(vals) if vals else DOUBLE
        prec = "f32" if arg_t.kind == "f32" or arg_t.kind == "f16" else "f64"
        if arg_t.kind == "int":
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
    if short.startswith(("make_float", "__int2float", "__uint2float", "__half2float")):
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
