"""Arithmetic and precision checks: fp64 literals in fp32 kernels (RL001), fp64 arithmetic on
GPUs with a low fp64 rate (RL002), ``pow(x, 2)`` (RL003) and division or special functions in
the hot loops of compute-bound kernels (RL004).
"""

from __future__ import annotations

import functools
import math
import re

from tree_sitter import Node

from roofline_lsp.advice.catalogue import Fix, Severity, TextEdit
from roofline_lsp.advice.impact import Gain, Ops, fewer_ops, fp64_to_fp32, line_ops, line_runs
from roofline_lsp.advice.kernel_context import KernelContext
from roofline_lsp.advice.nodes import (
    SPECIAL_FUNCTIONS,
    call_args,
    call_name,
    identifiers,
    is_pure,
    operator_text,
    walk,
)
from roofline_lsp.detect.treewalk import kernel_function
from roofline_lsp.estimate.costs import (
    FAST_INTRINSICS,
    INT_DIV_CONST,
    INT_DIV_VAR,
    MATH_F32,
    MATH_F64,
)
from roofline_lsp.estimate.value_domain import COMPARISONS
from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.kernel import Kernel
from roofline_lsp.model.numbers import fmt_num
from roofline_lsp.syntax.datatypes import exact_in_float
from roofline_lsp.syntax.expr import declarator_stars, declared_name, root_identifier, text

_FLOAT_LITERAL = re.compile(r"^(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?$|^\d+[eE][+-]?\d+$")
_TWO = frozenset({"2", "2.0", "2.", "2.0f", "2.f", "2.0F", "2.F"})
LOW_FP64_RATE = 1 / 8  # fp64 peak / fp32 peak at or below this is a "low fp64 rate"
_NO_PARENS_NEEDED = frozenset(
    {
        "argument_list",
        "init_declarator",
        "return_statement",
        "parenthesized_expression",
        "expression_statement",
        "assignment_expression",
        "subscript_argument_list",
        "initializer_list",
        "condition_clause",
    }
)


def _is_fp32_kernel(kernel: Kernel) -> bool:
    """Uses float and never names double (params or body; for an offloaded region also the
    declarations of the enclosing function, where its arrays' types usually are)."""
    types = set()
    for n in walk(kernel.node if kernel.node is not None else kernel.body):
        if n.type == "primitive_type":
            types.add(text(n))
    if kernel.is_offload:
        types |= {text(n) for n in walk(kernel.body) if n.type == "primitive_type"}
        for _t, _name in kernel.params:
            types.add(_t)
        fn = kernel_function(kernel)
        if fn is not None:
            used = identifiers(kernel.body)
            for d in walk(fn):
                if d.type in ("declaration", "parameter_declaration"):
                    t = d.child_by_field_name("type")
                    names = {text(x) for x in walk(d) if x.type == "identifier"}
                    if t is not None and names & used:
                        types.add(text(t))
    return "double" not in types and any("float" in t for t in types)


def _exact_in_float(literal: str) -> bool:
    """``0.5``, ``2.0``: the literal is the same number in float (``0.1`` is not)."""
    try:
        v = float(literal.rstrip("lL"))
    except ValueError:
        return False
    return exact_in_float(v)


def _fp64_rate(gpu: GpuProfile) -> float:
    return gpu.peak("fp64") / gpu.peak("fp32")


class PrecisionChecks(KernelContext):
    """RL001-RL004: the kernel computes in a slower precision or with slower instructions than
    it needs."""

    # RL001 ---------------------------------------------------------------------------------
    def fp64_literals(self) -> None:
        c = self.counts
        if c is not None and c.counts_from == "ptx" and c.flops.get("fp64", 0.0) == 0:
            return  # the compiled kernel has no fp64 instruction: the compiler kept it fp32
        found = [
            n
            for n in self.nodes
            if n.type == "number_literal"
            and _FLOAT_LITERAL.match(text(n))
            and not any(
                p.type in ("subscript_argument_list", "case_statement")
                for p in self.index.parents(n)
            )
        ]
        if not found or not _is_fp32_kernel(self.k):
            return
        # only literals whose statement the compiler computes in fp64: `b[i] = x * 0.5` is
        # compiled as an fp32 multiply (with PTX counts, a cvt.f64.f32 or fp64 arithmetic on
        # the line; with source counts, fp64 FLOPs booked on it)
        found = [n for n in found if self.promoted(n)]
        low = _fp64_rate(self.gpu) <= LOW_FP64_RATE
        severity: Severity = "information" if low or self.bound == "compute" else "hint"
        rate = f"1/{round(1 / _fp64_rate(self.gpu))}" if _fp64_rate(self.gpu) < 1 else "full"
        literals = len(found)
        for n in found:
            lit = text(n)
            exact = _exact_in_float(lit)
            self.add(
                "RL001",
                n,
                f"`{lit}` is a double literal: the expression it is in is computed in fp64 "
                f"(fp64 runs at {rate} of the fp32 rate {self.on()}) and converted back. "
                + (
                    f"Write `{lit}f` to keep this fp32 kernel in fp32."
                    if exact
                    else f"`{lit}` is not exact in float: `{lit}f` keeps this kernel in fp32 "
                    "if the last bit of its results may change."
                ),
                severity,
                # a quick fix only where it keeps the results: the literal is exact in float
                Fix(f"Use the float literal `{lit}f`", (TextEdit(n.end_byte, n.end_byte, "f"),))
                if exact
                else None,
                gain=fp64_to_fp32(self.gpu, self.counts, 1.0 / max(1, literals)),
            )

    # RL002 ---------------------------------------------------------------------------------
    def fp64_arithmetic(self) -> None:
        v = self.verdict
        if _fp64_rate(self.gpu) > LOW_FP64_RATE or v.bound != "compute" or v.deciding != "fp64":
            return
        decls = [
            n
            for n in walk(self.k.node if self.k.node is not None else self.k.body)
            if n.type == "primitive_type" and text(n) == "double"
        ]
        if not decls:
            return
        n = decls[0]  # once per kernel: the first `double` (a parameter or declaration)
        ai, ridge = v.ai.get("fp64"), v.ridge.get("fp64")
        rate = round(1 / _fp64_rate(self.gpu))
        self.add(
            "RL002",
            n.parent if n.parent is not None and n.parent.type != "function_definition" else n,
            f"fp64 arithmetic decides this kernel: fp64 AI {fmt_num(ai)} is above the fp64 "
            f"ridge {fmt_num(ridge)} {self.on()}, whose fp64 rate is 1/{rate} of fp32, so it "
            "is compute-bound. If the accuracy allows, compute in float (keep double only for "
            "accumulators).",
            gain=fp64_to_fp32(self.gpu, self.counts),
        )

    # RL003 ---------------------------------------------------------------------------------
    def pow_square(self) -> None:
        severity: Severity = "information" if self.bound == "compute" else "hint"
        for n in self.nodes:
            if n.type != "call_expression" or call_name(n) not in ("pow", "powf"):
                continue
            args = call_args(n)
            if len(args) != 2 or text(args[1]).replace(" ", "") not in _TWO:
                continue
            base = args[0]
            gain = self._line_saving(n, [_call_saving(n, line_ops(self.counts, self.offset(n)))])
            if not is_pure(base):
                self.add(
                    "RL003",
                    n,
                    "pow(x, 2) runs the general power function (exp/log, tens of "
                    "instructions); store x in a variable and multiply it by itself.",
                    severity,
                    gain=gain,
                )
                continue
            x = text(base)
            simple = base.type in (
                "identifier",
                "field_expression",
                "subscript_expression",
                "parenthesized_expression",
            )
            xx = f"{x} * {x}" if simple else f"({x}) * ({x})"
            # pow(x, 2) of a float with an int or double exponent is C++'s pow(double,
            # double): the square stays in double (exact for a float), so the result does not
            # change
            widened = (
                call_name(n) == "pow"
                and text(args[1]).replace(" ", "") in ("2", "2.0", "2.")
                and self._float_name(base)
            )
            if widened:
                xx = f"(double){xx}"
            if n.parent is None or n.parent.type not in _NO_PARENS_NEEDED:
                xx = f"({xx})"
            what = (
                "runs the double-precision power function (an integer or double exponent "
                "makes C++ pick pow(double, double) for a float)"
                if widened
                else "runs the general power function (exp/log, tens of instructions per call)"
            )
            self.add(
                "RL003",
                n,
                f"`{text(n)}` {what}; `{xx}` is one multiply.",
                severity,
                Fix(f"Replace with `{xx}`", (TextEdit(n.start_byte, n.end_byte, xx),)),
                gain=gain,
            )

    def _float_name(self, base: Node) -> bool:
        """``base`` (``x``, ``x[i]``, ``p.x``) names a variable declared float or half."""
        root = root_identifier(base)
        return root is not None and bool(_FLOATISH.search(self.element_types.get(root, "")))

    @functools.cached_property
    def element_types(self) -> dict[str, str]:
        return _declared_types(self.k, pointee=True)

    # RL004 ---------------------------------------------------------------------------------
    def slow_math(self) -> None:
        """A division or special function whose operands change in a loop of a compute-bound
        kernel. Not: loop-invariant ones (hoisted by the compiler, e.g. ``N / BS`` in a loop
        bound), integer division by a constant (a multiply and shift) or division by a power
        of two (a multiply)."""
        if self.bound != "compute":
            return
        rows: dict[int, list[tuple[Node, str, str, str]]] = {}
        slow = "many instructions on the special-function units"
        changed: dict[int, set[str]] = {}  # loop id -> the names changed in it
        types: dict[str, str] | None = None  # declared types, read at the first division
        integer_divisions: set[int] = set()
        for n in self.nodes:
            what = None
            divisor: Node | None = None  # of a float division, whose hint depends on it
            if n.type == "call_expression" and call_name(n) in SPECIAL_FUNCTIONS:
                if (
                    call_name(n) in ("pow", "powf")
                    and len(call_args(n)) == 2
                    and (text(call_args(n)[1]).replace(" ", "") in _TWO)
                ):
                    continue  # RL003
                what = f"`{call_name(n)}`"
                cost = slow
                hint = (
                    "use the fast intrinsic (`__expf`, `__sinf`, `__logf`, `rsqrtf`...) if "
                    "its accuracy is enough, or `-use_fast_math`"
                )
            elif n.type == "binary_expression" and operator_text(n) == "/":
                right = n.child_by_field_name("right")
                if right is None or _cheap_divisor(right):
                    continue
                ptx = self.compiled(n)
                if ptx is not None and not ptx.divisions:
                    continue  # compiled without a div/rem: a constant divisor, a multiply
                if types is None:
                    types = _declared_types(self.k)
                if _integer_operands(n, types):
                    integer_divisions.add(n.id)
                    what = "integer division by a run-time value"
                    cost = f"about {INT_DIV_VAR:g} integer instructions"
                    hint = (
                        "when the divisor is fixed for the launch, a fast divisor precomputed "
                        "on the host (multiply-high and shift) gives the same quotient, or "
                        "loop over the two dimensions instead of dividing the index"
                    )
                else:
                    what = "division"
                    cost = slow
                    hint = "use `__fdividef` where the accuracy allows"
                    divisor = right
            if what is None:
                continue
            loop = self.index.enclosing_loop(n, self.k.body)
            if loop is None:
                continue
            if loop.id not in changed:
                changed[loop.id] = _changed_in(loop)
            if not identifiers(n) & changed[loop.id]:
                continue  # nothing in it changes in the loop: hoisted out of it
            if divisor is not None and not identifiers(divisor) & changed[loop.id]:
                # only the dividend changes: one reciprocal serves every trip
                hint = f"multiply by a reciprocal computed once outside the loop, or {hint}"
            rows.setdefault(n.start_point.row, []).append((n, what, cost, hint))
        for found in rows.values():
            n, what, cost, hint = found[0]  # once per line, weighed with every slow one on it
            ops = line_ops(self.counts, self.offset(n))
            self.add(
                "RL004",
                n,
                f"{what} in a loop of a compute-bound kernel {self.on()}: it takes {cost}; {hint}.",
                gain=self._line_saving(
                    n, [_call_saving(m, ops, m.id in integer_divisions) for m, *_ in found]
                ),
            )

    def promoted(self, n: Node) -> bool:
        """Literal ``n``'s statement computes in fp64 (True when the estimate did not reach
        it). A comparison with a literal exact in float compares in float (``x > 0.5``);
        with another (``x > 0.1``) it converts x and compares in fp64, which counts no
        FLOP."""
        ptx = self.compiled(n)
        if ptx is not None:
            return ptx.to_fp64 > 0 or ptx.fp64_flops > 0
        parent = n.parent
        while parent is not None and parent.type == "parenthesized_expression":
            parent = parent.parent
        op = parent.child_by_field_name("operator") if parent is not None else None
        if op is not None and op.type in COMPARISONS:
            return not _exact_in_float(text(n))
        if line_runs(self.counts, self.offset(n)) is None:
            return True
        return line_ops(self.counts, self.offset(n))[0] > 0

    def _line_saving(self, n: Node, savings: list[Saving | None]) -> Gain | None:
        """What removing ``savings`` (per execution) from ``n``'s line is worth: times the
        line's executions per thread, never more than the operations booked on it. Said to
        be an upper bound when a saving is a call's whole cost (no cheaper form known)."""
        runs = line_runs(self.counts, self.offset(n))
        known = [x for x in savings if x is not None]
        if runs is None or not known:
            return None
        ops = line_ops(self.counts, self.offset(n))
        total = [runs * sum(x[0][i] for x in known) for i in range(4)]
        capped = tuple(min(t, o) if t > 0 else t for t, o in zip(total, ops, strict=True))
        basis = "at most the calls' whole cost" if any(whole for _o, whole in known) else ""
        return fewer_ops(self.gpu, self.counts, (capped[0], capped[1], capped[2], capped[3]), basis)


def _float_precision(ops: Ops) -> str | None:
    """The float precision of a line's work: the one with more FLOP on it (None: none)."""
    if ops[0] <= 0 and ops[1] <= 0:
        return None
    return "fp64" if ops[0] > ops[1] else "fp32"


# operations saved per execution, and whether that is the operation's whole cost (an upper
# bound: no cheaper form of it is known)
Saving = tuple[Ops, bool]


def _call_saving(n: Node, ops: Ops, integer: bool = False) -> Saving | None:
    """Operations saved per execution of ``n`` when it is replaced by its fast form, from the
    estimator's cost tables (``estimate.costs``): ``pow(x, 2)`` by one multiply, an fp32
    special function by its intrinsic (``__expf``; ``sqrtf`` by the one-instruction
    approximation), a float division by a multiply with a reciprocal, an integer division by
    a variable by a multiply-high with a precomputed magic number. A function with no fast
    form in its precision (``fmodf``, any fp64 one) saves at most its whole cost. None
    where the line's precision is unknown. ``ops``: the line's operations, whose FLOP tell
    its float precision; ``integer``: a division of integer operands, whatever else the
    line computes."""
    prec = _float_precision(ops)
    if n.type == "binary_expression":  # a division
        if prec is None or integer:
            return ((0.0, 0.0, 0.0, INT_DIV_VAR - INT_DIV_CONST), False) if ops[3] > 0 else None
        f, i = (MATH_F64 if prec == "fp64" else MATH_F32)["div"]
        return _in(prec, f - 1.0, i), False
    name = call_name(n)
    base = name[:-1] if name.endswith("f") and name[:-1] in MATH_F32 else name
    if name.endswith("f") and base != name:
        prec = "fp32"
    if prec is None or base not in MATH_F32:
        return None
    f, i = (MATH_F64 if prec == "fp64" else MATH_F32)[base]
    args = call_args(n)
    if base == "pow" and len(args) == 2 and text(args[1]).replace(" ", "") in _TWO:
        return _in(prec, f - 1.0, i), False
    fast = FAST_INTRINSICS.get(f"__{base}f") or ((1.0, 0.0) if base == "sqrt" else None)
    if prec == "fp64" or fast is None:
        return _in(prec, f, i), True
    return _in(prec, f - fast[0], i - fast[1]), False


def _in(prec: str, flops: float, ints: float) -> Ops:
    return (flops, 0.0, 0.0, ints) if prec == "fp64" else (0.0, flops, 0.0, ints)


_INTEGER_TYPE = re.compile(r"\b(?:int|long|short|unsigned|signed|size_t|u?int\d+_t|char)\b")


_FLOATISH = re.compile(r"\b(?:float|half|__half)\b")


def _declared_types(kernel: Kernel, pointee: bool = False) -> dict[str, str]:
    """The declared type of each name in the kernel's function (parameters and locals; for
    an offload region, the function around it), by name: the last declaration wins. A
    pointer or array is ``pointer``, or with ``pointee`` its element type (``float``)."""
    fn = kernel_function(kernel) or (kernel.node if kernel.node is not None else kernel.body)
    out: dict[str, str] = {}
    for d in walk(fn) if fn is not None else ():
        if d.type not in ("declaration", "parameter_declaration", "field_declaration"):
            continue
        t = d.child_by_field_name("type")
        if t is None:
            continue
        for c in d.children_by_field_name("declarator"):
            name = declared_name(c)
            if name:
                # a pointer or array of integers is not an integer value
                out[name] = "pointer" if declarator_stars(c) and not pointee else text(t)
    return out


def _integer_operands(division: Node, types: dict[str, str]) -> bool:
    """Both operands of ``division`` are integer: every name in them is declared with an
    integer type, with no call, subscript, field or floating literal (whose type is not
    known here)."""
    names = 0
    for n in walk(division):
        if n.type in ("call_expression", "subscript_expression", "field_expression"):
            return False
        if n.type == "number_literal" and not _is_int_literal(text(n)):
            return False
        if n.type == "identifier":
            t = types.get(text(n))
            if t is None or not _INTEGER_TYPE.search(t):
                return False
            names += 1
    return names > 0


def _is_int_literal(t: str) -> bool:
    return re.fullmatch(r"(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*", t) is not None


def _cheap_divisor(right: Node) -> bool:
    """An integer constant (``/ 4``, ``/ BS`` with an upper-case macro) or a floating power
    of two (``/ 4.0f``): the compiler turns the division into a multiply (and shift)."""
    t = text(right).strip()
    if right.type == "number_literal":
        if "." not in t and "e" not in t.lower():
            return True
        try:
            v = float(t.rstrip("fFlL"))
        except ValueError:
            return False
        return v != 0 and math.frexp(abs(v))[0] == 0.5
    return right.type == "identifier" and t.isupper()


def _changed_in(loop: Node) -> set[str]:
    """The names that change inside ``loop`` (its counter, the variables and arrays assigned
    in it): an operation naming one cannot be hoisted out of the loop."""
    changed: set[str] = set()
    for n in walk(loop):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        elif n.type == "init_declarator":
            target = n.child_by_field_name("declarator")
        if target is not None and target.type == "identifier":
            changed.add(text(target))
        elif target is not None:  # an element written in the loop: a[i] = ...
            name = root_identifier(target)
            if name:
                changed.add(name)
    return changed
