"""Kernel detection: CUDA/HIP ``__global__`` functions, OpenMP and OpenACC offload regions.

Pure analysis: knows nothing of LSP. Works on a tree-sitter tree (see ``parsing.py``) and the
bytes it was parsed from. Every position is a byte offset or a 0-based (row, byte column) point
as tree-sitter gives them; ``line`` fields are 1-based.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from tree_sitter import Node, Tree

from roofline_lsp.syntax.cexpr import evaluate, evaluate_dim3, split_args
from roofline_lsp.syntax.parsing import (
    CaptureMemo,
    captures,
    language_for_path,
    parse,
    top_level_captures,
)

KernelLanguage = Literal["cuda", "hip", "omp", "acc"]


@dataclass(frozen=True)
class Span:
    """A byte range with its 0-based start/end points (row, byte column)."""

    start_byte: int
    end_byte: int
    start_point: tuple[int, int]
    end_point: tuple[int, int]

    @classmethod
    def of(cls, node: Node) -> Span:
        return cls(
            node.start_byte,
            node.end_byte,
            (node.start_point.row, node.start_point.column),
            (node.end_point.row, node.end_point.column),
        )

    def contains(self, byte: int) -> bool:
        return self.start_byte <= byte <= self.end_byte


@dataclass(frozen=True)
class Clause:
    """One OpenMP/OpenACC clause, e.g. ``map(tofrom: a[0:n])`` -> name='map',
    modifier='tofrom', items=('a[0:n]',)."""

    name: str
    text: str
    modifier: str = ""
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class Function:
    """A function definition in the translation unit (``__device__``, ``declare target``,
    or any other function a kernel may call)."""

    name: str
    file: str
    line: int
    span: Span
    qualifiers: tuple[str, ...]  # e.g. ("__device__", "__forceinline__")
    node: Node = field(compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...] | None  # None for object-like macros
    body: str
    line: int
    file: str


@dataclass(frozen=True)
class LaunchSite:
    """``k<<<grid, block, shmem, stream>>>(args)``, ``hipLaunchKernelGGL(k, grid, block, ...)``
    or ``cudaLaunchKernel((void*)k, grid, block, args, shmem, stream)``."""

    kernel: str
    file: str
    line: int
    span: Span
    form: Literal["chevron", "hipLaunchKernelGGL", "cudaLaunchKernel"]
    grid: str
    block: str
    shmem: str | None
    stream: str | None
    args: tuple[str, ...]
    grid_value: tuple[int, int, int] | None = None  # evaluated when constant
    block_value: tuple[int, int, int] | None = None
    shmem_value: int | None = None


@dataclass(frozen=True)
class DataRegion:
    """``target data``, ``target enter/exit data``, ``target update``, ``acc data``..."""

    language: KernelLanguage
    directive: str
    file: str
    line: int
    span: Span
    clauses: tuple[Clause, ...]


@dataclass(frozen=True)
class Kernel:
    name: str  # CUDA: function name; OpenMP/OpenACC: the enclosing function's name
    language: KernelLanguage
    file: str
    line: int  # 1-based line of the __global__ keyword or of the pragma
    end_line: int
    span: Span  # the whole definition / pragma + statement
    name_span: Span  # the identifier (CUDA) or the pragma (OpenMP/OpenACC)
    body_span: Span  # compound statement (CUDA) or the statement the pragma applies to
    # CUDA
    params: tuple[tuple[str, str], ...] = ()  # (type text, name)
    template_params: tuple[str, ...] = ()
    launch_bounds: tuple[str, ...] = ()
    qualifiers: tuple[str, ...] = ()
    # OpenMP / OpenACC
    directive: str = ""  # e.g. "target teams distribute parallel for simd"
    clauses: tuple[Clause, ...] = ()
    # shared
    callees: tuple[str, ...] = ()  # names of Functions (transitively) called from the body
    recovered: bool = False  # found inside an ERROR node
    node: Node = field(compare=False, hash=False, repr=False, default=None)  # type: ignore[assignment]
    body: Node = field(compare=False, hash=False, repr=False, default=None)  # type: ignore[assignment]

    @property
    def is_offload(self) -> bool:
        return self.language in ("omp", "acc")

    def clause(self, name: str) -> tuple[Clause, ...]:
        return tuple(c for c in self.clauses if c.name == name)


K = TypeVar("K")
V = TypeVar("V")


def _reuse(old: dict[K, V], new: dict[K, V], key: K, compute: Callable[[], V]) -> V:
    """``old[key]`` (or ``new[key]``), else ``compute()``; recorded in ``new`` either way."""
    value = old.get(key)
    if value is None:
        value = new.get(key)
    if value is None:
        value = compute()
    new[key] = value
    return value


_Dim3 = tuple[int, int, int] | None
_LaunchValues = tuple[_Dim3, _Dim3, float | None]


@dataclass
class DetectMemo:
    """What detecting one version of a document found, by text, for detecting the next one
    (``detect``'s ``previous``): an edit then costs a walk of what it touched."""

    captures: CaptureMemo = field(default_factory=dict)  # per top-level node
    calls: dict[bytes, tuple[str, ...]] = field(default_factory=dict)  # body text -> called
    # (function body text, offset in it) -> values of the local declarations before it
    locals: dict[tuple[bytes, int], dict[str, str]] = field(default_factory=dict)
    # (launch configuration texts, their environment) -> evaluated grid, block, shmem
    launches: dict[tuple[object, ...], _LaunchValues] = field(default_factory=dict)


@dataclass(frozen=True)
class Detection:
    """Everything detection found in one translation unit."""

    file: str
    kernels: tuple[Kernel, ...]
    functions: dict[str, Function]  # callable functions by name (incl. followed local headers)
    macros: dict[str, Macro]
    constants: dict[str, str]  # constexpr / const / #define values usable in expressions
    launches: tuple[LaunchSite, ...]
    data_regions: tuple[DataRegion, ...]
    source: bytes = field(repr=False, default=b"")
    # function name -> the functions of this file that call it
    callers: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    memo: DetectMemo = field(default_factory=lambda: DetectMemo(), compare=False, repr=False)

    def launches_of(self, kernel: Kernel) -> tuple[LaunchSite, ...]:
        return tuple(s for s in self.launches if s.kernel == kernel.name)


# --------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------

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
_OMP_DATA = ("data", "enter", "exit", "update")
_ACC_KERNELS = ("parallel", "kernels", "serial")
_ACC_DATA = ("data", "enter", "exit", "update", "host_data", "declare")
_NOT_REGIONS = frozenset(
    {"function_definition", "template_declaration", "declaration", "linkage_specification"}
)
_QUALIFIER_MACRO = re.compile(
    r"(\s*(__global__|__device__|__host__|__forceinline__|__noinline__|static|inline|"
    r"extern\s*\"C\"|__launch_bounds__\s*\([^)]*\))\s*)+"
)
_NOT_NAMES = frozenset(
    [
        "void",
        "int",
        "float",
        "double",
        "char",
        "short",
        "long",
        "unsigned",
        "signed",
        "bool",
        "auto",
        "const",
        "static",
    ]
)
MAX_INCLUDE_DEPTH = 4
MAX_INCLUDE_BYTES = 2_000_000


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
    """Split pragma argument text (``omp target teams map(to: a[0:n]) collapse(2)``)."""
    text = re.sub(r"\\\r?\n", " ", text).strip()
    family, _, rest = text.partition(" ")
    family = family.strip()
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


def _node_name(declarator: Node | None) -> str | None:
    """The name declared by a (function) declarator: identifier, A::f, operator, template."""
    while declarator is not None:
        t = declarator.type
        if t in ("identifier", "field_identifier", "qualified_identifier", "destructor_name"):
            return _text(declarator)
        if t == "template_function":
            name = declarator.child_by_field_name("name")
            return _text(name) if name else None
        if t == "operator_name":
            return _text(declarator)
        nxt = declarator.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in declarator.named_children if "identifier" in c.type]
            return _text(named[0]) if named else None
        declarator = nxt
    return None


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _function_declarator(fn: Node) -> Node | None:
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    return d


def _short(name: str) -> str:
    return name.rsplit("::", 1)[-1]


def _enclosing_function(node: Node) -> Node | None:
    p = node.parent
    while p is not None and p.type != "function_definition":
        p = p.parent
    return p


def _qualifiers(fn: Node) -> tuple[str, ...]:
    quals = []
    for c in fn.children:
        if (
            c.type.startswith("__")
            and c.type.endswith("__")
            or c.type
            in (
                "storage_class_specifier",
                "type_qualifier",
                "virtual",
            )
        ):
            quals.append(_text(c))
        if c.type in ("function_declarator", "compound_statement"):
            break
    return tuple(quals)


def _is_statement(node: Node) -> bool:
    return node.is_named and node.type not in ("comment",) and not node.type.startswith("preproc")


def _statement_after(node: Node) -> Node | None:
    """The statement an OpenMP/OpenACC pragma applies to: the next named sibling, skipping
    comments, climbing out of ``#ifdef`` wrappers whose last child is the pragma."""
    cur: Node | None = node
    for _ in range(8):
        if cur is None:
            return None
        sib = cur.next_named_sibling
        while sib is not None and sib.type == "comment":
            sib = sib.next_named_sibling
        if sib is not None:
            if sib.type == "preproc_call" and _text(sib).lstrip("# \t").startswith("pragma"):
                cur = sib  # stacked pragmas: `#pragma omp target` + `#pragma omp teams ...`
                continue
            if sib.type in ("preproc_else", "preproc_elif", "preproc_elifdef"):
                # pragma at the end of an #if branch: the statement follows the whole #if
                cur = cur.parent
                continue
            if _is_statement(sib) or sib.type in ("preproc_if", "preproc_ifdef"):
                if sib.type in ("preproc_if", "preproc_ifdef"):
                    inner = [c for c in sib.named_children if _is_statement(c)]
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


def _pragma_text(node: Node) -> str:
    arg = node.child_by_field_name("argument")
    return _text(arg)


class _Detector:
    def __init__(
        self,
        source: bytes,
        path: str,
        tree: Tree,
        include_depth: int = 0,
        old: DetectMemo | None = None,
    ) -> None:
        self.old = old or DetectMemo()  # the previous version's memo (read only)
        self.memo = DetectMemo()  # this version's: what it used, for the next
        self.source = source
        self.path = path
        self.tree = tree
        self.depth = include_depth
        self.functions: dict[str, Function] = {}
        self.macros: dict[str, Macro] = {}
        self.constants: dict[str, str] = {}
        self.kernels: list[Kernel] = []
        self.launches: list[LaunchSite] = []
        self.data_regions: list[DataRegion] = []
        self.language: KernelLanguage = "hip" if _is_hip(path, source) else "cuda"

    # -- definitions ------------------------------------------------------------------------
    def definitions(self, caps: dict[str, list[Node]]) -> None:
        for node in caps.get("define", []):
            name = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name is not None:
                self.constants.setdefault(_text(name), _text(value).strip())
                self.macros.setdefault(
                    _text(name),
                    Macro(_text(name), None, _text(value).strip(), _line(node), self.path),
                )
        for node in caps.get("macro", []):
            name = node.child_by_field_name("name")
            params = node.child_by_field_name("parameters")
            value = node.child_by_field_name("value")
            pnames = tuple(
                _text(c) for c in (params.named_children if params else []) if c.type != "comment"
            )
            self.macros.setdefault(
                _text(name),
                Macro(_text(name), pnames, _text(value).strip(), _line(node), self.path),
            )
        for decl in caps.get("const.decl", []):
            name = decl.child_by_field_name("declarator")
            value = decl.child_by_field_name("value")
            if name is not None and value is not None and name.type == "identifier":
                self.constants.setdefault(_text(name), _text(value))
        for node in caps.get("include", []):
            path_node = node.child_by_field_name("path")
            if path_node is not None and path_node.type == "string_literal":
                self.follow_include(_text(path_node).strip('"'))

    def follow_include(self, rel: str) -> None:
        if self.depth >= MAX_INCLUDE_DEPTH or not self.path:
            return
        target = os.path.normpath(os.path.join(os.path.dirname(self.path), rel))
        included = _header_definitions(target, self.depth + 1)
        if included is None:
            return
        for name, fn in included.functions.items():
            self.functions.setdefault(name, fn)
        for name, macro in included.macros.items():
            self.macros.setdefault(name, macro)
        for name, value in included.constants.items():
            self.constants.setdefault(name, value)

    # -- functions and CUDA kernels ---------------------------------------------------------
    def function(
        self, fn: Node, recovered: bool = False, macro_quals: dict[int, str] | None = None
    ) -> None:
        """Record a function definition: a kernel when it has ``__global__`` (or, in a
        re-parse with qualifier macros blanked, such a macro in ``macro_quals``: byte -> body)."""
        fdecl = _function_declarator(fn)
        if fdecl is None:
            return
        name = _node_name(fdecl.child_by_field_name("declarator"))
        if not name or name in _NOT_NAMES:
            return
        quals = _qualifiers(fn)
        global_row: int | None = next(
            (c.start_point.row for c in fn.children if c.type == "__global__"), None
        )
        if macro_quals:
            prev = fn.prev_sibling
            lo = prev.end_byte if prev is not None else 0
            head = [(b, q) for b, q in macro_quals.items() if lo <= b < fdecl.start_byte]
            quals = (*quals, *(q for _, q in head))
            for b, q in head:
                if "__global__" in q and global_row is None:
                    global_row = self.source.count(b"\n", 0, b)
        body = fn.child_by_field_name("body")
        if global_row is None:
            if self.in_declare_target(fn):
                quals = (*quals, "declare target")
            func = Function(_short(name), self.path, _line(fn), Span.of(fn), quals, fn)
            known = self.functions.get(func.name)
            if known is None or (known.file != self.path and func.file == self.path):
                self.functions[func.name] = func
            return
        if body is None:
            return
        params = []
        plist = fdecl.child_by_field_name("parameters")
        for p in plist.named_children if plist else []:
            if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                continue
            pname = _node_name(p.child_by_field_name("declarator")) or ""
            ptext = _text(p)
            ptype = ptext[: ptext.rfind(pname)].strip() if pname else ptext
            params.append((ptype, pname))
        template: tuple[str, ...] = ()
        if fn.parent is not None and fn.parent.type == "template_declaration":
            tpl = fn.parent.child_by_field_name("parameters")
            template = tuple(_text(c) for c in tpl.named_children) if tpl else ()
        bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
        name_node = fdecl.child_by_field_name("declarator")
        while name_node is not None and name_node.type not in (
            "identifier",
            "field_identifier",
            "qualified_identifier",
        ):
            name_node = name_node.child_by_field_name("name") or name_node.child_by_field_name(
                "declarator"
            )
        self.kernels.append(
            Kernel(
                name=_short(name),
                language=self.language,
                file=self.path,
                line=global_row + 1,
                end_line=fn.end_point.row + 1,
                span=Span.of(fn),
                name_span=Span.of(name_node or fdecl),
                body_span=Span.of(body),
                params=tuple(params),
                template_params=template,
                launch_bounds=tuple(_text(c) for c in bounds.named_children) if bounds else (),
                qualifiers=quals,
                recovered=recovered,
                node=fn,
                body=body,
            )
        )

    def in_declare_target(self, node: Node) -> bool:
        return any(a <= node.start_byte < b for a, b in self.declare_target_ranges)

    declare_target_ranges: list[tuple[int, int]] = []

    def recover(self) -> None:
        """Kernels whose parse a macro broke: re-parse each ``__global__ ... { ... }`` alone,
        in a copy of the file where everything else is blanked (so positions stay valid)."""
        found = {k.span.start_byte for k in self.kernels}
        covered = [(k.span.start_byte, k.span.end_byte) for k in self.kernels]
        for m in re.finditer(rb"\b__global__\b", self.source):
            start = m.start()
            if any(a <= start < b for a, b in covered):
                continue
            end = _definition_end(self.source, m.end())
            if end is None:
                continue
            # keep a `template <...>` header right before the kernel
            tpl = re.search(rb"template\s*<[^;{}]*>\s*$", self.source[max(0, start - 400) : start])
            region_start = max(0, start - 400) + tpl.start() if tpl else start
            masked = bytearray(_mask(self.source, region_start, end))
            # blank what stands between the parameter list and the body (attribute macros)
            brace = self.source.find(b"{", start, end)
            close = _params_end(self.source, m.end(), brace)
            if close is not None:
                masked[close + 1 : brace] = re.sub(rb"[^\n]", b" ", masked[close + 1 : brace])
            tree = parse(bytes(masked), language_for_path(self.path))
            for node in captures("cuda-kernels", tree.root_node).get("function", []):
                if node.start_byte in found or not (region_start <= node.start_byte < end):
                    continue
                if any(c.type == "__global__" for c in node.children):
                    self.function(node, recovered=True)
                    found.add(node.start_byte)

    def recover_macros(self) -> None:
        """Kernels and device functions declared through qualifier macros
        (``#define GLOBAL __global__``), which the grammar cannot see through: re-parse a copy
        with those macro names blanked (offsets unchanged) and read the definitions there."""
        quals = {
            m.name: m.body
            for m in self.macros.values()
            if m.params is None and m.body and _QUALIFIER_MACRO.fullmatch(m.body)
        }
        if not quals:
            return
        pattern = re.compile(rb"\b(" + b"|".join(re.escape(q.encode()) for q in quals) + rb")\b")
        hits: dict[int, str] = {}
        chunks = bytearray(self.source)
        for m in pattern.finditer(self.source):
            line_start = self.source.rfind(b"\n", 0, m.start()) + 1
            if self.source[line_start : m.start()].lstrip().startswith(b"#"):
                continue  # the #define itself, or another directive
            hits[m.start()] = quals[m.group(1).decode()]
            chunks[m.start() : m.end()] = b" " * (m.end() - m.start())
        if not hits:
            return
        known = {k.line for k in self.kernels}
        tree = parse(bytes(chunks), language_for_path(self.path))
        for node in captures("cuda-kernels", tree.root_node).get("function", []):
            prev = node.prev_sibling
            lo = prev.end_byte if prev is not None else 0
            if not any(lo <= b < node.end_byte for b in hits):
                continue
            before = len(self.kernels)
            self.function(node, recovered=True, macro_quals=hits)
            if len(self.kernels) > before:
                k = self.kernels[-1]
                if k.line in known:
                    self.kernels.pop()
                elif k.name in self.functions and self.functions[k.name].file == self.path:
                    del self.functions[k.name]  # the misparse of the first pass

    # -- pragmas ------------------------------------------------------------------------------
    def pragmas(self, nodes: list[Node]) -> None:
        parsed = [(n, parse_pragma(_pragma_text(n))) for n in nodes]
        self.declare_target_ranges = []
        open_at: int | None = None
        for node, pr in parsed:
            if pr.family == "omp" and pr.words[:2] == ("declare", "target") and not pr.clauses:
                open_at = node.end_byte
            elif (
                pr.family == "omp"
                and pr.words[:1] in (("end",), ("end",))
                and "target" in (pr.words)
            ):
                if open_at is not None:
                    self.declare_target_ranges.append((open_at, node.start_byte))
                open_at = None
            elif pr.family == "omp" and pr.words[:1] == ("begin",) and "target" in pr.words:
                open_at = node.end_byte
        if open_at is not None:
            self.declare_target_ranges.append((open_at, len(self.source)))
        inner: set[int] = set()
        for node, pr in parsed:
            if node.start_byte in inner or pr.family not in ("omp", "acc") or not pr.words:
                continue
            words = pr.words
            is_kernel = (
                pr.family == "omp"
                and words[0] == "target"
                and (words[1:2] or ("",))[0] not in _OMP_DATA
            ) or (pr.family == "acc" and words[0] in _ACC_KERNELS)
            is_data = (
                pr.family == "omp"
                and words[0] == "target"
                and words[1:2] != ()
                and words[1] in _OMP_DATA
            ) or (pr.family == "acc" and words[0] in _ACC_DATA)
            if is_data:
                family: KernelLanguage = "omp" if pr.family == "omp" else "acc"
                self.data_regions.append(
                    DataRegion(
                        family, pr.directive, self.path, _line(node), Span.of(node), pr.clauses
                    )
                )
                continue
            if not is_kernel:
                continue
            stmt = _statement_after(node) if not _inside_error(node) else None
            if stmt is None or stmt.type in _NOT_REGIONS:
                stmt = self.recover_statement(node)
            if stmt is None:
                continue
            directive, clauses = pr.directive, list(pr.clauses)
            # stacked or nested worksharing pragmas belong to this region
            for other, opr in parsed:
                if other is node or opr.family != pr.family:
                    continue
                stacked = node.end_byte <= other.start_byte < stmt.start_byte
                nested = stmt.start_byte <= other.start_byte < stmt.end_byte
                if stacked or (nested and opr.words and opr.words[0] != "target"):
                    inner.add(other.start_byte)
                    if stacked or opr.words[0] in ("teams", "distribute", "parallel", "loop"):
                        directive += " | " + opr.directive
                        clauses.extend(opr.clauses)
            fn = _enclosing_function(node)
            fdecl = _function_declarator(fn) if fn is not None else None
            fname = (_node_name(fdecl.child_by_field_name("declarator")) if fdecl else "") or ""
            self.kernels.append(
                Kernel(
                    name=fname or "<file scope>",
                    language="omp" if pr.family == "omp" else "acc",
                    file=self.path,
                    line=_line(node),
                    end_line=stmt.end_point.row + 1,
                    span=Span(
                        node.start_byte,
                        stmt.end_byte,
                        (node.start_point.row, node.start_point.column),
                        (stmt.end_point.row, stmt.end_point.column),
                    ),
                    name_span=Span.of(node),
                    body_span=Span.of(stmt),
                    directive=directive,
                    clauses=tuple(clauses),
                    node=node,
                    body=stmt,
                )
            )

    def recover_statement(self, pragma: Node) -> Node | None:
        """The statement after a pragma in a broken parse (e.g. braces split by ``#ifdef``):
        find its extent textually, then parse it alone inside a dummy function in a masked
        copy of the file (offsets unchanged)."""
        src = self.source
        start = _skip_blank(src, pragma.end_byte)
        while src.startswith(b"#", start):  # stacked pragmas / #ifdef lines
            nl = src.find(b"\n", start)
            if nl < 0:
                return None
            start = _skip_blank(src, nl + 1)
        end = _statement_end(src, start)
        line_start = src.rfind(b"\n", 0, pragma.start_byte) + 1
        line_end = src.find(b"\n", line_start)
        prefix = b"void __r(){"
        if end is None or line_end - line_start < len(prefix):
            return None
        masked = bytearray(_mask(src, start, end))
        _blank_else_branches(masked, start, end)
        masked[line_start : line_start + len(prefix)] = prefix
        masked = masked[:end] + b"}" + masked[end + 1 :] if end < len(masked) else masked + b"}"
        tree = parse(bytes(masked), language_for_path(self.path))
        node = tree.root_node.descendant_for_byte_range(start, max(start, end - 1))
        best = None
        # error recovery may stretch the statement over the dummy function's closing brace
        while node is not None and node.start_byte >= start and node.end_byte <= end + 1:
            if node.start_byte == start and _is_statement(node):
                best = node
            node = node.parent
        return best

    # -- launches -----------------------------------------------------------------------------
    def launch(self, call: Node, form: str) -> None:
        fn_node = call.child_by_field_name("function")
        args_node = call.child_by_field_name("arguments")
        args = [_text(a) for a in (args_node.named_children if args_node else [])]
        args = [a for a in args if not a.startswith(("//", "/*"))]
        if form == "chevron":
            cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
            parts = [_text(c) for c in cfg.named_children] if cfg else []
            name = _kernel_ref(_text(fn_node))
            rest = args
        elif form == "hipLaunchKernelGGL":
            if len(args) < 5:
                return
            name = _kernel_ref(args[0])
            parts = [args[1], args[2], args[3], args[4]]
            rest = args[5:]
        else:  # cudaLaunchKernel(func, grid, block, args, shmem, stream)
            if len(args) < 3:
                return
            name = _kernel_ref(args[0])
            parts = [args[1], args[2], *(args[4:6])]
            rest = args[3:4]
        if not name or len(parts) < 2:
            return
        env = self.environment(call)
        shmem = parts[2] if len(parts) > 2 else None
        grid_v, block_v, shmem_v = _reuse(
            self.old.launches,
            self.memo.launches,
            (parts[0], parts[1], shmem, *env.items()),
            lambda: (
                evaluate_dim3(parts[0], env),
                evaluate_dim3(parts[1], env),
                evaluate(shmem, env) if shmem else None,
            ),
        )
        self.launches.append(
            LaunchSite(
                kernel=name,
                file=self.path,
                line=_line(call),
                span=Span.of(call),
                form=form,  # type: ignore[arg-type]
                grid=parts[0],
                block=parts[1],
                shmem=shmem,
                stream=parts[3] if len(parts) > 3 else None,
                args=tuple(rest),
                grid_value=grid_v,
                block_value=block_v,
                shmem_value=int(shmem_v) if shmem_v is not None else None,
            )
        )

    def callees(self, body: Node | None) -> tuple[str, ...]:
        """Names of functions called from ``body``, transitively, in first-call order."""
        out: list[str] = []
        seen: set[str] = set()
        stack = [body] if body is not None else []
        while stack and len(out) < 200:
            node = stack.pop()
            for name in self.calls_in(node):
                if name in seen:
                    continue
                seen.add(name)
                fn = self.functions.get(name)
                if fn is not None:
                    out.append(name)
                    body2 = fn.node.child_by_field_name("body")
                    if body2 is not None:
                        stack.append(body2)
        return tuple(out)

    def calls_in(self, node: Node) -> tuple[str, ...]:
        """The names of the functions called in ``node`` (from the memo by its text)."""
        text = node.text
        if text is None:
            return _calls_in(node)
        return _reuse(self.old.calls, self.memo.calls, text, lambda: _calls_in(node))

    def environment(self, at: Node) -> dict[str, str]:
        """Names usable to evaluate an expression at ``at``: globals, then the enclosing
        function's earlier local declarations (``int n = 1 << 20; dim3 grid(n / 256);``)."""
        env: dict[str, str] = dict(self.constants)
        fn = _enclosing_function(at)
        body = fn.child_by_field_name("body") if fn is not None else None
        if body is None or body.text is None:
            return env
        key = (body.text, at.start_byte - body.start_byte)
        local: dict[str, str] = _reuse(
            self.old.locals, self.memo.locals, key, lambda: _locals(body, at.start_byte)
        )
        env.update(local)
        return env


def _locals(body: Node, stop: int) -> dict[str, str]:
    """The values of the local declarations in ``body`` before byte ``stop``."""
    env: dict[str, str] = {}
    for decl in _descendants(body, "declaration", stop=stop):
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                name = d.child_by_field_name("declarator")
                value = d.child_by_field_name("value")
                if name is not None and name.type == "identifier" and value is not None:
                    v = _text(value)
                    if value.type in ("argument_list", "initializer_list"):
                        v = "dim3(" + v.strip("(){}") + ")"
                    env[_text(name)] = v
            elif d.type == "function_declarator":  # `dim3 grid(n / 256)` (vexing parse)
                name = d.child_by_field_name("declarator")
                params = d.child_by_field_name("parameters")
                if name is not None and params is not None:
                    env[_text(name)] = "dim3(" + _text(params).strip("()") + ")"
    return env


def _descendants(node: Node, type_: str, stop: int) -> list[Node]:
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.start_byte >= stop:
            continue
        if n.type == type_:
            out.append(n)
        stack.extend(reversed(n.named_children))
    out.sort(key=lambda n: n.start_byte)
    return out


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _kernel_ref(text: str) -> str:
    """`(void*)k`, `k<T, 4>`, `HIP_KERNEL_NAME(k<T>)`, `&k`, `ns::k` -> `k`."""
    text = text.strip()
    if _IDENTIFIER.fullmatch(text):  # the common case, cheaply
        return text
    m = re.match(r"\s*HIP_KERNEL_NAME\s*\((.*)\)\s*$", text, re.S)
    if m:
        text = m.group(1)
    text = re.sub(r"^\(\s*(?:const\s+)?void\s*\*\s*\)", "", text).strip().lstrip("&").strip()
    text = re.sub(r"\(\s*void\s*\*\s*\)", "", text).strip()
    depth, out = 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    m2 = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*$", name)
    return m2.group(1) if m2 else ""


def _definition_end(source: bytes, pos: int) -> int | None:
    """From just after `__global__`, the end of the definition's `{...}` body, or None for a
    declaration (`;` before `{`)."""
    n = len(source)
    i = pos
    depth = 0
    while i < n:
        ch = source[i]
        if ch == 0x28:  # (
            depth += 1
        elif ch == 0x29:
            depth -= 1
        elif ch == 0x3B and depth == 0:  # ;
            return None
        elif ch == 0x7B and depth == 0:  # {
            break
        i += 1
        if i - pos > 4000:
            return None
    depth = 0
    while i < n:
        ch = source[i]
        if ch == 0x7B:
            depth += 1
        elif ch == 0x7D:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _skip_blank(src: bytes, i: int) -> int:
    """Skip white space and comments."""
    n = len(src)
    while i < n:
        if src[i : i + 1].isspace():
            i += 1
        elif src.startswith(b"//", i):
            nl = src.find(b"\n", i)
            i = n if nl < 0 else nl + 1
        elif src.startswith(b"/*", i):
            e = src.find(b"*/", i + 2)
            i = n if e < 0 else e + 2
        else:
            break
    return i


def _statement_end(src: bytes, i: int) -> int | None:
    """End of the statement starting at ``i``: a ``{...}`` block, a loop or if with its
    header and body, or a simple statement up to ``;``."""
    n = len(src)
    if i >= n:
        return None
    if src[i] == 0x7B:  # {
        depth, j, limit = 0, i, min(n, i + 400_000)
        while j < limit:
            c = src[j]
            if c == 0x23 and not src[src.rfind(b"\n", 0, j) + 1 : j].strip():
                # only the first branch of an #if counts: skip #else/#elif ... #endif
                if re.match(rb"#\s*(else|elif)", src[j : j + 8]):
                    j = _skip_to_endif(src, j)
                    continue
            elif c == 0x7B:
                depth += 1
            elif c == 0x7D:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None
    m = re.match(rb"(for|while|if)\s*\(", src[i : i + 16])
    if m:
        j = _close_paren(src, i + m.end() - 1, n)
        return _statement_end(src, _skip_blank(src, j + 1))
    j = src.find(b";", i)
    return None if j < 0 else j + 1


def _close_paren(src: bytes, open_: int, stop: int) -> int:
    """Position of the ``)`` matching the ``(`` at ``open_``, or ``stop`` when it is not
    closed before ``stop``."""
    depth, j = 0, open_
    while j < stop:
        if src[j] == 0x28:
            depth += 1
        elif src[j] == 0x29:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return stop


def _params_end(src: bytes, i: int, stop: int) -> int | None:
    """Position of the ``)`` closing a kernel's parameter list, searching from just after
    ``__global__`` (``__launch_bounds__(...)`` skipped)."""
    while i < stop:
        open_ = src.find(b"(", i, stop)
        if open_ < 0:
            return None
        j = _close_paren(src, open_, stop)
        if not re.search(rb"__launch_bounds__\s*$", src[i:open_]):
            return j
        i = j + 1
    return None


def _skip_to_endif(src: bytes, j: int) -> int:
    """From an ``#else``/``#elif`` line, the position of its matching ``#endif``."""
    level = 0
    for m in re.finditer(rb"(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", src[j:]):
        if m.group(1) == b"endif":
            if level == 0:
                return j + m.start()
            level -= 1
        else:
            level += 1
    return len(src)


def _blank_else_branches(buf: bytearray, start: int, end: int) -> None:
    """In ``buf[start:end]``, blank conditional-directive lines and every ``#else``/``#elif``
    branch, so that only the first branch of each ``#if`` is parsed."""
    j = start
    while j < end:
        nl = buf.find(b"\n", j, end)
        line_end = end if nl < 0 else nl
        line = bytes(buf[j:line_end]).strip()
        if re.match(rb"#\s*(else|elif)", line):
            stop = min(end, _skip_to_endif(bytes(buf), line_end))
            buf[j:stop] = re.sub(rb"[^\n]", b" ", bytes(buf[j:stop]))
            j = stop
            continue
        if re.match(rb"#\s*(if|ifdef|ifndef|endif)\b", line):
            buf[j:line_end] = b" " * (line_end - j)
        j = line_end + 1


def _mask(source: bytes, start: int, end: int) -> bytes:
    """Blank everything outside [start, end) but keep newlines, so byte offsets and points
    of the kept region are unchanged."""
    head = re.sub(rb"[^\n]", b" ", source[:start])
    tail = re.sub(rb"[^\n]", b" ", source[end:])
    return head + source[start:end] + tail


def _line(node: Node) -> int:
    return node.start_point.row + 1


def _is_hip(path: str, source: bytes) -> bool:
    return path.lower().endswith(".hip") or b"hip/hip_runtime" in source[:20000]


_including = threading.local()  # headers being read on this thread (include cycles)


@functools.lru_cache(maxsize=2048)
def _header_cached(path: str, mtime_ns: int, size: int) -> Detection | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INCLUDE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_INCLUDE_BYTES or b"\0" in data[:8192]:
        return None
    return _detect(data, path, None, 1)


def _header_definitions(path: str, depth: int) -> Detection | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    busy: set[str] = _including.__dict__.setdefault("paths", set())
    if depth >= MAX_INCLUDE_DEPTH or path in busy:
        return None
    busy.add(path)
    try:
        return _header_cached(path, st.st_mtime_ns, st.st_size)
    finally:
        busy.discard(path)


def detect(
    source: bytes, path: str, tree: Tree | None = None, previous: Detection | None = None
) -> Detection:
    """Every kernel, launch site, data region and callable function of one file.

    ``tree`` is a tree already parsed from ``source`` (the server keeps one per document);
    local headers (``#include "x.h"``) are read from disk relative to ``path``.
    ``previous`` is the detection of an earlier version of the same document: what did not
    change is found again from its memo instead of re-walked (the same result, faster).
    """
    return _detect(source, path, tree, 0, previous.memo if previous is not None else None)


def _detect(
    source: bytes, path: str, tree: Tree | None, depth: int, old: DetectMemo | None = None
) -> Detection:
    if tree is None:
        tree = parse(source, language_for_path(path))
    d = _Detector(source, path, tree, depth, old)
    root = tree.root_node
    caps, d.memo.captures = top_level_captures(
        ("cuda-kernels", "cuda-definitions"), root, source, old.captures if old else None
    )
    d.definitions(caps)
    d.pragmas([p for p in caps.get("pragma", []) if _is_pragma(p)])
    for fn in caps.get("function", []):
        d.function(fn)
    d.recover_macros()
    if root.has_error:
        d.recover()
    for call in caps.get("launch", []):
        d.launch(call, "chevron")
    for call in _api_calls(source, root):
        fname = _text(call.child_by_field_name("function"))
        d.launch(call, "cudaLaunchKernel" if fname != "hipLaunchKernelGGL" else fname)
    kernels = sorted(d.kernels, key=lambda k: k.span.start_byte)
    kernels = [replace(k, callees=d.callees(k.body)) for k in kernels]
    callers: dict[str, list[str]] = {}
    for func in d.functions.values():
        body = func.node.child_by_field_name("body") if func.file == path else None
        for name in set(d.calls_in(body)) if body is not None else ():
            callers.setdefault(name, []).append(func.name)
    return Detection(
        file=path,
        kernels=tuple(kernels),
        functions=d.functions,
        macros=d.macros,
        constants=d.constants,
        launches=tuple(d.launches),
        data_regions=tuple(d.data_regions),
        source=source,
        callers={k: tuple(v) for k, v in callers.items()},
        memo=d.memo,
    )


_LAUNCH_API = re.compile(rb"\b(hipLaunchKernelGGL|cudaLaunchKernel|hipLaunchKernel)\s*\(")


def _api_calls(source: bytes, root: Node) -> list[Node]:
    """``hipLaunchKernelGGL(...)``/``cudaLaunchKernel(...)`` calls, found by their name's
    text first (a query predicate over every call is far slower)."""
    calls: list[Node] = []
    if b"LaunchKernel" not in source:
        return calls
    for m in _LAUNCH_API.finditer(source):
        node = root.descendant_for_byte_range(m.start(1), m.end(1))
        if node is not None and node.type == "identifier":
            call = node.parent
            if call is not None and call.type == "call_expression":
                calls.append(call)
    return calls


def _is_pragma(node: Node) -> bool:
    directive = node.child_by_field_name("directive")
    return directive is not None and _text(directive) == "#pragma"


def _inside_error(node: Node) -> bool:
    p = node.parent
    while p is not None:
        if p.type == "ERROR":
            return True
        p = p.parent
    return False


def _calls_in(node: Node) -> tuple[str, ...]:
    return tuple(
        _short(_kernel_ref(_text(n))) for n in captures("cuda-calls", node).get("callee", [])
    )
