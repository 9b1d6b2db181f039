"""Expressions of the counter: literals, identifiers, arithmetic (FLOPs by precision,
integer instructions), assignments and increments.
"""

from __future__ import annotations

import math
import re

from tree_sitter import Node

from roofline_lsp.compiler.instruction_mix import EMPTY, asm_mix
from roofline_lsp.estimate import costs
from roofline_lsp.estimate.macro_expansion import macro_tree
from roofline_lsp.estimate.value_domain import (
    COMPARISONS,
    DATA,
    NOTHING,
    Val,
    Var,
    fixed_constant,
    float_slope,
    fold_binary,
    held_test,
    host_constant,
    is_pow2,
    lane_slope,
    slope_of,
    value_range,
)
from roofline_lsp.estimate.walk_references import ReferenceWalker
from roofline_lsp.estimate.walk_state import PACK, UNFOLLOWED
from roofline_lsp.syntax.datatypes import (
    BOOL,
    COMPLEX,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    UNKNOWN,
    VOID,
    DataType,
    exact_in_float,
    promote,
)
from roofline_lsp.syntax.expr import (
    has_effects,
    identifiers,
    is_float_literal,
    literal,
    reads_memory,
    text,
    unparenthesized,
)

# <math.h>, <float.h> and <limits.h> constants (the headers are not read): value and C type
# (``M_PI`` is a double, so ``x * M_PI`` of a float x runs in double)
_STANDARD_CONSTANTS: dict[str, tuple[float, DataType]] = {
    "M_PI": (math.pi, DOUBLE),
    "M_PI_2": (math.pi / 2, DOUBLE),
    "M_PI_4": (math.pi / 4, DOUBLE),
    "M_1_PI": (1 / math.pi, DOUBLE),
    "M_2_PI": (2 / math.pi, DOUBLE),
    "M_2_SQRTPI": (2 / math.sqrt(math.pi), DOUBLE),
    "M_E": (math.e, DOUBLE),
    "M_LOG2E": (math.log2(math.e), DOUBLE),
    "M_LOG10E": (math.log10(math.e), DOUBLE),
    "M_LN2": (math.log(2), DOUBLE),
    "M_LN10": (math.log(10), DOUBLE),
    "M_SQRT2": (math.sqrt(2), DOUBLE),
    "M_SQRT1_2": (math.sqrt(0.5), DOUBLE),
    "INFINITY": (math.inf, FLOAT),
    "HUGE_VALF": (math.inf, FLOAT),
    "HUGE_VAL": (math.inf, DOUBLE),
    "FLT_MAX": (3.4028234663852886e38, FLOAT),
    "FLT_MIN": (1.1754943508222875e-38, FLOAT),
    "FLT_EPSILON": (1.1920928955078125e-07, FLOAT),
    "DBL_MAX": (1.7976931348623157e308, DOUBLE),
    "DBL_MIN": (2.2250738585072014e-308, DOUBLE),
    "DBL_EPSILON": (2.220446049250313e-16, DOUBLE),
    "INT_MAX": (2147483647.0, INT),
    "INT_MIN": (-2147483648.0, INT),
    "UINT_MAX": (4294967295.0, INT),
    "LLONG_MAX": (9.223372036854776e18, LONG),
    "ULLONG_MAX": (1.8446744073709552e19, LONG),
}

# double operations the compiler computes in float when their result goes straight into one
_SHRINKABLE = frozenset({"+", "-", "*", "/"})


# a PTX load or store in an inline ``asm`` template and the operand holding its address
_ASM_MEMORY = re.compile(r"\b(ld|ldu|st)((?:\.[\w:]+)*)\s+[^;]*?\[\s*%(\d+)")
# ... of a space other than global memory (generic addresses count as global)
_ASM_OTHER_SPACES = re.compile(r"\.(?:shared|local|const|param|tex)\b")
# an address written as a buffer plus an offset
_BASE_PLUS = re.compile(r"\s*([A-Za-z_]\w*)\s*\+\s*(.+?)\s*", re.S)
# the output operands of an ``asm`` statement that name an element of memory
_STORED = frozenset({"subscript_expression", "field_expression", "pointer_expression"})


def _string_value(node: Node) -> str:
    """The characters of a string literal or of adjacent ones (``"a;\\n\\t" "b;"``), each
    escape sequence taken as a line break (what separates an asm template's instructions)."""
    out: list[str] = []
    for lit in [node] if node.type == "string_literal" else node.named_children:
        for part in lit.named_children:
            out.append(text(part) if part.type == "string_content" else "\n")
    return "".join(out)


# the most elements a pack expansion is walked for (an integer sequence's length)
MAX_PACK = 256
# a fold expression's punctuation, not its operator
_FOLD_PUNCT = frozenset({"(", ")", "..."})


class ExpressionWalker(ReferenceWalker):
    """Value and cost of expressions."""

    def expr(self, node: Node) -> Val:
        self.cursor.nodes += 1
        t = node.type
        if t == "identifier":
            return self.identifier(text(node), node)
        if t == "number_literal":
            k = is_float_literal(node)
            ty = FLOAT if k == "f32" else DOUBLE if k == "f64" else INT
            return Val(ty, NOTHING, literal(node))
        if t == "binary_expression":
            return self.binary(node)
        if t == "assignment_expression":
            return self.assignment(node)
        if t == "subscript_expression":
            return self.memory(node, "load")
        if t == "field_expression":
            return self.field(node, "load")
        if t == "call_expression":
            return self.call(node)
        if t == "parenthesized_expression":
            last = Val(VOID)
            for c in node.named_children:
                last = (
                    self.statement_expression(c) if c.type == "compound_statement" else self.expr(c)
                )
            return last
        if t == "update_expression":
            return self.update(node)
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            a = self.expr(node.child_by_field_name("argument") or node)
            o = op.type if op is not None else ""
            if o == "!":
                return Val(BOOL, a.deps, None if a.val is None else float(not a.val))
            if o == "~":
                self.add_int(costs.INT_OP, self.hoisted_weight(a.deps))
                return Val(a.type, a.deps, None if a.val is None else float(~int(a.val)))
            if o == "-":
                if a.type.kind == "int" and a.val is None:
                    self.add_int(costs.INT_OP, self.hoisted_weight(a.deps))
                s = lane_slope(a, self.par.lane)
                return Val(
                    a.type,
                    a.deps,
                    None if a.val is None else -a.val,
                    a.buffer,
                    a.space,
                    slope=None if s is None else -s,
                )
            return a
        if t == "pointer_expression":
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            if arg is None:
                return Val(UNKNOWN)
            if op is not None and op.type == "&":
                while arg.type == "parenthesized_expression" and arg.named_child_count == 1:
                    arg = arg.named_children[0]  # &(a[i]) is &a[i]
                if arg.type == "subscript_expression":
                    return self.memory(arg, "address")
                a = self.expr(arg) if arg.type != "identifier" else self.identifier(text(arg), arg)
                space = a.space
                if space is None and a.buffer is None and not a.type.pointer:
                    # the address of the thread's own variable (``rand(&seed)``,
                    # ``sincos(x, &s, &c)``, ``fe_add(&h, &u)``): reads and writes through it
                    # are the thread's own, not global memory
                    space = "local"
                return Val(a.type.pointer_to(), a.deps, None, a.buffer or text(arg), space)
            return self.deref(arg, "load")
        if t == "conditional_expression":
            cond = node.child_by_field_name("condition")
            cv = self.expr(cond) if cond is not None else Val(BOOL)
            p = self.probability(cond) if cond is not None else 0.5
            saved = self.cursor.w
            self.cursor.w = saved * (p if p > 0 else 0.0)
            a = self.expr(node.child_by_field_name("consequence") or node)
            self.cursor.w = saved * (1 - p)
            b = self.expr(node.child_by_field_name("alternative") or node)
            self.cursor.w = saved
            ty = promote(a.type, b.type)
            val = a.val if cv.val is not None and cv.val and not cv.deps else None
            if cv.val is not None and not cv.val and not cv.deps:
                val = b.val
            deps = a.deps | b.deps | cv.deps
            rng = None
            if (
                self.chosen_per_block(cv.deps)
                and DATA not in deps
                and a.val is not None
                and b.val is not None
            ):
                # chosen per block (``g == last ? n : start + size``: the last block takes
                # the remainder): the value most blocks take
                val = a.val if p > 0.5 else b.val if p < 0.5 else (a.val + b.val) / 2
                ra, rb = a.rng or (a.val, a.val), b.rng or (b.val, b.val)
                rng = (min(ra[0], rb[0]), max(ra[1], rb[1]))
            # the lane slope of the side taken (``hp ? fmaxf(x * fx, 0.f) : x * fx``): the
            # known condition's, else the slope both sides share
            sa, sb = lane_slope(a, self.par.lane), lane_slope(b, self.par.lane)
            if cv.val is not None and not cv.deps:
                slope = sa if cv.val else sb
            elif bounds := _clamp_bounds(node):
                # a clamp (``min`` as a macro, ``a < b ? a : b``; ``v < lo ? lo : (v > hi ?
                # hi : v)``): a bound the lanes share, taken at the edge, leaves the other
                # side's growth
                sides = {"consequence": (sa, sb), "alternative": (sb, sa)}
                slope = next((o for sh, o in (sides[b] for b in bounds) if sh == 0.0), None)
            else:
                slope = sa if sa == sb and self.par.lane not in cv.deps else None
            return Val(ty, deps, val, a.buffer or b.buffer, a.space or b.space, rng, slope=slope)
        if t == "cast_expression":
            misread = _array_cast_misread(node)
            if misread is not None:
                saved_base = self.cursor.line_base
                self.cursor.line_base = self.cursor.line
                try:
                    return self.expr(misread)
                finally:
                    self.cursor.line_base = saved_base
            ty = self.type_of(text(node.child_by_field_name("type")))
            return self.cast(ty, node.child_by_field_name("value") or node)
        if t == "sizeof_expression":
            return Val(LONG, NOTHING, self.size_of(node))
        if t in ("true", "false"):
            return Val(BOOL, NOTHING, float(t == "true"))
        if t in ("null", "nullptr"):
            return Val(INT, NOTHING, 0.0)
        if t == "comma_expression":
            self.expr(node.child_by_field_name("left") or node)
            return self.expr(node.child_by_field_name("right") or node)
        if t == "qualified_identifier":
            hv = self.inputs.lookup_host(text(node).replace(" ", ""))  # `x128::size`
            if hv is not None:
                return host_constant(hv)
            owner, _, name = text(node).rpartition("::")
            inst = self.template_instance(owner) if owner else None
            v = inst.number(name) if inst is not None else None
            if v is not None:  # ``VecType::Ratio``
                return host_constant(v)
            return self.identifier(name, node)
        if t in ("initializer_list", "argument_list"):
            last = Val(VOID)
            for c in node.named_children:
                last = self.expr(c)
            return last
        if t in ("char_literal", "string_literal", "concatenated_string", "raw_string_literal"):
            return Val(INT, NOTHING, None)
        if t == "template_function":
            return self.identifier(text(node.child_by_field_name("name")), node)
        if t in ("new_expression", "delete_expression", "lambda_expression", "this"):
            return Val(UNKNOWN)
        if t == "compound_literal_expression":
            vn = node.child_by_field_name("value")
            if vn is not None:
                self.expr(vn)
            return Val(self.type_of(text(node.child_by_field_name("type"))))
        if t == "gnu_asm_expression":
            return self.inline_asm(node)
        if t in ("fold_expression", "parameter_pack_expansion"):
            return self.pack_expansion(node)
        if t == "condition_clause":
            vn = node.child_by_field_name("value")
            return self.expr(vn) if vn is not None else Val(BOOL)
        last = Val(UNKNOWN)
        for c in node.named_children:
            last = self.expr(c)
        return last

    def pack_expansion(self, node: Node) -> Val:
        """A pack expansion, ``{x[i + I]...}`` or a fold ``(x[i + I] + ...)``: its pattern
        once per element of a pack of known size (a ``std::integer_sequence<int, I...>``
        parameter given ``std::make_integer_sequence<int, 4>()``: ``inline``), the pack's
        name 0, 1, ... in turn, and a fold's operator between the elements (and its
        initial value). A pack of no known size: its pattern once."""
        parts = [c for c in node.named_children if c.type != "comment"]
        sized = [
            (c, nm, size)
            for c in parts
            for nm in identifiers(c)
            if (size := self.var(PACK + nm)) is not None and size.val is not None
        ]
        if not sized:
            last = Val(UNKNOWN)
            for c in parts:
                last = self.expr(c)
            return last
        pattern, pack, size = sized[0]
        n = int(min(size.val or 0, MAX_PACK))
        values: list[Val] = []
        outer = self.cursor.pack_element
        for k in range(n):
            self.cursor.scopes.append({pack: fixed_constant(float(k))})
            self.cursor.pack_element = f"{outer}#{pack}={k}"
            try:
                values.append(self.expr(pattern))
            finally:
                self.cursor.scopes.pop()
                self.cursor.pack_element = outer
        for c in parts:
            if c is not pattern:  # a fold's initial value
                values.append(self.expr(c))
        deps = NOTHING
        for v in values:
            deps = deps | v.deps
        ty = values[0].type if values else UNKNOWN
        op = next(
            (c.type for c in node.children if not c.is_named and c.type not in _FOLD_PUNCT), ""
        )
        joins = max(len(values) - 1, 0) if node.type == "fold_expression" else 0
        if joins and op not in ("&&", "||", ","):
            w = self.hoisted_weight(deps)
            if ty.is_float and op in ("+", "-", "*", "/"):
                self.add_flop(ty, float(joins), w)
            else:
                self.add_int(costs.INT_OP * joins, w)
        return Val(BOOL if op in ("&&", "||") else ty, deps)

    def inline_asm(self, node: Node) -> Val:
        """An inline PTX ``asm`` statement: the FLOPs and integer instructions of the
        instructions its template holds (``instruction_mix.asm_mix``); its input operands are
        read, and an output operand naming an element is written."""
        code = next(
            (c for c in node.named_children if c.type in ("string_literal", "concatenated_string")),
            None,
        )
        template = _string_value(code) if code is not None else ""
        mix = asm_mix(template) if code is not None else EMPTY
        for idx, n in enumerate((mix.flops_fp64, mix.flops_fp32, mix.flops_fp16, mix.int_ops)):
            self.add(idx, float(n))
        numbered: list[Node] = []  # the operands by number: the outputs', then the inputs'
        for operands in node.named_children:
            for op in operands.named_children:
                value = op.named_children[-1] if op.named_children else None
                if value is None or value.type == "string_literal":
                    continue
                if operands.type == "gnu_asm_input_operand_list":
                    numbered.append(value)
                    self.expr(value)
                elif operands.type == "gnu_asm_output_operand_list":
                    numbered.append(value)
                    if value.type in _STORED:
                        self.lvalue(value, "store")
        # a load or store of global (or generic) memory at an operand's address
        # (``ld.global.nc.f32 %0, [%1];`` with ``"l"(in + i)``): an access through it
        for m in _ASM_MEMORY.finditer(template):
            op_index = int(m.group(3))
            if op_index >= len(numbered) or _ASM_OTHER_SPACES.search(m.group(2)):
                continue
            # read as an element, ``in[4 * i]`` for ``in + 4 * i`` (its index grouped with
            # the buffer's others), else ``(ptr)[0]``: a vector load's lanes a vector apart
            # (``ld.global.v4.f32 {...}, [%4]``) move their sectors
            ptr = numbered[op_index]
            element_text = f"({text(ptr)})[0]"
            based = _BASE_PLUS.fullmatch(text(ptr))
            if based is not None:
                base = self.var(based[1])
                if base is not None and base.type.pointer:
                    element_text = f"{based[1]}[{based[2]}]"
            tree = macro_tree(element_text, expression=True)
            element = unparenthesized(tree) if tree is not None else None
            kind = "store" if m.group(1) == "st" else "load"
            if element is None or element.type != "subscript_expression":
                self.through_pointer(ptr, kind)
            elif kind == "store":
                self.lvalue(element, "store")
            else:
                self.expr(element)
        return Val(INT)

    def size_of(self, node: Node) -> float:
        """``sizeof``'s bytes: a type's (``float[16]``: 64), a variable's (a whole array:
        ``sizeof(tmp) / sizeof(tmp[0])`` counts its elements), an expression's type
        (``sizeof(tmp[0])``, unevaluated: no access is booked); 4 when nothing says."""
        tn = node.child_by_field_name("type")
        if tn is not None:
            tt = text(tn)
            n = 1.0
            for dim in re.findall(r"\[([^\]]*)\]", tt):
                k = self.lookup_num(dim.strip()) if dim.strip() else None
                n *= k if k else 1.0
            return n * self.type_bytes(self.type_of(re.sub(r"\[[^\]]*\]", "", tt)))
        vn = node.child_by_field_name("value")
        while vn is not None and vn.type == "parenthesized_expression" and vn.named_children:
            vn = vn.named_children[0]
        if vn is None:
            return 4.0
        if vn.type == "identifier":
            nm = text(vn)
            var = self.var(nm)
            if var is None:
                # `sizeof(TYPE)` with `#define TYPE unsigned long`, or of a struct the
                # program declares, parses as an expression
                ty = self.type_of(nm)
                known = ty.kind != "unknown" or ty.name in self.inputs.struct_sizes
                return self.type_bytes(ty) if known else 4.0
            if var.arrdims:
                elem = var.type.deref(var.arrdims)
                total = self.tally.local_sizes.get(nm)
                count = self.inputs.extents.get(nm)
                if total is None and count and math.isfinite(count):
                    total = count * self.type_bytes(elem)
                if total:
                    return total
            return self.type_bytes(var.type)
        ty = self.expr_quiet(vn).type
        return self.type_bytes(ty) if ty.kind != "unknown" or ty.pointer else 4.0

    def cast(self, ty: DataType, value: Node) -> Val:
        """``(ty) value``: the value converted (an integer truncated)."""
        v = self.stored_as(value, ty)
        val = v.val
        if val is not None and ty.kind == "int" and not ty.pointer and not v.deps:
            val = float(math.trunc(val))
        return self.retyped(v, ty, val)

    def identifier(self, name: str, node: Node) -> Val:
        v = self.var(name)
        if v is not None:
            if v.buffer is not None:
                # (a team-shared scalar, ``int begin_A`` of a teams region: the range the
                # threads' common assignment gave it)
                rng = v.rng if not v.type.pointer and not v.arrdims else None
                return Val(v.type, v.deps, v.val, v.buffer, v.space, rng=rng, slope=v.slope)
            return Val(v.type, v.deps, v.val, rng=v.rng, slope=v.slope)
        if name == "warpSize":
            return Val(INT, NOTHING, 32.0)
        hv = self.inputs.lookup_host(name)
        m = self.inputs.macros.get(name)
        if hv is not None:
            # ``#define EPS 1e-3`` and ``const double dt = 0.1`` are doubles, ``#define TWO
            # 2.0f`` a float, as written (not as their values look)
            if m is not None and m[0] is None:
                typed = _literal_type(m[1])
            else:
                typed = self.inputs.constant_types.get(name)
            return Val(typed, NOTHING, hv) if typed is not None else host_constant(hv)
        if m is not None and m[0] is None and name not in self.cursor.call_stack:
            tree = macro_tree(m[1], expression=True)
            if tree is not None:
                return self.in_macro(name, tree, expression=True)
        std = _STANDARD_CONSTANTS.get(name)
        if std is not None:  # ``M_PI``, ``FLT_MAX``: the C library's, of their C types
            return Val(std[1], NOTHING, std[0])
        return Val(UNKNOWN, frozenset({DATA, UNFOLLOWED}) if not name.isupper() else NOTHING)

    def statement_expression(self, block: Node) -> Val:
        """GNU ``({ int _x = (a); int _y = (b); _x < _y ? _x : _y; })`` (a ``min`` macro of
        generated code): its statements run in a scope of their own, and the value is the
        last expression statement's."""
        self.cursor.scopes.append({})
        try:
            last = Val(VOID)
            for st in block.named_children:
                if st.type == "expression_statement" and st.named_children:
                    last = self.expr(st.named_children[0])
                else:
                    self.stmt(st)
                    last = Val(VOID)
            return last
        finally:
            self.cursor.scopes.pop()

    def binary(self, node: Node) -> Val:
        op_node = node.child_by_field_name("operator")
        op = op_node.type if op_node is not None else ""
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None:
            return Val(UNKNOWN)
        reread = self.shift_comparison(node) if op == ">" else None
        if reread is not None:  # ``j < n >> 3``
            (left, right), op = reread, "<"
        if op in ("&&", "||"):
            a = self.expr(left)
            p = self.probability(left)
            saved = self.cursor.w
            self.cursor.w = saved * (p if op == "&&" else 1 - p)
            b = self.expr(right)
            self.cursor.w = saved
            return Val(BOOL, a.deps | b.deps, fold_binary(op, a.val, b.val, a.deps | b.deps))
        a = self.expr(left)
        b = self.expr(right)
        if _user_type(a.type) or _user_type(b.type):
            called = self.overloaded(op, [left, right], [a, b])
            if called is not None:
                return called
        deps = a.deps | b.deps
        val = fold_binary(op, a.val, b.val, deps, integer=a.type.kind == "int" == b.type.kind)
        if val is None and op == "%" and deps and DATA not in deps and not b.deps:
            # a thread-dependent remainder (``idx % T``): the mean of its range, the values
            # spread evenly over it
            rng = value_range(op, a, b)
            val = (rng[0] + rng[1]) / 2 if rng is not None else None
        w = self.hoisted_weight(deps)
        if op in COMPARISONS:
            ty = promote(a.type, b.type)
            if (ty.kind in ("int", "bool", "unknown") or ty.pointer) and val is None:
                self.add_int(costs.INT_OP * (2 if ty.size > 4 else 1), w)
            return Val(BOOL, deps, val)
        slope = slope_of(op, a, b, self.par.lane)
        if a.type.pointer and op in ("+", "-") and not b.type.pointer:
            if val is None:
                self.add_int(2.0, w)
            return Val(a.type, deps, None, a.buffer, a.space, slope=slope)
        if b.type.pointer and op == "+":
            self.add_int(2.0, w)
            return Val(b.type, deps, None, b.buffer, b.space, slope=slope)
        if a.type.pointer and b.type.pointer and op == "-":
            # elements between two pointers (``p - x``): a 64-bit subtraction and a shift by
            # the element's size, an integer whatever the elements are
            if val is None:
                self.add_int(2.0, w)
            return Val(LONG, deps, val, slope=slope)
        ty = promote(a.type, b.type)
        if val is not None and not deps:
            return Val(ty, deps, val)
        if (
            ty.kind == "f64"
            and node.id in self.cursor.narrowed
            and op in _SHRINKABLE
            and self.float_operand(left, a)
            and self.float_operand(right, b)
        ):
            ty = FLOAT  # ``b[i] = a[i] * 2.0``: one FP32 multiply (``stored_as``)
        if ty.name == COMPLEX and op in ("*", "/") and a.type.lanes == b.type.lanes == 2:
            # a product (quotient) of two complex values, not two lane-wise ones
            scalar = ty.lane()
            if op == "*":
                self.add_flop(scalar, costs.COMPLEX_PRODUCT, w)
            else:
                self.add_flop(scalar, costs.COMPLEX_QUOTIENT.get(ty.kind, 24.0), w)
            return Val(ty, deps)
        if ty.is_float:
            if op in ("+", "-", "*"):
                self.add_flop(ty, 1.0, w)
            elif op == "/":
                if b.val is not None and is_pow2(b.val):
                    self.add_flop(ty, 1.0, w)
                elif not self.computed_before(node, "div"):
                    self.add_math(ty, "div", w, side=a.val != 1.0)
            elif op == "%":
                self.add_math(ty, "fmod", w)
            return Val(ty, deps, val, slope=float_slope(op, a, b, self.par.lane))
        if ty.kind in ("int", "bool", "unknown"):
            # no integer work: a constant (folded), a value of a type the model cannot
            # resolve (a typedef from a missing header, an unbound template parameter: as
            # likely floating-point); a value the same for every thread and trip (no
            # ``deps``) costs at its first use only
            free = (
                (val is not None and not deps)
                or ty.kind == "unknown"
                or node.id == self.cursor.offset_index
            )
            if not free and (deps or not self.uniform_before(node)):
                self.add_int(self.int_cost(op, a, b, ty, left, right), w)
            return Val(
                ty if ty.kind != "bool" else INT,
                deps,
                val,
                rng=value_range(op, a, b),
                slope=slope,
            )
        if ty.kind == "f16":
            self.add_flop(ty, 1.0, w)
        return Val(ty, deps, val)

    def stored_as(self, node: Node, ty: DataType) -> Val:
        """The value of ``node``, which goes straight into a ``ty`` (a store, a declaration's
        initial value, a cast). Into a float, a double operation of floats and constants
        exact in float is computed in float: the compiler shrinks ``fptrunc(fmul(fpext(x),
        2.0))`` to ``fmul float x, 2.0``, so ``b[i] = a[i] * 2.0`` and ``a[i] / 3.0`` stay
        FP32; only the operation whose result is stored: ``a[i] * 2.0 + 1.0`` multiplies
        and adds in FP64 (``b[i] = a[i] * 0.1`` too: 0.1 is not exact in float)."""
        inner = unparenthesized(node)
        if ty.kind != "f32" or ty.pointer:
            return self.expr(node)
        # through a conditional: ``c ? a[i] * 1.5 : 0.0`` narrows each arm (the compiler
        # moves the truncation into the select), when every arm is one operation or a
        # number (``c ? a * 1.5 + 1.0 : a * 0.25`` selects a double: both stay FP64)
        arms = [inner]
        if inner.type == "conditional_expression":
            arms = [
                unparenthesized(a)
                for f in ("consequence", "alternative")
                if (a := inner.child_by_field_name(f)) is not None
            ]
            if not all(_one_operation(a) or a.type == "number_literal" for a in arms):
                return self.expr(node)
        ops = frozenset(a.id for a in arms if a.type == "binary_expression")
        if not ops:
            return self.expr(node)
        saved = self.cursor.narrowed
        self.cursor.narrowed = ops
        try:
            return self.expr(node)
        finally:
            self.cursor.narrowed = saved

    def constant_division(self, divisor: Val, right: Node, wide: float = 1.0) -> float | None:
        """Integer instructions of a division by ``right`` (its value ``divisor``) when it is a
        constant the compiler sees (:meth:`compile_time`): a shift and a sign fix for a power
        of two, a multiply-high and shifts otherwise; None for a run-time divisor
        (:meth:`division_cost`)."""
        if divisor.val is None or divisor.deps or not self.compile_time(right):
            return None
        if is_pow2(divisor.val):
            return costs.INT_DIV_POW2 * wide * 0.5
        return costs.INT_DIV_CONST * wide

    def division_cost(self, divisor: Val, wide: float = 1.0) -> float:
        """Integer instructions of a division by a run-time value (``wide``: of 64-bit
        operands): the reciprocal sequence; in a loop, by a value no thread or trip changes,
        its per-trip part only (the compiler computes the reciprocal before the loop)."""
        looping = any(trips > 1 for _dim, trips, _par in self.cursor.loops)
        cost = costs.INT_DIV_HOISTED if looping and not divisor.deps else costs.INT_DIV_VAR
        return cost + (costs.INT_DIV_VAR64 - costs.INT_DIV_VAR if wide > 1 else 0.0)

    def compile_time(self, node: Node, depth: int = 0) -> bool:
        """``node`` is a constant the compiler sees: literals, ``sizeof``, macros and named,
        enum and template constants, and arithmetic of them; not a value only the run fixes
        (a kernel argument, a host variable, ``blockDim.x``), however well the estimate knows
        it. Dividing by the one is a multiply-high, by the other a full division."""
        n = unparenthesized(node)
        if n.type in ("number_literal", "char_literal", "true", "false", "sizeof_expression"):
            return True
        if n.type in ("identifier", "qualified_identifier"):
            name = text(n)
            if name in self.inputs.literal_constants:
                return True
            v = self.var(name)
            if v is not None:
                return v.fixed
            if name in self.inputs.constants or name in self.inputs.template_names:
                return True
            if name in _STANDARD_CONSTANTS:  # ``M_PI``, ``FLT_MAX``
                return True
            m = self.inputs.macros.get(name)
            if m is None or m[0] is not None or depth > 4:
                return False
            body = macro_tree(m[1], expression=True)
            return body is not None and self.compile_time(body, depth + 1)
        if n.type in ("binary_expression", "unary_expression", "conditional_expression"):
            return all(self.compile_time(c, depth + 1) for c in n.named_children)
        if n.type == "cast_expression":
            value = n.child_by_field_name("value")
            return value is not None and self.compile_time(value, depth + 1)
        return False

    def float_operand(self, node: Node, v: Val) -> bool:
        """An operand of a double operation that is a float widened, or a constant the
        compiler sees (a literal, a macro or named constant) exact in float; not a value
        only the host fixes (a launch argument)."""
        if v.type.pointer:
            return False
        if v.type.kind == "f32":
            return True
        if v.val is None or v.deps or not exact_in_float(v.val):
            return False
        return self.compile_time(node)

    def lvalue_type(self, left: Node) -> DataType | None:
        """The type stored into by an assignment to ``left`` (``x``, ``b[i]``, ``m[i][j]``,
        ``s.f``, ``p->f[i]``), without counting it; None: not known (or ``left`` has effects
        of its own: ``b[k++]``)."""
        levels = 0
        base = left
        while base.type == "subscript_expression":
            arg = base.child_by_field_name("argument")
            if arg is None:
                return None
            base, levels = arg, levels + 1
        if base.type == "identifier":
            var = self.var(text(base))
            if var is None:
                return None
            return var.type.deref(levels)
        if has_effects(left):
            return None
        return self.expr_quiet(left).type

    def hold(self, target: Node, deps: frozenset[str]) -> None:
        """A store into a per-thread or shared array ``a[i] = v``: its reads vary with
        ``v`` too (a tile refilled on every trip of a loop varies with that loop)."""
        base = target
        while base.type == "subscript_expression":
            arg = base.child_by_field_name("argument")
            if arg is None:
                return
            base = arg
        if base is target or base.type != "identifier":
            return
        v = self.var(text(base))
        if v is not None and v.space in ("local", "shared") and v.buffer == text(base):
            v.held = v.held | deps

    def int_cost(self, op: str, a: Val, b: Val, ty: DataType, left: Node, right: Node) -> float:
        wide = 2.0 if ty.size > 4 else 1.0
        if op in ("+", "-"):
            # a*b + c is one IMAD; a + b + c is one IADD3
            for side in (left, right):
                s = side
                while s.type == "parenthesized_expression" and s.named_children:
                    s = s.named_children[0]
                if s.type == "binary_expression":
                    o = s.child_by_field_name("operator")
                    if o is not None and o.type in ("*", "+", "-", "<<"):
                        return 0.0 if wide == 1 else 1.0
            if a.val is not None and not a.deps or b.val is not None and not b.deps:
                return costs.INT_OP * wide * 0.5
            return costs.INT_OP * wide
        if op == "*":
            return costs.INT_OP * (wide if wide == 1 else 3.0)
        if op in ("/", "%"):
            fixed = self.constant_division(b, right, wide)
            if fixed is not None:
                return fixed
            # one division serves x / n and x % n (and a repeat of either) in a loop body:
            # the compiler computes the remainder from the quotient with one multiply-add
            seen = self.cursor.seen[-1]
            if ("/", text(left), text(right)) in seen or ("%", text(left), text(right)) in seen:
                return 0.0 if (op, text(left), text(right)) in seen else costs.INT_OP * wide
            seen.add((op, text(left), text(right)))
            return self.division_cost(b, wide)
        return costs.INT_OP * wide

    def test_held_by(self, value: Node, target: str = "") -> Node | None:
        """The test a variable set from ``value`` holds: a comparison or logical expression,
        or another such variable's test (``bool ok = in;``). None for any other value, and
        for one that folds in the variable itself (``ok = ok && x``: the test would refer to
        a value the variable no longer holds)."""
        test = held_test(value)
        inner = unparenthesized(value)
        if test is None and inner.type == "identifier":
            other = self.var(text(inner))
            test = other.test if other is not None else None
        if test is not None and target and target in identifiers(test):
            return None
        return test

    def assignment(self, node: Node) -> Val:
        op_node = node.child_by_field_name("operator")
        op = op_node.type if op_node is not None else "="
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None:
            return Val(UNKNOWN)
        compound = op != "="
        # only an operation's result can be narrowed into the stored type (``stored_as``)
        narrowable = not compound and unparenthesized(right).type in (
            "binary_expression",
            "conditional_expression",
        )
        stored = self.lvalue_type(left) if narrowable else None
        r = self.stored_as(right, stored) if stored is not None else self.expr(right)
        if left.type in (
            "subscript_expression",
            "field_expression",
            "pointer_expression",
            "call_expression",  # ``domain.f(i) = v``: through the reference it returns
        ):
            is_var_field = left.type == "field_expression" and self.is_local_struct(left)
            if is_var_field:
                lv = self.field(left, "address")
                if compound:
                    self.arith_assign(op, lv.type, r, left, right)
                return lv
            updated: Val | None = None  # an ``omp atomic`` update's one read-modify-write
            if compound:
                cur = self.lvalue(left, "atomic" if self.cursor.atomic else "load")
                if not self.atomic_in_l2(cur):
                    self.arith_assign(op, cur.type, r, left, right)
                if self.cursor.atomic:
                    updated = cur
            elif r.type.is_float and not r.type.pointer and _sign_of_a_read(right):
                # ``b.im = -a.im``: no arithmetic takes the sign as an operand modifier, so
                # ptxas makes it an FADD/DADD (``DADD R6, -RZ, -R2``), one FLOP as Nsight
                # counts (``ptx_parser``'s materialised signs)
                self.add_flop(r.type, 1.0, self.cursor.w)
            lv = updated if updated is not None else self.lvalue(left, "store")
            self.hold(left, r.deps)
            return Val(lv.type, lv.deps | r.deps, None)
        if left.type == "identifier":
            name = text(left)
            self.assigned(name)
            var = self.var(name)
            if var is None:
                self.cursor.scopes[0][name] = Var(r.type, r.deps, r.val, r.space, r.buffer)
                return r
            if compound:
                self.arith_assign(op, var.type, r, left, right)
                new_val = (
                    fold_binary(op[:-1], var.val, r.val, var.deps | r.deps)
                    if var.val is not None
                    else None
                )
                deps = var.deps | r.deps
            else:
                new_val = r.val
                deps = r.deps
            if self.cursor.atomic:  # ``#pragma omp atomic capture``: the value before the update
                new_val = None
                deps = deps | self.each_update()
            if self.cursor.loops and not self.cursor.loops[-1][2]:
                deps = deps | {self.cursor.loops[-1][0]}
                if self.cursor.loops[-1][0] not in r.deps:
                    new_val = None if compound else new_val
            var.deps = deps
            var.val = new_val
            var.rng = r.rng if not compound and deps == r.deps else None
            var.gathered = not compound and reads_memory(right)
            var.test = None if compound else self.test_held_by(right, name)
            if not compound:
                var.slope = r.slope
            elif op not in ("+=", "-=") or lane_slope(r, self.par.lane) != 0.0:
                var.slope = None
            if var.type.pointer and r.buffer:
                var.buffer, var.space = r.buffer, r.space
            return Val(var.type, deps, new_val)
        self.expr(left)
        return r

    def arith_assign(
        self, op: str, t: DataType, r: Val, left: Node | None = None, right: Node | None = None
    ) -> None:
        """The arithmetic of ``left op= right`` on a value of type ``t``: a user's
        ``operator+=`` when the types have one, else the operation in ``t``'s precision."""
        if left is not None and right is not None and (_user_type(t) or _user_type(r.type)):
            lhs = Val(t, frozenset({DATA}))  # it changes from call to call: never hoisted
            called = self.overloaded(op, [left, right], [lhs, r])
            if called is not None:
                return
        base = op[:-1]
        w = self.cursor.w
        if t.pointer:  # ``p += w``: a 64-bit address add, whatever p points to
            self.add_int(costs.INT_OP * 2, w)
        elif t.is_float or (t.kind == "unknown" and r.type.is_float):
            tt = t if t.is_float else r.type
            if t.is_float and r.type.kind == "f64" and t.kind != "f64" and right is not None:
                # ``s += a[i] * 0.25`` is ``s = s + (double)``: the add runs in double,
                # unless the double is a float widened or a constant exact in float
                # (``s += 0.5``: the compiler keeps it in float, as ``stored_as``)
                tt = t if self.float_operand(right, r) else r.type
            if base == "/":
                if r.val is not None and is_pow2(r.val):
                    self.add_flop(tt, 1.0, w)
                else:
                    self.add_math(tt, "div", w)
            elif base in ("+", "-", "*"):
                self.add_flop(tt, 1.0, w)
        elif t.kind == "int":
            if base in ("/", "%"):
                fixed = self.constant_division(r, right) if right is not None else None
                self.add_int(fixed if fixed is not None else self.division_cost(r), w)
            else:
                self.add_int(costs.INT_OP * (2 if t.size > 4 and base == "*" else 1), w)

    def update(self, node: Node) -> Val:
        arg = node.child_by_field_name("argument")
        if arg is None:
            return Val(UNKNOWN)
        if arg.type == "identifier":
            self.assigned(text(arg))
            v = self.var(text(arg))
            if v is not None:
                if v.type.is_float and not v.type.pointer:
                    self.add_flop(v.type, 1.0)
                else:
                    self.add_int(costs.INT_OP * (2 if v.type.pointer else 1))
                if self.cursor.loops and not self.cursor.loops[-1][2]:
                    v.deps = v.deps | {self.cursor.loops[-1][0]}
                    v.val = None
                    v.rng = None
                return Val(v.type, v.deps, v.val, v.buffer, v.space)
            return Val(INT)
        cur = self.lvalue(arg, "atomic" if self.cursor.atomic else "load")
        if not self.atomic_in_l2(cur):
            if cur.type.is_float and not cur.type.pointer:
                self.add_flop(cur.type, 1.0)
            else:
                self.add_int(costs.INT_OP)
        if not self.cursor.atomic:
            self.lvalue(arg, "store")
        return cur

    def atomic_in_l2(self, target: Val) -> bool:
        """Whether an update of ``target`` under ``#pragma omp atomic`` runs in L2: one
        ``atom``/``red`` instruction on global memory (a memory instruction: Nsight Compute
        counts no FLOP for it), not an operation of the SMs."""
        return self.cursor.atomic and target.space not in ("shared", "local")


_SIGN_CALLS = frozenset({"fabs", "fabsf", "abs"})
_MEMORY_READS = frozenset({"subscript_expression", "field_expression", "pointer_expression"})


def _sign_of_a_read(node: Node) -> bool:
    """``-a[i]``, ``-p->im``, ``fabs(*p)``: a sign change of a value read from memory."""
    n = unparenthesized(node)
    if n.type == "unary_expression":
        op = n.child_by_field_name("operator")
        arg = n.child_by_field_name("argument")
        if op is None or op.type != "-" or arg is None:
            return False
    elif n.type == "call_expression" and text(n.child_by_field_name("function")) in _SIGN_CALLS:
        args = n.child_by_field_name("arguments")
        if args is None or len(args.named_children) != 1:
            return False
        arg = args.named_children[0]
    else:
        return False
    arg = unparenthesized(arg)
    if arg.type == "pointer_expression":
        deref = arg.child_by_field_name("operator")
        return deref is not None and deref.type == "*"
    return arg.type in _MEMORY_READS


def _one_operation(node: Node) -> bool:
    """A binary operation of two operands that are not operations themselves."""
    if node.type != "binary_expression":
        return False
    return all(
        (c := node.child_by_field_name(f)) is not None
        and unparenthesized(c).type not in ("binary_expression", "conditional_expression")
        for f in ("left", "right")
    )


def _user_type(t: DataType) -> bool:
    """A struct or vector value, whose operators the program may define."""
    return bool(t.name or t.lanes > 1) and not t.pointer


def _literal_type(body: str) -> DataType | None:
    """The floating type of an object-like macro made of numbers alone (``1e-3`` double,
    ``0.5f`` float, ``(1.0 / 3)`` double); None for one with a name or a call in it (its
    type is theirs: ``RCONST(0.5)`` may paste an ``f``) or without a floating number."""
    tree = macro_tree(body, expression=True)
    if tree is None:
        return None
    kinds: set[str] = set()
    todo = [tree]
    while todo:
        n = todo.pop()
        if n.type == "number_literal":
            k = is_float_literal(n)
            if k is not None:
                kinds.add(k)
        elif n.is_named and n.type not in _LITERAL_EXPRESSIONS:
            return None
        todo.extend(n.children)
    return DOUBLE if "f64" in kinds else FLOAT if kinds else None


_LITERAL_EXPRESSIONS = frozenset(
    {"binary_expression", "unary_expression", "parenthesized_expression"}
)


def _array_cast_misread(node: Node) -> Node | None:
    """``(a[k]) + x`` parses as a cast of ``+x`` to an array type ``a[k]`` (no C cast is to
    an array type): the expression ``a[k] + x`` re-parsed, else None."""
    ty = node.child_by_field_name("type")
    value = node.child_by_field_name("value")
    if ty is None or value is None or value.type != "unary_expression":
        return None
    base = ty.child_by_field_name("type")
    declarator = ty.child_by_field_name("declarator")
    if base is None or base.type != "type_identifier" or declarator is None:
        return None
    if declarator.type != "abstract_array_declarator":
        return None
    return macro_tree(f"{text(ty)} {text(value)}", expression=True)


def _texts(node: Node, fields: tuple[str, ...]) -> list[str]:
    kids = [node.child_by_field_name(f) for f in fields]
    return sorted(text(unparenthesized(k)) for k in kids if k is not None)


def _compared(node: Node) -> list[str]:
    """The two operands a conditional expression's condition orders (``a < b ? ..``: a
    and b), none when it is not such a comparison."""
    cond = node.child_by_field_name("condition")
    if cond is None:
        return []
    cond = unparenthesized(cond)
    op = cond.child_by_field_name("operator")
    if cond.type != "binary_expression" or op is None or op.type not in ("<", ">", "<=", ">="):
        return []
    return _texts(cond, ("left", "right"))


def _clamp_bounds(node: Node) -> tuple[str, ...]:
    """The sides of a conditional expression that are one of the operands its condition
    compares (``v < lo ? lo : w``: ``("consequence",)``; ``a < b ? a : b``: both): the
    bounds a clamp takes at the edge."""
    compared = _compared(node)
    return tuple(
        side
        for side in ("consequence", "alternative")
        if (chosen := _texts(node, (side,))) and chosen[0] in compared
    )
