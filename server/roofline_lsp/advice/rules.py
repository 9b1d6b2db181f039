"""Diagnostic rules and quick fixes: what limits a kernel on the exact lines that cause it.

Pure analysis, no LSP: :func:`advise` reads a :class:`~roofline_lsp.analysis.FileReport` (its
tree-sitter nodes and bytes) and the target GPU, and returns :class:`Advice` items with byte
spans and, where the fix is mechanical, a :class:`Fix` made of byte-span replacements that
keep the code compiling. Which rules fire depends on the verdict: advice that only matters for
a compute-bound kernel is not given for a bandwidth-bound one, and the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

from tree_sitter import Node

from roofline_lsp.detect.kernels import Detection, Kernel
from roofline_lsp.engine.analysis import FileReport, KernelReport, shift_line_refs
from roofline_lsp.model.gpus import GpuProfile

Severity = Literal["information", "hint"]

# Where each rule is explained (the README section of the same name).
DOCS_URL = "https://github.com/roofline-lsp/roofline-lsp/blob/main/README.md"


@dataclass(frozen=True)
class Rule:
    code: str
    slug: str
    title: str

    @property
    def anchor(self) -> str:
        """The GitHub anchor of the README heading ``### RL001 fp64-literal``."""
        return f"{self.code.lower()}-{self.slug}"

    @property
    def href(self) -> str:
        return f"{DOCS_URL}#{self.anchor}"


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("RL001", "fp64-literal", "fp64 literal in an fp32 kernel"),
        Rule("RL002", "fp64-arithmetic", "fp64 arithmetic on a GPU with a low fp64 rate"),
        Rule("RL003", "pow-square", "pow(x, 2) instead of x * x"),
        Rule("RL004", "slow-math-in-loop", "division or special function in a hot loop"),
        Rule("RL005", "atomic-same-address", "atomics on one address"),
        Rule("RL006", "warp-divergence", "branch that splits warps on threadIdx"),
        Rule("RL007", "missing-restrict", "pointer parameter without __restrict__ / const"),
        Rule("RL008", "uncoalesced-access", "strided or uncoalesced global access"),
        Rule("RL009", "global-reread", "global data re-read in a loop without reuse"),
        Rule("RL010", "small-launch", "launch configuration too small for the GPU"),
        Rule("RL011", "map-tofrom", "map(tofrom:) where to or from would do"),
        Rule("RL012", "map-in-loop", "data mapped in every iteration of a host loop"),
        Rule("RL100", "model-suggestion", "suggestion from the LLM or the measured profile"),
    )
}


@dataclass(frozen=True)
class TextEdit:
    """Replace bytes ``[start, end)`` of the analysed source with ``new_text``."""

    start: int
    end: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Advice:
    code: str
    kernel: str
    start: int  # byte span in the analysed source
    end: int
    message: str
    severity: Severity = "information"
    fix: Fix | None = None

    @property
    def rule(self) -> Rule:
        return RULES[self.code]


# --------------------------------------------------------------------------------------------
# tree helpers
# --------------------------------------------------------------------------------------------

_FLOAT_LITERAL = re.compile(r"^(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?$|^\d+[eE][+-]?\d+$")
_TWO = frozenset({"2", "2.0", "2.", "2.0f", "2.f", "2.0F", "2.F"})
_SPECIAL = frozenset(
    (  # noqa: SIM905
        "sin cos tan asin acos atan atan2 sinh cosh tanh exp exp2 exp10 expm1 log log2 log10 "
        "log1p pow sqrt cbrt erf erfc tgamma lgamma fmod hypot sincos sinf cosf tanf asinf "
        "acosf atanf atan2f sinhf coshf tanhf expf exp2f exp10f expm1f logf log2f log10f log1pf "
        "powf sqrtf cbrtf erff erfcf fmodf hypotf sincosf"
    ).split()
)
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_ATOMIC = re.compile(r"^atomic(Add|Sub|Max|Min|Inc|Dec|Exch|CAS|And|Or|Xor)(_system|_block)?$")
LOW_FP64_RATE = 1 / 8  # fp64 peak / fp32 peak at or below this is a "low fp64 rate"


def _walk(node: Node) -> Iterator[Node]:
    """All descendants of ``node`` (itself included) in document order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _identifiers(node: Node) -> set[str]:
    return {_text(n) for n in _walk(node) if n.type == "identifier"}


def _mentions_thread_x(node: Node) -> bool:
    return any(
        n.type == "field_expression"
        and _text(n.child_by_field_name("argument")) == "threadIdx"
        and _text(n.child_by_field_name("field")) == "x"
        for n in _walk(node)
    )


def _mentions_builtin_index(node: Node) -> bool:
    return bool(_identifiers(node) & {"threadIdx", "blockIdx"})


def _base_name(node: Node | None) -> str | None:
    """``a`` for ``a``, ``a[i]``, ``a[i][j]``, ``*a``, ``a->x``, ``(a)``."""
    while node is not None:
        if node.type == "identifier":
            return _text(node)
        if node.type in ("subscript_expression", "field_expression", "pointer_expression"):
            node = node.child_by_field_name("argument")
        elif node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        else:
            return None
    return None


def _call_name(call: Node) -> str:
    fn = call.child_by_field_name("function")
    name = _text(fn)
    return name.rsplit("::", 1)[-1]


def _args(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    return [a for a in (args.named_children if args else []) if a.type != "comment"]


def _in_loop(node: Node, stop: Node) -> Node | None:
    """The innermost loop around ``node`` inside ``stop`` (None when there is none)."""
    p = node.parent
    while p is not None and p != stop:
        if p.type in _LOOPS:
            return p
        p = p.parent
    if stop.type in _LOOPS:
        return stop
    return None


def _line_span(source: bytes, node: Node) -> tuple[int, int]:
    """The node's span cut to its first line (diagnostics on the exact line)."""
    end = source.find(b"\n", node.start_byte, node.end_byte)
    return node.start_byte, (node.end_byte if end < 0 else end)


@dataclass
class _Vars:
    """Variables derived from the thread index: ``x`` from threadIdx.x (consecutive threads
    of a warp differ), ``any`` from any of threadIdx/blockIdx; locals declared in the body."""

    x: set[str]
    any: set[str]
    local_arrays: set[str]
    shared: bool


def _thread_vars(kernel: Kernel) -> _Vars:
    body = kernel.body
    x: set[str] = set()
    any_: set[str] = set()
    arrays: set[str] = set()
    shared = False
    if kernel.is_offload:
        loops = _offload_loop_vars(body, kernel)
        if loops:
            x.add(loops[-1])
            any_.update(loops)
    assigns: list[tuple[str, Node]] = []
    for n in _walk(body):
        if n.type == "declaration":
            if any(_text(c) == "__shared__" for c in n.children):
                shared = True
            for d in n.children_by_field_name("declarator"):
                if d.type == "array_declarator":
                    arrays.add(_base_decl_name(d) or "")
        if n.type == "init_declarator":
            name = _base_decl_name(n.child_by_field_name("declarator"))
            value = n.child_by_field_name("value")
            if name and value is not None:
                assigns.append((name, value))
                if n.child_by_field_name("declarator") is not None and (
                    n.child_by_field_name("declarator").type == "array_declarator"  # type: ignore[union-attr]
                ):
                    arrays.add(name)
        elif n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            right = n.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                assigns.append((_text(left), right))
    for _ in range(3):  # a few rounds reach a fixpoint for ordinary index arithmetic
        for name, value in assigns:
            ids = _identifiers(value)
            if _mentions_thread_x(value) or ids & x:
                x.add(name)
            if _mentions_builtin_index(value) or ids & any_:
                any_.add(name)
    return _Vars(x, any_, arrays, shared)


def _base_decl_name(d: Node | None) -> str | None:
    while d is not None:
        if d.type == "identifier":
            return _text(d)
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            ids = [c for c in d.named_children if c.type == "identifier"]
            return _text(ids[0]) if ids else None
        d = nxt
    return None


def _offload_loop_vars(stmt: Node, kernel: Kernel) -> list[str]:
    """The loop variables of the collapsed loop nest an offload pragma applies to."""
    depth = 1
    for c in kernel.clause("collapse"):
        if c.items and c.items[0].strip().isdigit():
            depth = int(c.items[0])
    out: list[str] = []
    node: Node | None = stmt
    while node is not None and node.type == "for_statement" and len(out) < depth:
        init = node.child_by_field_name("initializer")
        name = None
        if init is not None:
            if init.type == "declaration":
                d = init.child_by_field_name("declarator")
                name = _base_decl_name(d.child_by_field_name("declarator") if d else None)
            elif init.type == "assignment_expression":
                name = _text(init.child_by_field_name("left"))
        if name:
            out.append(name)
        body = node.child_by_field_name("body")
        while body is not None and body.type == "compound_statement" and body.named_child_count:
            stmts = [c for c in body.named_children if c.type != "comment"]
            if len(stmts) != 1:
                break
            body = stmts[0]
        node = body
    return out


def _loop_var(loop: Node) -> str | None:
    if loop.type != "for_statement":
        return None
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    if init.type == "declaration":
        d = init.child_by_field_name("declarator")
        return _base_decl_name(d.child_by_field_name("declarator") if d else None)
    if init.type == "assignment_expression":
        left = init.child_by_field_name("left")
        return _text(left) if left is not None and left.type == "identifier" else None
    return None


def _is_fp32_kernel(kernel: Kernel) -> bool:
    """Uses float and never names double (params or body)."""
    types = set()
    for n in _walk(kernel.node if kernel.node is not None else kernel.body):
        if n.type == "primitive_type":
            types.add(_text(n))
    if kernel.is_offload:
        types |= {_text(n) for n in _walk(kernel.body) if n.type == "primitive_type"}
        for _t, _name in kernel.params:
            types.add(_t)
    return "double" not in types and any("float" in t for t in types)


def _fp64_rate(gpu: GpuProfile) -> float:
    return gpu.peak("fp64") / gpu.peak("fp32")


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{x:.2g}"


# --------------------------------------------------------------------------------------------
# rules
# --------------------------------------------------------------------------------------------


class _KernelAdvisor:
    def __init__(
        self, kr: KernelReport, detection: Detection, source: bytes, gpu: GpuProfile
    ) -> None:
        self.kr = kr
        self.k = kr.kernel
        self.detection = detection
        self.source = source
        self.gpu = gpu
        self.verdict = kr.verdict
        self.bound = self.verdict.bound
        self.vars = _thread_vars(self.k)
        self.out: list[Advice] = []
        self.nodes = list(_walk(self.k.body)) if self.k.body is not None else []

    def add(
        self,
        code: str,
        node_or_span: Node | tuple[int, int],
        message: str,
        severity: Severity = "information",
        fix: Fix | None = None,
    ) -> None:
        if isinstance(node_or_span, tuple):
            start, end = node_or_span
        else:
            start, end = _line_span(self.source, node_or_span)
        self.out.append(Advice(code, self.k.name, start, end, message, severity, fix))

    def on(self) -> str:
        return f"on {self.gpu.name}"

    def run(self) -> list[Advice]:
        if self.k.body is None:
            return []
        self.fp64_literals()
        self.fp64_arithmetic()
        self.pow_square()
        self.slow_math()
        self.atomics()
        self.divergence()
        if not self.k.is_offload:
            self.restrict()
        self.access_patterns()
        if self.k.is_offload:
            self.map_clauses()
            self.map_in_loop()
        self.model_suggestions()
        return self.out

    # RL001 ---------------------------------------------------------------------------------
    def fp64_literals(self) -> None:
        if not _is_fp32_kernel(self.k):
            return
        low = _fp64_rate(self.gpu) <= LOW_FP64_RATE
        severity: Severity = "information" if low or self.bound == "compute" else "hint"
        rate = f"1/{round(1 / _fp64_rate(self.gpu))}" if _fp64_rate(self.gpu) < 1 else "full"
        for n in self.nodes:
            if n.type != "number_literal" or not _FLOAT_LITERAL.match(_text(n)):
                continue
            if any(p.type in ("subscript_argument_list", "case_statement") for p in _parents(n)):
                continue
            lit = _text(n)
            self.add(
                "RL001",
                n,
                f"`{lit}` is a double literal: the expression it is in is computed in fp64 "
                f"(fp64 runs at {rate} of the fp32 rate {self.on()}) and converted back. "
                f"Write `{lit}f` to keep this fp32 kernel in fp32.",
                severity,
                Fix(f"Use the float literal `{lit}f`", (TextEdit(n.end_byte, n.end_byte, "f"),)),
            )

    # RL002 ---------------------------------------------------------------------------------
    def fp64_arithmetic(self) -> None:
        v = self.verdict
        if _fp64_rate(self.gpu) > LOW_FP64_RATE or v.bound != "compute" or v.deciding != "fp64":
            return
        decls = [
            n
            for n in _walk(self.k.node if self.k.node is not None else self.k.body)
            if n.type == "primitive_type" and _text(n) == "double"
        ]
        ai, ridge = v.ai.get("fp64"), v.ridge.get("fp64")
        seen: set[int] = set()
        for n in decls:
            line = n.start_point.row
            if line in seen:
                continue
            seen.add(line)
            self.add(
                "RL002",
                n.parent if n.parent is not None and n.parent.type != "function_definition" else n,
                f"fp64 arithmetic decides this kernel: fp64 AI {_fmt(ai)} is above the fp64 "
                f"ridge {_fmt(ridge)} {self.on()}, whose fp64 rate is "
                f"1/{round(1 / _fp64_rate(self.gpu))} of fp32, so it is compute-bound. If the "
                "accuracy allows, compute in float (keep double only for accumulators).",
            )
            if len(seen) >= 3:
                break

    # RL003 ---------------------------------------------------------------------------------
    def pow_square(self) -> None:
        severity: Severity = "information" if self.bound == "compute" else "hint"
        for n in self.nodes:
            if n.type != "call_expression" or _call_name(n) not in ("pow", "powf"):
                continue
            args = _args(n)
            if len(args) != 2 or _text(args[1]).replace(" ", "") not in _TWO:
                continue
            base = args[0]
            if not _pure(base):
                self.add(
                    "RL003",
                    n,
                    "pow(x, 2) runs the general power function (exp/log, tens of "
                    "instructions); store x in a variable and multiply it by itself.",
                    severity,
                )
                continue
            x = _text(base)
            simple = base.type in (
                "identifier",
                "field_expression",
                "subscript_expression",
                "parenthesized_expression",
            )
            xx = f"{x} * {x}" if simple else f"({x}) * ({x})"
            if n.parent is None or n.parent.type not in _NO_PARENS_NEEDED:
                xx = f"({xx})"
            self.add(
                "RL003",
                n,
                f"`{_text(n)}` runs the general power function (exp/log, tens of "
                f"instructions per call); `{xx}` is one multiply.",
                severity,
                Fix(f"Replace with `{xx}`", (TextEdit(n.start_byte, n.end_byte, xx),)),
            )

    # RL004 ---------------------------------------------------------------------------------
    def slow_math(self) -> None:
        if self.bound != "compute":
            return
        lines: set[int] = set()
        for n in self.nodes:
            what = None
            if n.type == "call_expression" and _call_name(n) in _SPECIAL:
                if (
                    _call_name(n) in ("pow", "powf")
                    and len(_args(n)) == 2
                    and (_text(_args(n)[1]).replace(" ", "") in _TWO)
                ):
                    continue  # RL003
                what = f"`{_call_name(n)}`"
                hint = (
                    "use the fast intrinsic (`__expf`, `__sinf`, `__logf`, `rsqrtf`...) if "
                    "its accuracy is enough, or `-use_fast_math`"
                )
            elif n.type == "binary_expression" and _op(n) == "/":
                right = n.child_by_field_name("right")
                if right is None or (right.type == "number_literal" and "." not in _text(right)):
                    continue
                what = "division"
                hint = (
                    "multiply by a reciprocal computed once outside the loop, or use "
                    "`__fdividef` where the accuracy allows"
                )
            if what is None:
                continue
            loop = _in_loop(n, self.k.body)
            if loop is None or n.start_point.row in lines:
                continue
            lines.add(n.start_point.row)
            self.add(
                "RL004",
                n,
                f"{what} in a loop of a compute-bound kernel {self.on()}: it takes many "
                f"instructions on the special-function units; {hint}.",
            )

    # RL005 ---------------------------------------------------------------------------------
    def atomics(self) -> None:
        for n in self.nodes:
            if n.type != "call_expression" or not _ATOMIC.match(_call_name(n)):
                continue
            args = _args(n)
            if not args:
                continue
            addr = args[0]
            if _mentions_builtin_index(addr) or _identifiers(addr) & self.vars.any:
                continue
            if self.k.is_offload and _identifiers(addr) & self.vars.any:
                continue
            if self._guarded_to_one_thread(n):
                continue
            self.add(
                "RL005",
                n,
                f"every thread runs `{_call_name(n)}` on the same address "
                f"(`{_text(addr)}`): the updates serialize in L2. Reduce within the warp "
                "(`__shfl_down_sync`) and the block (shared memory) first and issue one "
                "atomic per block.",
            )

    def _guarded_to_one_thread(self, node: Node) -> bool:
        for p in _parents(node):
            if p == self.k.body:
                return False
            if p.type == "if_statement":
                cond = p.child_by_field_name("condition")
                if (
                    cond is not None
                    and "==" in _text(cond)
                    and (_mentions_builtin_index(cond) or _identifiers(cond) & self.vars.any)
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
            for b in _walk(cond):
                if b.type != "binary_expression" or _op(b) not in ("%", "&"):
                    continue
                left, right = b.child_by_field_name("left"), b.child_by_field_name("right")
                if left is None or right is None:
                    continue
                if not (_mentions_thread_x(left) or _identifiers(left) & self.vars.x):
                    continue
                try:
                    k = int(_text(right).rstrip("uUlL"), 0)
                except ValueError:
                    continue
                period = k if _op(b) == "%" else k + 1
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
                        f"`{_text(b)}` splits every warp: {cost}. Branch on a warp-uniform "
                        "value (e.g. `threadIdx.x / 32`) or reorder the data so neighbouring "
                        "threads take the same path.",
                        sev,
                    )
                    break

    # RL007 ---------------------------------------------------------------------------------
    def restrict(self) -> None:
        fn = self.k.node
        if fn is None:
            return
        decl = _function_declarator(fn)
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
        written = _written_names(self.k.body)
        for p, d in pointers:
            quals = {_text(c) for c in d.children if c.type == "type_qualifier"}
            if quals & {"__restrict__", "__restrict", "restrict"}:
                continue
            name = _base_decl_name(d) or "?"
            const = any(_text(c) == "const" for c in p.children if c.type == "type_qualifier")
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
            name = _base_name(n.child_by_field_name("argument"))
            if name is None or name in self.vars.local_arrays or _is_subscript_of_subscript(n):
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
            if name not in reread and not self.vars.shared and not _is_write_target(n):
                loop = _in_loop(n, self.k.body)
                if loop is not None and self._rereads(index, loop):
                    reread.add(name)
                    self._reread(n, name, loop)

    def _thread_stride(self, index: Node) -> str | None:
        """The factor multiplying the warp-varying index, when it is not 1."""
        for b in _walk(index):
            if b.type == "subscript_expression":
                continue
            if b.type != "binary_expression" or _op(b) != "*":
                continue
            left, right = b.child_by_field_name("left"), b.child_by_field_name("right")
            if left is None or right is None:
                continue
            for a, other in ((left, right), (right, left)):
                if (a.type == "identifier" and _text(a) in self.vars.x) or (
                    a.type == "field_expression" and _text(a).replace(" ", "") == "threadIdx.x"
                ):
                    t = _text(other)
                    if t in ("1", "sizeof(float)", "sizeof(double)"):
                        continue
                    if _identifiers(other) & self.vars.x or _mentions_thread_x(other):
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
        var = _loop_var(loop)
        ids = _identifiers(index)
        if var is None or var not in ids:
            return False
        if self.k.is_offload:
            return False  # iterations of an offloaded loop are the threads
        # the same elements for every thread that shares this index (no warp-varying index)
        return not (ids & self.vars.x or _mentions_thread_x(index))

    def _reread(self, n: Node, name: str, loop: Node) -> None:
        sev: Severity = "information" if self.bound == "bandwidth" else "hint"
        self.add(
            "RL009",
            n,
            f"`{_text(n)}` is read from global memory in a loop, and every thread of the block "
            f"reads the same elements: load a tile of `{name}` into `__shared__` memory once "
            "per block (then `__syncthreads()`) and read it from there; the reuse raises the "
            "arithmetic intensity"
            + (f", which is what limits this kernel {self.on()}." if sev == "information" else "."),
            sev,
        )

    # RL011 ---------------------------------------------------------------------------------
    def map_clauses(self) -> None:
        written = _written_names(self.k.body)
        used = _identifiers(self.k.body)
        pragma = self.source[self.k.name_span.start_byte : self.k.name_span.end_byte]
        base = self.k.name_span.start_byte
        for clause in self.k.clauses:
            name = clause.name
            if not (
                (name == "map" and clause.modifier in ("tofrom", ""))
                or name in ("copy", "pcopy", "present_or_copy")
            ):
                continue
            items = [(it, _item_name(it)) for it in clause.items]
            read_only = [it for it, nm in items if nm and nm in used and nm not in written]
            if not read_only:
                continue
            rest = [it for it, _nm in items if it not in read_only]
            span = _clause_span(pragma, clause.text)
            names = ", ".join(f"`{_item_name(it)}`" for it in read_only)
            shown = f"{name}(tofrom:)" if name == "map" else f"{name}()"
            better = "map(to:)" if name == "map" else "copyin()"
            msg = (
                f"{names} {'is' if len(read_only) == 1 else 'are'} only read in this region "
                f"but {shown} also copies {'it' if len(read_only) == 1 else 'them'} back to the "
                f"host: use {better} and save the device-to-host transfer."
            )
            fix = None
            if span is not None:
                ro = ", ".join(read_only)
                new = f"map(to: {ro})" if name == "map" else f"copyin({ro})"
                if rest:
                    mod = f"{clause.modifier}: " if clause.modifier else ""
                    keep = f"{name}({mod}{', '.join(rest)})"
                    new = f"{keep} {new}"
                fix = Fix(
                    f"Use {better} for {', '.join(_item_name(it) for it in read_only)}",
                    (TextEdit(base + span[0], base + span[1], new),),
                )
                where = (base + span[0], base + span[1])
            else:
                where = self._pragma_line()
            self.add("RL011", where, msg, "information", fix)

    def _pragma_line(self) -> tuple[int, int]:
        s = self.k.name_span.start_byte
        e = self.source.find(b"\n", s, self.k.name_span.end_byte)
        return s, (self.k.name_span.end_byte if e < 0 else e)

    # RL012 ---------------------------------------------------------------------------------
    def map_in_loop(self) -> None:
        moving = [
            c
            for c in self.k.clauses
            if (c.name == "map" and c.modifier not in ("alloc", "release", "delete"))
            or c.name in ("copy", "copyin", "copyout", "pcopy", "pcopyin", "pcopyout")
        ]
        if not moving or self.k.node is None:
            return
        loop = None
        for p in _parents(self.k.node):
            if p.type == "function_definition":
                break
            if p.type in _LOOPS:
                loop = p
                break
        if loop is None:
            return
        if _data_region_around(loop, self.source):
            return
        data = "target data" if self.k.language == "omp" else "data"
        clauses = " ".join(c.text for c in moving)
        self.add(
            "RL012",
            self._pragma_line(),
            f"the data of this region ({clauses}) is transferred on every iteration of the "
            f"host loop at line {loop.start_point.row + 1}: host-device transfers are far "
            f"slower than DRAM {self.on()}. Map it once around the loop "
            f"(`#pragma {self.k.language} {data} ...`) and use `present`/`update` inside.",
        )

    # RL100 ---------------------------------------------------------------------------------
    def model_suggestions(self) -> None:
        v = self.verdict
        if v.source == "static" or not v.suggestions:
            return
        starts = _line_starts(self.source)
        who = "the LLM" if v.source == "llm" else "the measured profile"
        for s in v.suggestions:
            line = s.line - 1
            if not 0 <= line < len(starts):
                continue
            start = starts[line]
            end = self.source.find(b"\n", start)
            end = len(self.source) if end < 0 else end
            text = self.source[start:end]
            indent = len(text) - len(text.lstrip())
            self.add("RL100", (start + indent, end), f"{s.message} ({who})", "information")


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


def _op(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return _text(op)


def _parents(node: Node) -> Iterator[Node]:
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def _pure(node: Node) -> bool:
    """No call, assignment or increment inside: safe to evaluate twice."""
    return not any(
        n.type in ("call_expression", "assignment_expression", "update_expression")
        for n in _walk(node)
    )


def _function_declarator(fn: Node) -> Node | None:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    return d


def _is_subscript_of_subscript(n: Node) -> bool:
    """``a[i]`` inside ``a[i][j]``: only the outer one is checked."""
    return (
        n.parent is not None
        and n.parent.type == "subscript_expression"
        and (n.parent.child_by_field_name("argument") == n)
    )


def _is_write_target(n: Node) -> bool:
    p = n.parent
    if p is None:
        return False
    if p.type == "assignment_expression" and p.child_by_field_name("left") == n:
        return _op(p) == "="
    return False


def _written_names(body: Node) -> set[str]:
    """Names whose memory the body may write: assigned, incremented, passed by address or
    passed bare to a call (conservative)."""
    out: set[str] = set()
    for n in _walk(body):
        if n.type == "assignment_expression":
            name = _base_name(n.child_by_field_name("left"))
            if name:
                out.add(name)
        elif n.type == "update_expression" or (
            n.type == "pointer_expression" and _text(n).startswith("&")
        ):
            name = _base_name(n.child_by_field_name("argument"))
            if name:
                out.add(name)
        elif n.type == "call_expression":
            fname = _call_name(n)
            for a in _args(n):
                if a.type == "identifier" and fname not in _SPECIAL:
                    out.add(_text(a))
                elif fname.startswith("atomic") and a is _args(n)[0]:
                    name = _base_name(a)
                    if name:
                        out.add(name)
    return out


def _item_name(item: str) -> str:
    m = re.match(r"\s*([A-Za-z_]\w*)", item)
    return m.group(1) if m else ""


def _clause_span(pragma: bytes, clause_text: str) -> tuple[int, int] | None:
    """Byte span of ``clause_text`` (``name(args)``) in the pragma's raw bytes."""
    name, _, rest = clause_text.partition("(")
    args = rest[:-1] if rest.endswith(")") else rest
    pattern = re.compile(
        rb"\b"
        + re.escape(name.encode())
        + rb"\s*\(\s*"
        + re.escape(args.strip().encode())
        + rb"\s*\)"
    )
    m = pattern.search(pragma)
    return (m.start(), m.end()) if m else None


_DATA_PRAGMA = re.compile(rb"#\s*pragma\s+(?:omp\s+target\s+data|acc\s+data)\b")
_ENTER_PRAGMA = re.compile(rb"#\s*pragma\s+(?:omp\s+target\s+enter\s+data|acc\s+enter\s+data)\b")


def _data_region_around(loop: Node, source: bytes) -> bool:
    """A structured data region around ``loop`` (``#pragma omp target data`` / ``acc data``
    right before one of its enclosing statements), or an ``enter data`` earlier in the
    function."""
    node: Node | None = loop
    while node is not None and node.type != "function_definition":
        sib = node.prev_named_sibling
        while sib is not None and sib.type == "comment":
            sib = sib.prev_named_sibling
        if sib is not None and sib.type == "preproc_call" and _DATA_PRAGMA.match(sib.text or b""):
            return True
        node = node.parent
    start = node.start_byte if node is not None else 0
    return _ENTER_PRAGMA.search(source, start, loop.start_byte) is not None


def _line_starts(source: bytes) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer(rb"\n", source))
    return starts


def _advice_relevant(kr: KernelReport) -> str:
    """What of a kernel's target verdict its advice depends on, unchanged when the kernel
    only moved (its explanation's line references and suggestion lines move with it)."""
    v = kr.verdicts[0]
    moved = tuple((s.line - kr.kernel.line, s.message) for s in v.suggestions)
    return repr((replace(v, explanation="", terms=(), suggestions=()), moved))


def _moved(a: Advice, delta: int, lines: int) -> Advice:
    """``a`` of a kernel that moved by ``delta`` bytes and ``lines`` lines. Its message's line
    references (the host loop of RL012) are in the kernel or its enclosing function, which
    the kernel's context key covers, so they moved with it."""
    fix = a.fix
    if fix is not None:
        fix = replace(
            fix,
            edits=tuple(replace(e, start=e.start + delta, end=e.end + delta) for e in fix.edits),
        )
    message = shift_line_refs(a.message, lines)
    return replace(a, start=a.start + delta, end=a.end + delta, message=message, fix=fix)


def _small_launches(report: FileReport, gpu: GpuProfile) -> list[Advice]:
    out: list[Advice] = []
    for site in report.detection.launches:
        block = site.block_value
        if block is None:
            continue
        threads = block[0] * block[1] * block[2]
        start = site.span.start_byte
        end = report.detection.source.find(b"\n", start, site.span.end_byte)
        end = site.span.end_byte if end < 0 else end
        if threads < 64 or threads % 32:
            why = (
                f"{threads} threads per block"
                + (
                    " is not a multiple of the 32-thread warp, so lanes idle"
                    if threads % 32
                    else ""
                )
                + (
                    f"; with so few threads per block an {gpu.unit_name} cannot hold enough warps "
                    "to hide memory latency"
                    if threads < 64
                    else ""
                )
            )
            out.append(
                Advice(
                    "RL010",
                    site.kernel,
                    start,
                    end,
                    f"launch of `{site.kernel}`: {why}. Use 128-256 threads per block.",
                )
            )
            continue
        grid = site.grid_value
        if grid is not None:
            blocks = grid[0] * grid[1] * grid[2]
            if blocks < gpu.sm_count:
                out.append(
                    Advice(
                        "RL010",
                        site.kernel,
                        start,
                        end,
                        f"launch of `{site.kernel}`: {blocks} block(s) for the {gpu.sm_count} "
                        f"{gpu.unit_name}s of {gpu.name}, so most of the GPU idles and neither "
                        "its compute nor its bandwidth roof can be reached. Give it at least "
                        f"{gpu.sm_count * 2} blocks (split the work further).",
                    )
                )
    return out


# (context key, GPU, verdict) -> (kernel start byte, kernel line, its advice)
AdviceCache = dict[tuple[str, str, str], tuple[int, int, tuple["Advice", ...]]]


def advise(
    report: FileReport, gpu: GpuProfile, cache: AdviceCache | None = None
) -> tuple[Advice, ...]:
    """Every piece of advice for the kernels of ``report`` on ``gpu`` (the target GPU, whose
    verdict is each KernelReport's first), sorted by position.

    ``cache`` (kept by the caller between analyses of one document, filled here) maps a
    kernel's context key, GPU and verdict to the advice found last time, so an edit re-runs
    the rules only for the kernels it changed; advice is moved with its kernel.
    """
    source = report.detection.source
    out: list[Advice] = []
    fresh: AdviceCache = {}
    for kr in report.kernels:
        if not kr.verdicts:
            continue
        span = kr.kernel.span
        ckey = (kr.key, gpu.name, _advice_relevant(kr))
        hit = cache.get(ckey) if cache is not None and kr.key else None
        if hit is not None:
            delta, lines = span.start_byte - hit[0], kr.kernel.line - hit[1]
            items = tuple(_moved(a, delta, lines) for a in hit[2]) if delta else hit[2]
        else:
            items = tuple(_KernelAdvisor(kr, report.detection, source, gpu).run())
        if kr.key and all(span.start_byte <= a.start and a.end <= span.end_byte for a in items):
            fresh[ckey] = (span.start_byte, kr.kernel.line, items)
        out.extend(items)
    if cache is not None:
        cache.clear()
        cache.update(fresh)
    out.extend(_small_launches(report, gpu))
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for a in sorted(out, key=lambda a: (a.start, a.code)):
        key = (a.code, a.start, a.end)
        if key not in seen:
            seen.add(key)
            unique.append(a)
    return tuple(unique)
