"""Evaluate small C/C++ constant expressions (launch dimensions, sizes, trip counts).

``evaluate("(n + BS - 1) / BS", {"n": "1 << 20", "BS": "256"})`` -> 4096. Names are resolved
through a mapping of name -> expression text (``#define``, ``constexpr``, locals) or numbers,
recursively with a depth limit. Anything not understood gives ``None``; nothing is executed:
the text is tokenised and parsed here, never handed to ``eval``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from roofline_lsp.syntax.carith import (
    MATH_FUNCTIONS,
    TEXT_DIALECT,
    binary,
    cast,
    parse_literal,
    unary,
)

Env = Mapping[str, "str | float | int"]


@dataclass(frozen=True)
class Step:
    """One statement of a small host function (see :class:`TextFunction`):

    * ``set``: ``name op= expr`` (``op`` "" for ``=``; ``integer`` when the variable is an
      integer, for a declaration its type's);
    * ``if``: ``expr`` the condition, ``then`` / ``orelse`` the branches;
    * ``loop``: ``while (expr) { then; orelse }`` (a ``for``'s update is ``orelse``, its
      initialiser a step before the loop);
    * ``return``: ``expr``;
    * ``break``: leaves the innermost loop."""

    kind: str
    name: str = ""
    op: str = ""
    expr: str = ""
    integer: bool | None = None
    then: tuple[Step, ...] = ()
    orelse: tuple[Step, ...] = ()


@dataclass(frozen=True)
class TextFunction:
    """A function whose value is one expression of its parameters: a function-like macro
    (``#define DIV_UP(a, b) (((a) + (b) - 1) / (b))``) or a host function that only returns
    an expression (``constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }``);
    or, with ``steps``, a small host function of local variables, ifs, loops and returns
    (``nextPow2``, ``isPowerOf2``), run on numbers when called (``body`` is then unused).
    ``integer`` says, per parameter, whether its argument converts to an integer (True), a
    floating value (False) or stays as given (None, a macro's)."""

    params: tuple[str, ...]
    body: str
    integer: tuple[bool | None, ...] = ()
    integer_result: bool | None = None  # the declared return type converts the value
    steps: tuple[Step, ...] | None = None


Functions = Mapping[str, TextFunction]

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
    r"(?P<suffix>[uUlLfF]*)"
    r"|'(?P<char>[^'\\])'"
    r'|(?P<str>"(?:[^"\\]|\\.)*")'
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_][A-Za-z_0-9]*)*(?:(?:\.|->)[A-Za-z_]\w*)*)"
    r"|(?P<member>(?:(?:\.|->)[A-Za-z_]\w*)+)"  # a field of an element: ``plan[i].n``
    r"|(?P<op><<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%()<>?:,&|^~!\[\]]))"
)
_NAMED_CASTS = frozenset({"static_cast", "const_cast"})
_CASTS = {
    "int",
    "long",
    "unsigned",
    "size_t",
    "float",
    "double",
    "short",
    "char",
    "int64_t",
    "uint64_t",
    "int32_t",
    "uint32_t",
    "uint",
    "signed",
    "const",
}
_INT_CONVERSIONS = (
    *("atoi", "atol", "atoll", "stoi", "stol", "stoll", "stoul", "stoull"),
    *("strtol", "strtoul", "strtoll", "strtoull"),
)
_FLOAT_CONVERSIONS = ("atof", "stof", "stod", "strtof", "strtod")


def _to_int(x: float, *_rest: float) -> float:
    return float(math.trunc(x))


def _to_float(x: float, *_rest: float) -> float:
    return x


_FUNCS: dict[str, Callable[..., float]] = {
    **MATH_FUNCTIONS,
    "std::min": min,
    "std::max": max,
    "dim3": lambda *a: a[0] if a else 1,
    "floorf": math.floor,
    "ceilf": math.ceil,
    "fmin": min,
    "fmax": max,
    "fminf": min,
    "fmaxf": max,
    # conversions of a program argument already replaced by its number (``atoi(argv[1])``
    # inside a helper ``parse(const char *s) { return atoi(s); }``, ``std::stoi(std::string(
    # argv[2]))``): the number, truncated by the integer ones; strto*'s end pointer and base
    # are ignored
    **{f"{ns}{name}": _to_int for ns in ("", "std::") for name in _INT_CONVERSIONS},
    **{f"{ns}{name}": _to_float for ns in ("", "std::") for name in _FLOAT_CONVERSIONS},
    "std::string": lambda x: x,
}
_BINARY = [
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
]


class _Fail(Exception):
    pass


@functools.lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[tuple[str, str], ...] | None:
    """The tokens of ``text`` (cached: host texts and helpers' statements recur)."""
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        pos = m.end()
        if m.group("num") is not None:
            num, suffix = m.group("num"), m.group("suffix")
            is_float = "." in num or "e" in num.lower() and not num.lower().startswith("0x")
            out.append(("float" if is_float or "f" in suffix.lower() else "int", num))
        elif m.group("char") is not None:
            out.append(("int", str(ord(m.group("char")))))  # 'C': its code, as in C
        elif m.group("name") is not None:
            out.append(("name", m.group("name")))
        elif m.group("member") is not None:
            out.append(("member", m.group("member")))
        elif m.group("str") is not None:
            out.append(("str", m.group("str")))  # a value only as getenv's argument
        else:
            out.append(("op", m.group("op")))
    return tuple(out)


class _Parser:
    def __init__(
        self,
        tokens: tuple[tuple[str, str], ...],
        lookup: Callable[[str], float | None],
        call: Callable[[str, list[float]], float | None] | None = None,
    ):
        self.t = tokens
        self.i = 0
        self.lookup = lookup
        self.call = call
        self.skipping = 0  # > 0 while parsing an operand whose value is not needed

    def peek(self) -> tuple[str, str] | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise _Fail
        self.i += 1
        return tok

    def expr(self) -> float:
        cond = self.binary(0)
        tok = self.peek()
        if tok == ("op", "?"):
            self.take("?")
            a = self.operand(needed=bool(cond))
            self.take(":")
            b = self.operand(needed=not cond)
            return a if cond else b
        return cond

    def operand(self, needed: bool) -> float:
        """Parse an operand; one whose value is not needed (the other branch of ``?:``, the
        right side of a decided ``&&``/``||``) may name what cannot be evaluated."""
        if needed:
            return self.expr()
        self.skipping += 1
        try:
            return self.expr()
        finally:
            self.skipping -= 1

    def member_after_subscripts(self) -> str:
        """The fields named after the subscripts starting here (``[i].n`` -> ``.n``)."""
        j, depth = self.i, 0
        while j < len(self.t):
            tok = self.t[j]
            if tok[0] == "op" and tok[1] == "[":
                depth += 1
            elif tok[0] == "op" and tok[1] == "]":
                depth -= 1
            elif depth == 0:
                break
            j += 1
        fields = []
        while j < len(self.t) and self.t[j][0] == "member":
            fields.append(self.t[j][1])
            j += 1
        return "".join(fields)

    def subscript(self, optional: bool) -> float | None:
        """An index; None, its tokens skipped up to the closing ``]``, when it cannot be
        evaluated and ``optional`` (every element has the same value)."""
        if not optional:
            return self.expr()
        start = self.i
        try:
            return self.expr()
        except _Fail:
            self.i, depth = start, 0
            while (tok := self.peek()) is not None and not (depth == 0 and tok == ("op", "]")):
                depth += {"[": 1, "]": -1}.get(tok[1], 0) if tok[0] == "op" else 0
                self.i += 1
            return None

    def fail(self) -> float:
        if self.skipping:
            return 0
        raise _Fail

    def binary(self, level: int) -> float:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while (tok := self.peek()) and tok[0] == "op" and tok[1] in _BINARY[level]:
            op = self.take()[1]
            decided = op == "&&" and not left or op == "||" and left
            if decided:
                self.skipping += 1
            try:
                right = self.binary(level + 1)
            finally:
                if decided:
                    self.skipping -= 1
            try:
                left = _apply(op, left, right)
            except _Fail:
                left = self.fail()
        return left

    def unary(self) -> float:
        tok = self.peek()
        if tok is None:
            raise _Fail
        if tok[0] == "op" and tok[1] in "-+!~":
            self.take()
            v = self.unary()
            int(v)  # an operand that is not a finite number fails, whatever the operator
            r = unary(tok[1], v)
            if r is None:
                raise _Fail
            return r
        if tok == ("op", "("):
            # cast like (int) or (size_t) or (unsigned int)
            j = self.i + 1
            while j < len(self.t) and self.t[j][0] == "name" and self.t[j][1] in _CASTS:
                j += 1
            if j > self.i + 1 and j < len(self.t) and self.t[j] == ("op", ")"):
                integer = any(self.t[k][1] not in ("float", "double") for k in range(self.i + 1, j))
                self.i = j + 1
                v = self.unary()
                return cast(v, integer)
            self.take("(")
            v = self.expr()
            self.take(")")
            return v
        return self.primary()

    def primary(self) -> float:
        kind, value = self.take()
        if kind in ("int", "float"):
            number = parse_literal(value, TEXT_DIALECT, floating=kind == "float")
            if number is None:
                raise _Fail
            return number
        if kind != "name":
            raise _Fail
        if value in _NAMED_CASTS and self.peek() == ("op", "<"):
            # static_cast<uint64_t>(x): the type's words up to the closing '>'
            self.take("<")
            words: list[str] = []
            while (tok := self.peek()) is not None and tok != ("op", ">"):
                words.append(self.take()[1])
            self.take(">")
            self.take("(")
            operand = self.expr()
            self.take(")")
            if not words or any(w == "*" for w in words):
                raise _Fail
            return cast(operand, not any(w in ("float", "double") for w in words))
        if value in ("getenv", "std::getenv") and self.t[self.i : self.i + 3 : 2] == (
            ("op", "("),
            ("op", ")"),
        ):
            # ``getenv("N")``: a variable the environment does not set, as when the program
            # runs without it (``s ? atoi(s) : 4096`` takes its default)
            self.i += 3
            return 0
        if value == "strlen" and self.t[self.i : self.i + 3 : 2] == (("op", "("), ("op", ")")):
            # ``strlen(key)`` of a string the host initialised: known by that text
            name = self.t[self.i + 1][1]
            self.i += 3
            length = self.lookup(f"strlen({name})")
            return self.fail() if length is None else length
        if self.peek() == ("op", "("):
            self.take("(")
            args: list[float] = []
            if self.peek() != ("op", ")"):
                args.append(self.expr())
                while self.peek() == ("op", ","):
                    self.take(",")
                    args.append(self.expr())
            self.take(")")
            if value in _CASTS and len(args) == 1:
                return cast(args[0], value not in ("float", "double"))
            if self.call is not None:
                r = self.call(value, args)
                if r is not None:
                    return r
            fn = _FUNCS.get(value) or _FUNCS.get(value.removeprefix("std::"))
            if fn is None or not args and value != "dim3":
                return self.fail()
            try:
                return fn(*args)
            except (ValueError, TypeError, OverflowError) as e:
                if self.skipping:
                    return 0
                raise _Fail from e
        if value in ("true", "false"):
            return int(value == "true")
        if value in ("NULL", "nullptr"):
            return 0
        every = None  # the value of each element of a vector filled with one value
        if self.peek() == ("op", "["):  # an element: ``sizes[1]`` is known as such
            key = value
            # (or a field of each element: ``plan[i].n`` of ``plan[*].n``)
            every = self.lookup(value + "[*]" + self.member_after_subscripts())
            while self.peek() == ("op", "["):
                self.take("[")
                index = self.subscript(every is not None)
                self.take("]")
                key += "[?]" if index is None or index != int(index) else f"[{int(index)}]"
            while (tok := self.peek()) is not None and tok[0] == "member":
                key += tok[1]
                self.i += 1
            value = key
        v = self.lookup(value)
        if v is None and every is not None and value.count("[") == 1:
            v = every  # ``shape[i]`` of ``for (...) shape.push_back(dim)``
        if v is None:
            return self.fail()
        return v


def _apply(op: str, a: float, b: float) -> float:
    integer = isinstance(a, int) and isinstance(b, int)
    r = binary(op, a, b, integer, TEXT_DIALECT)
    if r is None:
        raise _Fail
    return r


_TEMPLATE_CALL = re.compile(r"\b([A-Za-z_][\w:]*)\s*<[\w\s:,*]*>\s*\(")


def evaluate(
    text: str,
    env: Env | None = None,
    _depth: int = 0,
    *,
    functions: Functions | None = None,
    _bound: Mapping[str, float] | None = None,
    _budget: list[int] | None = None,
) -> float | None:
    """The value of ``text`` or None if it cannot be determined. ``functions``: macros and
    host functions a call in ``text`` may name (evaluated with their arguments bound)."""
    if _depth > 12 or len(text) > 2000:
        return None
    if functions and "<" in text:
        text = _TEMPLATE_CALL.sub(
            lambda m: m.group(1) + "(" if _function(functions, m.group(1)) else m.group(0), text
        )
    tokens = tokenize(text)
    if not tokens:
        return None
    env = env if env is not None else {}  # (an empty-looking view may still hold values)

    def lookup(name: str) -> float | None:
        if _bound is not None and name in _bound:
            return _bound[name]
        value = env.get(name)
        if value is None and "::" in name:
            value = env.get(name.rsplit("::", 1)[1])
        if value is None:
            return None
        if isinstance(value, int | float):
            return value
        return evaluate(value, env, _depth + 1, functions=functions)

    def call(name: str, args: list[float]) -> float | None:
        if not args and "." in name:  # w.size() of a std::vector the host sized
            return lookup(name + "()")
        fn = _function(functions, name) if functions else None
        if fn is None or len(args) != len(fn.params):
            return None
        bound: dict[str, float] = {}
        for i, (p, a) in enumerate(zip(fn.params, args, strict=True)):
            integer = fn.integer[i] if i < len(fn.integer) else None
            bound[p] = cast(a, integer) if integer is not None else a
        if fn.steps is not None:
            budget = _budget if _budget is not None else [_MAX_STEPS]
            try:
                r = _execute(fn.steps, dict(bound), env, _depth + 1, functions, budget)
            except _NOT_RUN:
                r = None
        else:
            r = evaluate(
                fn.body, env, _depth + 1, functions=functions, _bound=bound, _budget=_budget
            )
        if r is None or fn.integer_result is None:
            return r
        return cast(r, fn.integer_result)

    parser = _Parser(tokens, lookup, call)
    try:
        result = parser.expr()
        if parser.i != len(tokens):
            return None
    except (_Fail, RecursionError, OverflowError, ValueError):
        return None
    if isinstance(result, float) and (math.isnan(result) or math.isinf(result)):
        return None
    return result


# statements small host functions may run for one expression (calls they make and loop
# trips included): a couple of hundred trips of a small loop (a launch size solved by
# bisection evaluates its expression some 60 times)
_MAX_STEPS = 512


class _Break(Exception):
    pass


# what stops a small function's run: a value not known, the step budget spent
_NOT_RUN = (_Fail, RecursionError, OverflowError, ValueError)


class _Returned(Exception):
    def __init__(self, value: float) -> None:
        self.value = value


def _execute(
    steps: tuple[Step, ...],
    local: dict[str, float],
    env: Env,
    depth: int,
    functions: Functions | None,
    budget: list[int],
) -> float | None:
    """Run a small host function's ``steps`` with its parameters ``local``: the value it
    returns (None when it falls off its end; its locals then hold what it set), raising one
    of ``_NOT_RUN`` when a value it needs is not known or it runs out of ``budget`` (steps
    left, shared with the functions it calls)."""

    def value(expr: str) -> float:
        v = evaluate(expr, env, depth, functions=functions, _bound=local, _budget=budget)
        if v is None:
            raise _Fail
        return v

    def run(block: tuple[Step, ...]) -> None:
        for st in block:
            budget[0] -= 1
            if budget[0] < 0:
                raise _Fail
            if st.kind == "set":
                v = value(st.expr)
                if st.op:
                    old = local.get(st.name)
                    if old is None:
                        raise _Fail
                    v = _apply(st.op, old, v)
                local[st.name] = cast(v, st.integer) if st.integer is not None else v
            elif st.kind == "if":
                run(st.then if value(st.expr) else st.orelse)
            elif st.kind == "loop":
                while value(st.expr):
                    try:
                        run(st.then)
                    except _Break:
                        break
                    run(st.orelse)
                    budget[0] -= 1
                    if budget[0] < 0:
                        raise _Fail
            elif st.kind == "return":
                raise _Returned(value(st.expr))
            elif st.kind == "break":
                raise _Break
            else:
                raise _Fail

    try:
        run(steps)
    except _Returned as r:
        return r.value
    except _Break as e:  # outside a loop
        raise _Fail from e
    return None


def run_for_effects(
    fn: TextFunction,
    args: Sequence[float | None],
    env: Env,
    functions: Functions | None = None,
    pointees: Mapping[str, float] | None = None,
) -> dict[str, float] | None:
    """Run a small host function (``fn.steps``) with its arguments (None: not known, as a
    pointer's own value is) for the locals it leaves: ``p[0]`` for what it stored through
    pointer parameter ``p`` (``pointees``: what those held before). None when it cannot
    run: a value it needs is unknown, or it runs out of steps."""
    if fn.steps is None:
        return None
    local: dict[str, float] = dict(pointees or {})
    for i, (p, a) in enumerate(zip(fn.params, args, strict=False)):
        if a is not None:
            integer = fn.integer[i] if i < len(fn.integer) else None
            local[p] = cast(a, integer) if integer is not None else a
    try:
        _execute(fn.steps, local, env, 0, functions, [_MAX_STEPS])
    except _NOT_RUN:
        return None
    return local


def _function(functions: Functions | None, name: str) -> TextFunction | None:
    if not functions:
        return None
    fn = functions.get(name)
    if fn is None and "::" in name:
        fn = functions.get(name.rsplit("::", 1)[1])
    return fn


# the digits of a number literal just before a point of the text (C++14 digit separators)
_NUMBER_TAIL = re.compile(r"(?<![\w.])\.?[0-9][\w'.]*$")


def split_args(text: str, angles: bool = False) -> list[str]:
    """Split ``a, f(b, c), d`` at top-level commas (outside parentheses, brackets, braces;
    angle brackets may be comparisons, so ``A, B<2, 3>`` gives three parts). ``angles``: a
    template argument list, whose angle brackets nest (``Vector<double, int>, 4`` is two:
    C++ wants a comparison there in parentheses). Commas and brackets inside a string or
    character literal (``printf("%d, %d", a, b)``, ``','``) are the literal's, as the
    preprocessor reads them."""
    opening, closing = ("([{<", ")]}>") if angles else ("([{", ")]}")
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    quote = ""  # the literal's quote while inside one
    escaped = False
    for ch in text:
        if quote:
            cur.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch == '"' or (ch == "'" and not _NUMBER_TAIL.search("".join(cur))):
            quote = ch  # (a quote inside a number, ``1'000'000``, separates digits)
        elif ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def inner_text(text: str) -> str:
    """``(a, (b + 1) / 2)`` -> ``a, (b + 1) / 2``: the text inside one outer pair of
    parentheses or braces (``str.strip("()")`` would also eat the inner ones); ``(a) * (b)``
    is returned whole."""
    text = text.strip()
    if len(text) >= 2 and (text[0], text[-1]) in (("(", ")"), ("{", "}")):
        depth = 0
        for i, ch in enumerate(text):
            depth += 1 if ch in "({[" else -1 if ch in ")}]" else 0
            if depth == 0:
                return text[1:-1].strip() if i == len(text) - 1 else text
    return text


def evaluate_dim3(
    text: str, env: Env | None = None, functions: Functions | None = None
) -> tuple[int, int, int] | None:
    """Evaluate a launch dimension: ``256``, ``dim3(a, b)``, ``{a, b, c}`` -> (x, y, z)."""
    text = text.strip()
    for _ in range(4):  # `grid` declared as `dim3 grid(...)`: follow the name
        alias = env.get(text) if env is not None and re.fullmatch(r"[A-Za-z_]\w*", text) else None
        if not isinstance(alias, str):
            break
        text = alias.strip()
    m = re.fullmatch(r"(?:dim3\s*)?[({](.*)[)}]", text, re.S)
    parts = split_args(m.group(1)) if m and (text.startswith(("dim3", "{"))) else [text]
    if not 1 <= len(parts) <= 3:
        return None
    values = [evaluate(p, env, functions=functions) for p in parts]
    if any(v is None or v < 0 for v in values):
        return None
    dims = [int(v) for v in values if v is not None] + [1] * (3 - len(values))
    return dims[0], dims[1], dims[2]
