"""The counter's value domain: what it knows of a variable (:class:`Var`) and of an
expression (:class:`Val`): type, the dimensions it depends on (thread/block indices, loop
iterations, loaded data), its value (exact, or the mean over threads for thread-dependent
values) and its integer range; and the folding of operators on these values."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from roofline_lsp.syntax.carith import TREE_DIALECT, binary
from roofline_lsp.syntax.datatypes import FLOAT, INT, UNKNOWN, DataType, promote

if TYPE_CHECKING:
    from tree_sitter import Node

THREAD_DIMS = ("tx", "ty", "tz", "bx", "by", "bz")
DATA = "?"  # dependence on loaded data (indirect indices)
AXES = "xyz"
NOTHING = frozenset[str]()
COMPARISONS = frozenset({"<", ">", "<=", ">=", "==", "!="})
THREAD_SET = frozenset(THREAD_DIMS)
BLOCK_SET = frozenset(THREAD_DIMS[3:])  # the block (team) indices
WARP_LANES = 32


def carried(dim: str) -> str:
    """The mark of a value loaded from memory that loop ``dim`` stores to: it changes every
    trip (no hoisting out of the loop) at an address that does not (no new elements)."""
    return dim + "~"


class Var:
    """A variable: type, dependences, value (exact or mean), pointer target, array rank,
    constness and integer range; mutated as the walk assigns it."""

    __slots__ = (
        "type",
        "deps",
        "val",
        "space",
        "buffer",
        "arrdims",
        "const",
        "rng",
        "group",
        "held",
        "gathered",
        "slope",
        "tname",
        "test",
        "host_name",
        "fixed",
    )

    def __init__(
        self,
        type_: DataType,
        deps: frozenset[str] = frozenset(),
        val: float | None = None,
        space: str | None = None,
        buffer: str | None = None,
        arrdims: int = 0,
        const: bool = False,
        rng: tuple[float, float] | None = None,
        group: float | None = None,
    ) -> None:
        self.type = type_
        self.deps = deps
        self.val = val
        self.space = space
        self.buffer = buffer
        self.arrdims = arrdims
        self.const = const
        self.rng = rng
        self.group = group  # threads of the cooperative group it holds (walk_groups.py)
        # a per-thread or shared array: what the values stored in it depend on (its reads
        # vary with them, not only with the index)
        self.held: frozenset[str] = frozenset()
        # it holds a value read from memory as is (``int c = col[j]``): used as an index,
        # a gather
        self.gathered = False
        self.slope: float | None = None  # see Val.slope
        # the type it was declared with, as written (``x128``): names its static members
        self.tname = ""
        # the comparison it holds (``int in = (i < n)``): a branch on it is that test
        self.test: Node | None = None
        # a struct passed by value down from a kernel parameter: the parameter's name, under
        # which the host knows its fields (``params.octaves``)
        self.host_name = ""
        # a template parameter's value (``f<4>``, a default, a template instance's member):
        # the compiler sees it, as a literal (``ExpressionWalker.compile_time``)
        self.fixed = False


def fixed_constant(v: float) -> Var:
    """A template parameter's value in a function's scope: an int the compiler sees."""
    var = Var(INT, NOTHING, v, const=True)
    var.fixed = True
    return var


def held_test(value: Node) -> Node | None:
    """The test a variable set from ``value`` holds (``i < n``, ``a && !b``): a branch on the
    variable takes the test's probability. None for any other value."""
    while value.type == "parenthesized_expression" and value.named_child_count == 1:
        value = value.named_children[0]
    if value.type == "unary_expression":
        op = value.child_by_field_name("operator")
        return value if op is not None and op.type == "!" else None
    if value.type == "binary_expression":
        op = value.child_by_field_name("operator")
        tests = COMPARISONS | {"&&", "||"}
        return value if op is not None and op.type in tests else None
    return None


class Val:
    """An expression's value: type, dependences, numeric value (exact or mean), pointer."""

    __slots__ = ("type", "deps", "val", "buffer", "space", "rng", "group", "slope")

    def __init__(
        self,
        type_: DataType,
        deps: frozenset[str] = frozenset(),
        val: float | None = None,
        buffer: str | None = None,
        space: str | None = None,
        rng: tuple[float, float] | None = None,
        group: float | None = None,
        slope: float | None = None,
    ) -> None:
        self.type = type_
        self.deps = deps
        self.val = val
        self.buffer = buffer
        self.space = space
        self.rng = rng  # [lo, hi] over threads and iterations, for integer values
        self.group = group  # threads of the cooperative group it denotes (walk_groups.py)
        # how much the value grows from one thread of a warp to the next (the lane
        # dimension: threadIdx.x, an OpenMP work-shared loop's counter), when it is linear
        # in it; a pointer's in elements. None: not known (``lane_slope``)
        self.slope = slope


def host_constant(v: float) -> Val:
    """A value the host side fixes (a launch argument, a constant, ``x128::size``): an int
    when whole."""
    return Val(FLOAT if v != int(v) else INT, NOTHING, v)


def converted(v: Val, ty: DataType, val: float | None) -> Val:
    """``v`` cast to ``ty`` (``(int)x``, ``static_cast<size_t>(i)``, ``int(x)``) with the value
    ``val``: an integer keeps its range and lane stride, a pointer its buffer and stride; a
    cast to a type the model does not know keeps no stride (``(z)*(L)`` parses as a cast of
    ``*(L)`` to a type ``z``)."""
    keep = ty.kind == "int" and not ty.pointer
    return Val(
        ty,
        v.deps,
        val,
        v.buffer,
        v.space,
        v.rng if keep else None,
        slope=v.slope if keep or ty.pointer else None,
    )


def lane_slope(v: Val | Var, lane: str) -> float | None:
    """The growth of ``v`` from one lane of a warp to the next: 0 for a value that does not
    depend on the lane dimension, else what the walk derived (None: not linear, unknown)."""
    if lane not in v.deps:
        return 0.0
    return v.slope


def slope_of(op: str, a: Val, b: Val, lane: str) -> float | None:
    """The lane slope of ``a op b`` for integer (index) arithmetic: sums add, scaling by a
    value that does not vary with the lane scales, division and shifts divide."""
    s = _slope_of(op, a, b, lane)
    return s if s is None or math.isfinite(s) else None


def _slope_of(op: str, a: Val, b: Val, lane: str) -> float | None:
    sa, sb = lane_slope(a, lane), lane_slope(b, lane)
    if sa is None or sb is None:
        return None
    if op == "+":
        return sa + sb
    if op == "-":
        return sa - sb
    if op == "*":
        if sb == 0.0 and b.val is not None and lane not in b.deps:
            return sa * b.val
        if sa == 0.0 and a.val is not None and lane not in a.deps:
            return sb * a.val
        return None
    if sb != 0.0 or b.val is None or lane in b.deps:
        return None
    if op == "<<" and 0 <= b.val < 63:
        return sa * 2.0 ** int(b.val)
    if op == ">>" and 0 <= b.val < 63:
        op, b_val = "/", 2.0 ** int(b.val)
    else:
        b_val = b.val
    if op not in ("/", "%") or b_val <= 0:
        return None
    if abs(sa) * WARP_LANES <= b_val:
        # the warp's lanes do not cross a multiple of the divisor (mostly): the quotient
        # stays the same, the remainder grows as the dividend
        return 0.0 if op == "/" else sa
    if op == "/" and abs(sa) >= b_val:
        return sa / b_val
    return None  # lanes fold onto a few rows (``t % 16``, ``t / 16``): not a single stride


def float_slope(op: str, a: Val, b: Val, lane: str) -> float | None:
    """The lane slope of floating-point ``a op b``: as for integers, except that a division
    by a value that does not vary with the lane divides the slope (``(x + 0.5f) * fx``: the
    source column of a resized image's column x, ``fx`` columns per lane)."""
    if op != "/":
        return slope_of(op, a, b, lane)
    sa, sb = lane_slope(a, lane), lane_slope(b, lane)
    if sa is None or sb != 0.0 or b.val is None or b.val == 0.0:
        return None
    return sa / b.val


_CLAMPS_AND_ROUNDINGS = frozenset(
    ("min", "max", "fmin", "fmax", "umin", "umax")
    + ("floor", "ceil", "trunc", "round", "lround", "llround", "rint", "lrint", "nearbyint")
)


def clamped_slope(name: str, vals: list[Val], lane: str) -> float | None:
    """The lane slope of ``min(v, c)``, ``fmaxf(v, 0.0f)``, ``floorf(v)``: the slope of the one
    argument that varies with the lane, when the others do not (a clamp bends only the edge
    lanes, rounding keeps the mean growth); of ``abs(i - 1)`` (a mirror at the edge), the
    argument's, its sign that of the argument's middle value."""
    if name in ("abs", "fabs", "labs", "llabs") and len(vals) == 1:
        s = lane_slope(vals[0], lane)
        bounds = _bounds(vals[0])
        return -s if s is not None and bounds is not None and sum(bounds) < 0 else s
    if name not in _CLAMPS_AND_ROUNDINGS:
        return None
    slopes = [lane_slope(v, lane) for v in vals]
    moving = [s for s in slopes if s != 0.0]
    return moving[0] if len(moving) == 1 else (0.0 if not moving else None)


def fold_binary(
    op: str, a: float | None, b: float | None, deps: frozenset[str], integer: bool = False
) -> float | None:
    """Fold a binary operation on exact values (C semantics, ``syntax.carith``) or, when the
    operands depend on the thread or on data (``deps``), on their means: then only operators
    linear in them fold, shifts as scaling by a power of two."""
    if a is None or b is None:
        return None
    try:
        if op == "<<":  # a scaling, on exact values and means alike
            return a * 2.0 ** int(b) if 0 <= b < 63 else None
        if op == ">>" and (deps or not 0 <= b < 63):
            return a / 2.0 ** int(b)
        if deps:
            if op not in ("+", "-", "*", "/"):
                return None
            return binary(op, a, b, False, TREE_DIALECT)  # a mean divides as a real number
        r = binary(op, a, b, integer, TREE_DIALECT)
    except (OverflowError, ValueError):
        return None
    return None if r is None else float(r)


def call_signature(v: Val) -> tuple[object, ...]:
    if v.buffer:
        return (v.buffer, v.space, v.type.kind)
    return (v.type.kind, v.val if not v.deps else None, bool(v.deps))


def _bounds(v: Val) -> tuple[float, float] | None:
    if v.rng is not None:
        return v.rng
    if v.val is not None and not v.deps:
        return (v.val, v.val)
    return None


def extreme_range(
    name: str, vals: list[Val], inner: tuple[str, float] | None = None
) -> tuple[float, float] | None:
    """The interval of ``min(a, b)`` / ``max(a, b)`` of values with known intervals
    (``max(0, diag - n)``, diag in [0, 126] and n = 64: [0, 62]); None otherwise. ``inner``:
    an argument that is itself the other extreme of a constant (``("max", 0)`` for
    ``min(max(bin, 0), 99)``): a clamp, [0, 99] whatever the value clamped."""
    if inner is not None and len(vals) == 2:
        consts = [v.val for v in vals if v.val is not None and not v.deps]
        pick_min = name in ("min", "umin")
        if len(consts) == 1 and inner[0] == ("max" if pick_min else "min"):
            lo, hi = (inner[1], consts[0]) if pick_min else (consts[0], inner[1])
            if lo <= hi:
                return (lo, hi)
    bounds = [_bounds(v) for v in vals]
    if len(bounds) < 2 or any(b is None for b in bounds) or all(v.rng is None for v in vals):
        return None
    lows = [b[0] for b in bounds if b is not None]
    highs = [b[1] for b in bounds if b is not None]
    pick = min if name in ("min", "umin") else max
    return (pick(lows), pick(highs))


def value_range(op: str, a: Val, b: Val) -> tuple[float, float] | None:
    """Interval arithmetic for integer index expressions (None when unknown)."""
    ra, rb = _bounds(a), _bounds(b)
    if ra is None or rb is None or (a.rng is None and b.rng is None):
        # an unknown value masked or wrapped by a positive constant (``v & 255``, ``v % 64``)
        masked = op in ("%", "&") and ra is None and rb is not None and rb[0] == rb[1] > 0
        return (0.0, rb[0] - 1 if op == "%" else rb[0]) if masked and rb else None
    (a0, a1), (b0, b1) = ra, rb
    try:
        if op == "+":
            return (a0 + b0, a1 + b1)
        if op == "-":
            return (a0 - b1, a1 - b0)
        if op == "*":
            c = (a0 * b0, a0 * b1, a1 * b0, a1 * b1)
            return (min(c), max(c))
        if op == "/" and b0 == b1 and b0 != 0:
            q = (math.trunc(a0 / b0), math.trunc(a1 / b0))
            return (float(min(q)), float(max(q)))
        if op == "%" and b0 == b1 and b0 > 0:
            if a0 >= 0 and a1 - a0 < b0 and math.fmod(a0, b0) <= math.fmod(a1, b0):
                return (math.fmod(a0, b0), math.fmod(a1, b0))
            return (0.0, b0 - 1)
        if op == "<<" and b0 == b1 and 0 <= b0 < 32:
            return (a0 * 2**b0, a1 * 2**b0)
        if op == ">>" and b0 == b1 and 0 <= b0 < 32:
            return (float(int(a0) >> int(b0)), float(int(a1) >> int(b0)))
        if op == "&" and b0 == b1 and b0 >= 0 and a0 >= 0:
            return (0.0, min(a1, b0))
    except (OverflowError, ValueError):
        return None
    return None


def is_pow2(v: float) -> bool:
    if v == 0 or v != v:
        return False
    a = abs(v)
    if a >= 1:
        return a == int(a) and int(a) & (int(a) - 1) == 0
    inv = 1 / a
    return inv == int(inv) and int(inv) & (int(inv) - 1) == 0


def widest_type(vals: list[Val]) -> DataType:
    t = vals[0].type if vals else UNKNOWN
    for v in vals[1:]:
        t = promote(t, v.type)
    return t


def fold_call(name: str, vals: list[Val]) -> float | None:
    """A call of a math function on exact values; ``floor``/``ceil`` also on the mean of a
    value that depends on the thread or block (``floorf(blockIdx.y * 16 * ih / (float)oh)``:
    the row a block starts at), as the linear operators fold (``fold_binary``)."""
    if not vals or any(v.val is None for v in vals):
        return None
    if any(v.deps for v in vals) and (
        name not in ("floor", "ceil") or any(DATA in v.deps for v in vals)
    ):
        return None
    xs = [v.val for v in vals if v.val is not None]
    try:
        if name in ("min", "fmin", "umin"):
            return min(xs)
        if name in ("max", "fmax", "umax"):
            return max(xs)
        if name in ("abs", "fabs"):
            return abs(xs[0])
        if name == "ceil":
            return float(math.ceil(xs[0]))
        if name == "floor":
            return float(math.floor(xs[0]))
        if name in _CONSTANT_FOLDED:
            # ``#define PI acos(-1.0)``: the compiler computes it, no instruction runs
            return float(_CONSTANT_FOLDED[name](*xs))
    except (ValueError, OverflowError, TypeError, ZeroDivisionError):
        return None
    return None


# pure math functions of constants that the compiler evaluates at compile time
_CONSTANT_FOLDED: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "pow": lambda x, y: x**y,
    "log2": math.log2,
    "exp": math.exp,
    "exp2": lambda x: 2.0**x,
    "exp10": lambda x: 10.0**x,
    "expm1": math.expm1,
    "log": math.log,
    "log10": math.log10,
    "log1p": math.log1p,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "cbrt": lambda x: math.copysign(abs(x) ** (1.0 / 3.0), x),
    "rsqrt": lambda x: 1.0 / math.sqrt(x),
    "hypot": math.hypot,
    "fmod": math.fmod,
    "trunc": lambda x: float(math.trunc(x)),
    "round": lambda x: float(math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)),
}
