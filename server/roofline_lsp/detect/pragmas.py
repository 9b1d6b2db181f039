"""OpenMP/OpenACC pragmas: parse a ``#pragma omp|acc`` line into directive words and clauses,
find the statement a pragma applies to, and read the directive of a ``_Pragma`` operator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tree_sitter import Node

from roofline_lsp.model.kernel import Clause
from roofline_lsp.syntax.cexpr import split_args
from roofline_lsp.syntax.expr import text
from roofline_lsp.syntax.macro_substitution import substitute_macro

_OMP_DIRECTIVE_WORDS = frozenset(
    [
        "target",
        "teams",
        "distribute",
        "parallel",
        "for",
        "do",
        "simd",
        "loop",
        "data",
        "enter",
        "exit",
        "update",
        "declare",
        "end",
        "begin",
        "variant",
        "single",
        "master",
        "masked",
        "sections",
        "section",
        "task",
        "taskloop",
        "atomic",
        "critical",
        "barrier",
        "ordered",
    ]
)
_ACC_DIRECTIVE_WORDS = frozenset(
    [
        "parallel",
        "kernels",
        "serial",
        "loop",
        "data",
        "enter",
        "exit",
        "update",
        "host_data",
        "declare",
        "routine",
        "atomic",
        "wait",
        "cache",
    ]
)


@dataclass(frozen=True)
class Pragma:
    """A parsed ``#pragma omp|acc ...`` line."""

    family: str  # "omp" | "acc" | other
    words: tuple[str, ...]  # directive words, e.g. ("target", "teams", "distribute")
    clauses: tuple[Clause, ...]

    @property
    def directive(self) -> str:
        return " ".join(self.words)


def parse_pragma(text: str) -> Pragma:
    """Split pragma argument text (``omp target teams map(to: a[0:n]) collapse(2)``). An
    OpenMP ``metadirective`` is the directive it selects on a GPU (``_gpu_variant``)."""
    text = re.sub(r"\\\r?\n", " ", text).strip()
    family, _, rest = text.partition(" ")
    family = family.strip()
    if family == "omp" and re.match(r"(?:begin\s+)?metadirective\b", rest.strip()):
        return parse_pragma("omp " + _gpu_variant(rest))
    vocab = _OMP_DIRECTIVE_WORDS if family == "omp" else _ACC_DIRECTIVE_WORDS
    words: list[str] = []
    clauses: list[Clause] = []
    i, n = 0, len(rest)
    while i < n:
        while i < n and (rest[i].isspace() or rest[i] == ","):
            i += 1
        m = re.match(r"[A-Za-z_][A-Za-z_0-9]*", rest[i:])
        if not m:
            i += 1
            continue
        word = m.group(0)
        i += len(word)
        j = i
        while j < n and rest[j] == " ":
            j += 1
        args = None
        if j < n and rest[j] == "(":
            depth, k = 0, j
            while k < n:
                if rest[k] == "(":
                    depth += 1
                elif rest[k] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            args = rest[j + 1 : k]
            i = k + 1
        if args is None and not clauses and word in vocab:
            words.append(word)
            continue
        clauses.append(_clause(word, args))
    return Pragma(family, tuple(words), tuple(clauses))


# a context selector an offloaded region on a GPU matches: a GPU device (``kind(gpu)``,
# ``kind(nohost)``, ``arch(nvptx)``/``arch(amdgcn)``) or being inside ``target``
_GPU_SELECTOR = re.compile(
    r"kind\s*\(\s*(?:gpu|nohost)\s*\)|arch\s*\(\s*\"?(?:nvptx|amdgcn)|construct\s*=\s*\{[^}]*target"
)


def _gpu_variant(rest: str) -> str:
    """The directive a ``metadirective when(selector: directive) otherwise(directive)``
    selects on a GPU: the first ``when`` whose selector a GPU matches, else its
    ``otherwise`` (or ``default``) directive, else none (an empty directive)."""
    fallback = ""
    for c in parse_pragma("omp " + re.sub(r"^\s*(?:begin\s+)?metadirective", "", rest)).clauses:
        args = c.text[len(c.name) + 1 : -1]  # ``when(<args>)``
        if c.name == "when":
            # ``selector: directive``, the colon outside the selector's braces and parentheses
            depth = 0
            for i, ch in enumerate(args):
                if ch in "({[":
                    depth += 1
                elif ch in ")}]":
                    depth -= 1
                elif ch == ":" and depth == 0:
                    if _GPU_SELECTOR.search(args[:i]):
                        return args[i + 1 :]
                    break
        elif c.name in ("otherwise", "default") and not fallback:
            fallback = args
    return fallback


@dataclass(frozen=True)
class LoopSharing:
    """How an OpenACC ``loop`` shares its iterations: over ``collapse`` nested loops, among
    the gangs (``gang``) or only among a gang's workers and vector lanes."""

    collapse: int
    gangs: bool


def acc_loop_sharing(p: Pragma) -> LoopSharing | None:
    """An OpenACC ``loop`` (or ``parallel loop``/``kernels loop``) directive's sharing, None
    when it shares nothing (``loop seq``) or is no loop directive.

    ``gang``, ``worker`` and ``vector`` say which levels of parallelism run the iterations,
    ``num_gangs``/``num_workers``/``vector_length`` how many of each exist: neither changes
    how many times the body runs, which is the loop's trip count. A loop with no level clause
    (or ``auto``/``independent`` only) is the compiler's choice: gang (and vector) for the
    outermost loop, as NVHPC and GCC do."""
    if p.family != "acc" or "loop" not in p.words:
        return None
    names = {c.name for c in p.clauses}
    if "seq" in names:
        return None
    collapse = 1
    for c in p.clauses:
        if c.name == "collapse" and c.items:
            m = re.match(r"\s*(?:force\s*:\s*)?(\d+)", c.items[0])
            if m:
                collapse = max(int(m.group(1)), 1)
    levels = names & {"gang", "worker", "vector"}
    return LoopSharing(collapse, "gang" in levels or not levels)


_DATA_CLAUSES = frozenset(
    ["map", "copy", "copyin", "copyout", "create", "present", "to", "from", "deviceptr"]
)


# the start of a data clause's array section: its variable (a method's ``this->a`` is a)
# and the opening bracket
SECTION_START = r"\s*(?:this\s*->\s*)?([A-Za-z_]\w*)\s*\["


def mapped_sections(clauses: Iterable[Clause]) -> frozenset[str]:
    """Variables that data clauses move as array sections (``map(to: a[0:n])``,
    ``copyin(b[:n])``): pointers or arrays on the device, whatever their declared type says
    (``auto p = v.data()``)."""
    out: set[str] = set()
    for c in clauses:
        if c.name in _DATA_CLAUSES:
            for item in c.items:
                m = re.fullmatch(SECTION_START + r"[^\]]*:.*", item, re.S)
                if m:
                    out.add(m.group(1))
    return frozenset(out)


def _clause(name: str, args: str | None) -> Clause:
    if args is None:
        return Clause(name, name)
    modifier, items_text = "", args
    # map(tofrom: a), reduction(+: s), map(always, to: x), depend(in: y)
    m = re.match(r"\s*([^:()\[\]]*?)\s*:(?!:)(.*)$", args, re.S)
    if m and name in ("map", "reduction", "depend", "defaultmap", "schedule", "copy", "linear"):
        modifier, items_text = m.group(1).strip(), m.group(2)
    items = tuple(s for s in (x.strip() for x in split_args(items_text)) if s)
    return Clause(name, f"{name}({args})", modifier, items)


def is_statement(node: Node) -> bool:
    return node.is_named and node.type not in ("comment",) and not node.type.startswith("preproc")


def statement_after(node: Node, operators: frozenset[int] = frozenset()) -> Node | None:
    """The statement an OpenMP/OpenACC pragma applies to: the next named sibling, skipping
    comments and stacked pragmas (``_Pragma`` operators too: the nodes starting at
    ``operators``' bytes), climbing out of ``#ifdef`` wrappers whose last child is the
    pragma."""
    cur: Node | None = node
    for _ in range(8):
        if cur is None:
            return None
        sib = cur.next_named_sibling
        while sib is not None and sib.type == "comment":
            sib = sib.next_named_sibling
        if sib is not None:
            stacked = sib.start_byte in operators
            if stacked or (
                sib.type == "preproc_call" and text(sib).lstrip("# \t").startswith("pragma")
            ):
                cur = sib  # stacked pragmas: `#pragma omp target` + `#pragma omp teams ...`
                continue
            if sib.type in ("preproc_else", "preproc_elif", "preproc_elifdef"):
                # pragma at the end of an #if branch: the statement follows the whole #if
                cur = cur.parent
                continue
            if is_statement(sib) or sib.type in ("preproc_if", "preproc_ifdef"):
                if sib.type in ("preproc_if", "preproc_ifdef"):
                    inner = [c for c in sib.named_children if is_statement(c)]
                    return inner[0] if inner else None
                return sib
            return None
        parent = cur.parent
        if parent is None or parent.type not in (
            "preproc_if",
            "preproc_ifdef",
            "preproc_else",
            "preproc_elif",
            "preproc_elifdef",
        ):
            return None
        while parent is not None and parent.type in ("preproc_else", "preproc_elif"):
            parent = parent.parent
        cur = parent
    return None


# ``_Pragma("omp parallel for")``: the operator and its string (adjacent literals too)
_PRAGMA_OPERATOR = re.compile(r'_Pragma\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)')
_MACRO_USE = re.compile(r"\s*([A-Za-z_]\w*)\s*(?:\((.*)\))?\s*;?\s*", re.S)

# what a pragma operator's macros may expand to before it is given up
_OPERATOR_DEPTH = 4


def pragma_operator(
    code: str, macros: Mapping[str, tuple[tuple[str, ...] | None, str]]
) -> str | None:
    """The directive a ``_Pragma`` operator written as ``code`` gives: ``omp parallel for``
    for ``_Pragma("omp parallel for")``, and for a macro that expands to such an operator
    (``PRAGMA(omp parallel for)`` with ``#define PRAGMA(x) _Pragma(#x)``, ``OMP_FOR`` with
    ``#define OMP_FOR _Pragma("omp parallel for")``; ``macros``: name -> (parameters or
    None, body)). None for any other code."""
    for _ in range(_OPERATOR_DEPTH):
        op = _PRAGMA_OPERATOR.fullmatch(code.strip().removesuffix(";").rstrip())
        if op is not None:
            return _directive(op)
        use = _MACRO_USE.fullmatch(code)
        found = macros.get(use.group(1)) if use is not None else None
        if use is None or found is None:
            return None
        params, body = found
        if params is None:
            if use.group(2) is not None:
                return None
            code = body
        else:
            if use.group(2) is None:
                return None
            args = split_args(use.group(2))
            code = substitute_macro(_stringified(body, params, args), params, args)
    return None


def pragma_lines(code: str) -> str:
    """``code`` with each ``_Pragma("...")`` operator made a ``#pragma`` line of its own
    (a macro's expansion, parsed as statements: ``_Pragma("unroll")`` is ``#pragma
    unroll``)."""
    return _PRAGMA_OPERATOR.sub(lambda m: "\n#pragma " + _directive(m) + "\n", code)


def _directive(op: re.Match[str]) -> str:
    """The directive of a ``_Pragma`` operator's match: its string literals joined, their
    escapes undone."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', op.group(1))
    return re.sub(r"\\(.)", r"\1", "".join(parts)).strip()


def pragma_macros(macros: Mapping[str, tuple[tuple[str, ...] | None, str]]) -> frozenset[str]:
    """The names of ``macros`` that may expand to a ``_Pragma`` operator, directly
    (``#define PRAGMA(x) _Pragma(#x)``) or through others (``#define OMP_TARGET(x)
    PRAGMA(omp target x)``, the Parallel Research Kernels' style), up to
    ``_OPERATOR_DEPTH`` levels."""
    found = {n for n, (_p, body) in macros.items() if "_Pragma" in body}
    for _ in range(_OPERATOR_DEPTH - 1):
        if not found:
            break
        words = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(found))) + r")\b")
        more = {n for n, (_p, body) in macros.items() if n not in found and words.search(body)}
        if not more:
            break
        found |= more
    return frozenset(found)


def _stringified(body: str, params: tuple[str, ...], args: list[str]) -> str:
    """``body`` with each ``#param`` made the string of its argument, as the preprocessor
    makes it (``_Pragma(#x)`` with x = ``omp for``: ``_Pragma("omp for")``)."""
    given = dict(zip(params, args, strict=False))

    def string(m: re.Match[str]) -> str:
        arg = " ".join(given.get(m.group(1), "").split())
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return re.sub(r"(?<!#)#(?!#)\s*([A-Za-z_]\w*)", string, body)


def pragma_text(node: Node) -> str:
    arg = node.child_by_field_name("argument")
    return text(arg)


def is_pragma(node: Node) -> bool:
    """A ``#pragma`` line, however spaced (``# pragma``, ``#\tpragma``: C allows blanks
    between ``#`` and the directive)."""
    directive = node.child_by_field_name("directive")
    return directive is not None and "".join(text(directive).split()) == "#pragma"
