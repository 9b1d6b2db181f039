"""The tree walker of kernel detection: reads one parsed file's definitions, functions, CUDA
kernels, OpenMP/OpenACC regions and launch sites (``kernels.detect`` drives it), re-parsing
what macros or ``#ifdef`` broke.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from tree_sitter import Node, Tree

from roofline_lsp.detect.pragmas import (
    is_statement,
    parse_pragma,
    pragma_macros,
    pragma_operator,
    statement_after,
)
from roofline_lsp.detect.textscan import (
    blank,
    blank_else_branches,
    close_paren,
    definition_end,
    function_block,
    is_hip_source,
    kernel_ref,
    mask_outside,
    params_end,
    repaired,
    skip_blank,
    statement_end,
    strip_comments,
)
from roofline_lsp.detect.treewalk import (
    argument_array,
    call_arguments,
    call_sites,
    called_names,
    descendants_of_type,
    enclosing_function,
    function_qualifiers,
    inside_error,
    launch_config_field,
    local_values,
    parameter_declarations,
    qualified_declarator_name,
    start_line,
    text_functions,
    unqualified_name,
)
from roofline_lsp.model.kernel import (
    DataRegion,
    Detection,
    DetectMemo,
    Function,
    Kernel,
    KernelLanguage,
    LaunchSite,
    Macro,
    Span,
)
from roofline_lsp.syntax.cexpr import evaluate, evaluate_dim3
from roofline_lsp.syntax.conditionals import Defined, branch_taken, defined_before
from roofline_lsp.syntax.datatypes import overload_key
from roofline_lsp.syntax.declarations import declarations
from roofline_lsp.syntax.expr import (
    NAME,
    declared_name,
    detached_body,
    macro_loop_body,
    nested_definition,
    text,
)
from roofline_lsp.syntax.functions import function_declarator
from roofline_lsp.syntax.macro_substitution import substitute_macro
from roofline_lsp.syntax.parsing import captures, language_for_path, parse, parse_range
from roofline_lsp.syntax.sources import include_candidates

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

# (header path, its include depth) -> what detection found in it, or None (unreadable, a
# cycle, too deep)
IncludeReader = Callable[[str, int], Detection | None]


# the nodes whose bytes are text, not code
_TEXT_NODES = frozenset(("comment", "string_literal", "raw_string_literal", "char_literal"))

# the runtime and driver APIs that launch a kernel named in their arguments
LAUNCH_API = re.compile(
    rb"\b(hipLaunchKernelGGL|cudaLaunchKernel|hipLaunchKernel|cudaLaunchCooperativeKernel|"
    rb"hipLaunchCooperativeKernel|cuLaunchKernel|hipModuleLaunchKernel|cudaLaunchKernelExC?|"
    # a graph's kernel node, launched with its graph
    rb"(?:cuda|hip)Graph(?:AddKernelNode|AddNode|(?:Exec)?(?:Kernel)?NodeSetParams))"
    rb"\s*(?:<[^;{}()]*>\s*)?\("
)


def api_launch_form(function: str) -> str | None:
    """How :meth:`Detector.launch` reads a call of ``function`` (one of ``LAUNCH_API``'s);
    None for any other function."""
    if LAUNCH_API.fullmatch(function.encode() + b"(") is None:
        return None
    function = function.split("<", 1)[0].strip()  # ``cudaLaunchKernelEx<float *>``
    if function in ("cuLaunchKernel", "hipModuleLaunchKernel"):
        return "cuLaunchKernel"  # the driver API's, through a module function
    if function.startswith("cudaLaunchKernelEx"):
        return "cudaLaunchKernelEx"  # CUDA 12's, sized by a cudaLaunchConfig_t
    if "Graph" in function:
        return "graphKernelNode"  # a graph's node, given by a cudaKernelNodeParams
    return "hipLaunchKernelGGL" if function == "hipLaunchKernelGGL" else "cudaLaunchKernel"


# a ``template <...>`` header ending right before a kernel's ``__global__``, with the
# attributes and specifiers that may stand between them
_TEMPLATE_HEAD = re.compile(
    rb"template\s*<[^;{}]*>(?:\s*__launch_bounds__\s*\([^;{}]*?\)|\s*static|\s*inline)*\s*$"
)


class Detector:
    """Walks one parsed file; ``include`` reads the local headers it includes."""

    def __init__(
        self,
        source: bytes,
        path: str,
        tree: Tree,
        include: IncludeReader,
        include_depth: int = 0,
        old: DetectMemo | None = None,
    ) -> None:
        self.old = old or DetectMemo()  # the previous version's memo (read only)
        self.memo = DetectMemo()  # this version's: what it used, for the next
        self.source = source
        self.path = path
        self.tree = tree
        self.repaired_trees: dict[bytes, Tree] = {}  # ``function_around``'s parses
        self.include = include
        self.depth = include_depth
        self.functions: dict[str, Function] = {}
        self.macros: dict[str, Macro] = {}
        self.constants: dict[str, str] = {}
        self.constant_types: dict[str, str] = {}  # a const's declared type (``double``)
        self.kernels: list[Kernel] = []
        self.launches: list[LaunchSite] = []
        self.data_regions: list[DataRegion] = []
        self._texts: dict[int, bytes] = {}  # a node's id -> its text (``environment``)
        self.language: KernelLanguage = "hip" if is_hip_source(path, source) else "cuda"

    # -- definitions ------------------------------------------------------------------------
    def definitions(self, caps: dict[str, list[Node]]) -> None:
        included = [
            d
            for node in caps.get("include", [])
            if (d := self.included(node.child_by_field_name("path"))) is not None
        ]
        defined, values = self.macro_definitions(caps, {n for d in included for n in d.macros})
        # ``#ifdef X enum { N = X }; #else enum { N = 4 }; #endif``: as for macros, the
        # definitions on the branch the preprocessor keeps win
        file_scope = caps.get("const.decl", []) + [
            d for b in caps.get("const.branch", []) for d in _branch_declarators(b)
        ]
        file_scope.sort(key=lambda n: n.start_byte)
        for decl in _taken_first(file_scope, defined, values):
            name = decl.child_by_field_name("declarator")
            value = decl.child_by_field_name("value")
            if name is not None and value is not None and name.type == "identifier":
                placeholder = evaluate(text(value), self.constants) in (0, None)
                if not (placeholder and self.set_at_run_time(decl, text(name))):
                    self.constants.setdefault(text(name), text(value))
                    ty = decl.parent.child_by_field_name("type") if decl.parent else None
                    if ty is not None:
                        self.constant_types.setdefault(text(name), text(ty))
        for node in _taken_first(caps.get("enum", []), defined, values):
            self.enumerators(node)
        for d in included:
            for fname, fn in d.functions.items():
                self.functions.setdefault(fname, fn)
            for mname, macro in d.macros.items():
                self.macros.setdefault(mname, macro)
            for cname, body in d.constants.items():
                self.constants.setdefault(cname, body)
            for cname, ty_text in d.constant_types.items():
                self.constant_types.setdefault(cname, ty_text)
        # static constants of structs and their aliases (`x128::size`), as qualified names
        decls = declarations(self.tree.root_node, self.macros)
        for qname, value_text in decls.static_members.items():
            self.constants.setdefault(qname, value_text)

    def macro_definitions(
        self, caps: dict[str, list[Node]], included: set[str]
    ) -> tuple[Defined, dict[str, str]]:
        """``#define``s, the one on the branch the preprocessor takes first (with the names
        defined before it here or in ``included`` files), then those on branches it skips
        (a name defined only there keeps that definition, as before branches were read).
        Returns where each name is defined and the object-like macros' bodies, which decide
        the branches."""
        nodes = sorted(caps.get("define", []) + caps.get("macro", []), key=lambda n: n.start_byte)
        starts: dict[str, list[int]] = {}
        values: dict[str, str] = {}
        for node in nodes:
            name = text(node.child_by_field_name("name"))
            starts.setdefault(name, []).append(node.start_byte)
            value = node.child_by_field_name("value")
            if node.child_by_field_name("parameters") is None:
                values.setdefault(name, strip_comments(text(value).strip()))
        defined = defined_before(starts, included)
        for node in _taken_first(nodes, defined, values):
            name_node = node.child_by_field_name("name")
            if name_node is None:
                continue
            name = text(name_node)
            value = node.child_by_field_name("value")
            params = node.child_by_field_name("parameters")
            if params is None:
                body = strip_comments(text(value).strip())
                self.constants.setdefault(name, body)
                self.macros.setdefault(name, Macro(name, None, body, start_line(node), self.path))
                continue
            # ``(a, ...)``: the ``...`` a variadic macro's ``__VA_ARGS__`` stands for
            pnames = tuple(
                text(c)
                for c in params.children
                if (c.is_named and c.type != "comment") or c.type == "..."
            )
            self.macros.setdefault(
                name, Macro(name, pnames, text(value).strip(), start_line(node), self.path)
            )
        return defined, values

    def enumerators(self, body: Node) -> None:
        """An enum's enumerators as constants: the given value, else the previous plus one
        (index arithmetic such as ``states[n * STATE_V + i]`` needs their values)."""
        nxt: int | None = 0
        prev = ""
        for e in body.named_children:
            name = e.child_by_field_name("name")
            if e.type != "enumerator" or name is None:
                continue
            val = e.child_by_field_name("value")
            if val is not None:
                expr = text(val).strip()
                try:
                    nxt = int(expr, 0)
                except ValueError:
                    nxt = None
            else:
                expr = str(nxt) if nxt is not None else f"({prev}) + 1"
            self.constants.setdefault(text(name), str(nxt) if nxt is not None else expr)
            nxt = nxt + 1 if nxt is not None else None
            prev = text(name)

    def set_at_run_time(self, decl: Node, name: str) -> bool:
        """A file-scope variable that is not ``const`` and is assigned (or passed by address)
        elsewhere in the file. Its initial value is no constant when it is a placeholder
        (``int g_n = 0;`` set from the command line); a real default (``int size = 1 << 25;``
        that an option may override) is kept."""
        outer = decl.parent
        if outer is not None and re.search(rb"\b(const|constexpr)\b", outer.text or b""):
            return False
        n = re.escape(name.encode())
        pattern = re.compile(
            rb"\b" + n + rb"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"  # n = ..., n += ...
            rb"|(?<![\w)\]&])&\s*" + n + rb"\b"  # &n passed to a call
            rb"|(?:\+\+|--)\s*" + n + rb"\b|\b" + n + rb"\s*(?:\+\+|--)"  # ++n, n++
        )
        return any(
            not decl.start_byte <= m.start() < decl.end_byte for m in pattern.finditer(self.source)
        )

    def included(self, path_node: Node | None) -> Detection | None:
        """The detection of a file ``#include "..."`` names, or ``#include <...>`` when the
        project's header folder holds it (``<tiny-cuda-nn/common.h>`` in ``include/``: no
        system folder is searched); None past the depth limit."""
        if path_node is None or path_node.type not in ("string_literal", "system_lib_string"):
            return None
        if self.depth >= MAX_INCLUDE_DEPTH or not self.path:
            return None
        rel = text(path_node).strip('"<>')
        candidates = include_candidates(rel, self.path)
        if path_node.type == "system_lib_string":
            if "/" not in rel:
                return None  # ``<cuda.h>``, ``<vector>``: the compiler's, or the system's
            next(candidates, None)  # not beside the including file: on the include path
        for target in candidates:
            found = self.include(target, self.depth + 1)
            if found is not None:
                return found
        return None

    # -- functions and CUDA kernels ---------------------------------------------------------
    def function(
        self, fn: Node, recovered: bool = False, macro_quals: dict[int, str] | None = None
    ) -> None:
        """Record a function definition: a kernel when it has ``__global__`` (or, in a
        re-parse with qualifier macros blanked, such a macro in ``macro_quals``: byte -> body).
        A definition nested in a block is no function: a loop-header macro's call with its
        body (``CUDA_KERNEL_LOOP(index, n) { ... }``)."""
        fdecl = function_declarator(fn)
        if fdecl is None or nested_definition(fn):
            return
        name = qualified_declarator_name(fdecl.child_by_field_name("declarator"))
        if not name or name in _NOT_NAMES:
            return
        quals = function_qualifiers(fn)
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
            func = Function(
                unqualified_name(name), self.path, start_line(fn), Span.of(fn), quals, fn
            )
            names = [func.name]
            if func.name.startswith("operator") and func.name != "operator()" and not _member(fn):
                # each overload by its parameter types too: ``operator+(float3,float3)``
                names.append(overload_key(func.name, [t for t, _ in _parameters(fdecl)]))
            for key in names:
                known = self.functions.get(key)
                if known is None or (known.file != self.path and func.file == self.path):
                    self.functions[key] = func
            return
        if body is None:
            return
        params = _parameters(fdecl)
        template: tuple[str, ...] = ()
        if fn.parent is not None and fn.parent.type == "template_declaration":
            tpl = fn.parent.child_by_field_name("parameters")
            template = tuple(text(c) for c in tpl.named_children) if tpl else ()
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
                name=unqualified_name(name),
                language=self.language,
                file=self.path,
                line=global_row + 1,
                end_line=fn.end_point.row + 1,
                span=Span.of(fn),
                name_span=Span.of(name_node or fdecl),
                body_span=Span.of(body),
                params=tuple(params),
                template_params=template,
                launch_bounds=tuple(text(c) for c in bounds.named_children) if bounds else (),
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
        first_branches: bytes | None = None  # the file with each #if's first branch kept
        keywords = self.kernel_keywords()
        for i, m in enumerate(keywords):
            start = m.start()
            if any(a <= start < b for a, b in covered):
                continue
            # a body still open at the next kernel's keyword is unbalanced: not searched on
            # to the end of the file (once per kernel: quadratic in a file of many)
            limit = keywords[i + 1].start() if i + 1 < len(keywords) else None
            if self.recover_kernel(self.source, start, m.end(), found, limit):
                continue
            # braces split across ``#if`` branches (``if constexpr (...) {...} else {`` on
            # each, one ``}`` after them): again as the preprocessor keeps one branch, the
            # first, or the one holding the kernel
            empty = [k.name for k in self.macros.values() if k.params is None and not k.body]
            if first_branches is None:
                first_branches = repaired(self.source, -1, empty)
            kept = first_branches
            if kept[start : m.end()] != m.group(0):
                kept = repaired(self.source, start, empty)
            self.recover_kernel(kept, start, m.end(), found, limit)

    def kernel_keywords(self) -> list[re.Match[bytes]]:
        """The file's ``__global__`` keywords that may start a kernel: not in a macro's body
        (``#define KERNEL __global__``: ``recover_macros``'), a comment or a string (``// the
        wrapper of the __global__ call``)."""
        out: list[re.Match[bytes]] = []
        for m in re.finditer(rb"\b__global__\b", self.source):
            line_start = self.source.rfind(b"\n", 0, m.start()) + 1
            if self.source[line_start : m.start()].lstrip().startswith(b"#"):
                continue
            if not self.in_text(m.start(), m.end()):
                out.append(m)
        return out

    def recover_kernel(
        self, source: bytes, start: int, keyword_end: int, found: set[int], limit: int | None
    ) -> bool:
        """Record the kernel whose ``__global__`` spans ``start:keyword_end``, parsed alone
        (its definition, ending before ``limit``) in a copy of ``source``; whether it was
        found."""
        end = definition_end(source, keyword_end, limit)
        if end is None:
            return False
        # keep a `template <...>` header before the kernel (and the attributes between them:
        # ``__launch_bounds__(256, 1) static``)
        tpl = _TEMPLATE_HEAD.search(source[max(0, start - 400) : start])
        region_start = max(0, start - 400) + tpl.start() if tpl else start
        masked = bytearray(source)
        # blank what stands between the parameter list and the body (attribute macros)
        brace = source.find(b"{", start, end)
        close = params_end(source, keyword_end, brace)
        if close is not None:
            masked[close + 1 : brace] = blank(bytes(masked[close + 1 : brace]))
        tree = parse_range(bytes(masked), region_start, end, language_for_path(self.path))
        recovered = False
        for node in captures("cuda-kernels", tree.root_node).get("function", []):
            if node.start_byte in found or not (region_start <= node.start_byte < end):
                continue
            if any(c.type == "__global__" for c in node.children):
                self.function(node, recovered=True)
                found.add(node.start_byte)
                recovered = True
        return recovered

    def in_text(self, start: int, end: int) -> bool:
        """Whether bytes ``start:end`` lie in a comment or a string literal."""
        node = self.tree.root_node.descendant_for_byte_range(start, end)
        while node is not None and node.type not in _TEXT_NODES:
            node = node.parent
        return node is not None

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
    def pragma_operators(self, root: Node) -> list[tuple[Node, str]]:
        """The ``_Pragma("omp ...")`` operators of the file, written out or through a macro
        (``PRAGMA(omp parallel for)``, ``OMP_FOR``: :func:`pragma_operator`), each as the
        node that stands for it and its directive. A written-out operator or a function-like
        macro's is the statement (or broken code) it parses as, an object-like macro's its
        name, the parse having taken the code after it for a declaration."""
        macros = {n: (m.params, m.body) for n, m in self.macros.items()}
        names = ["_Pragma", *sorted(pragma_macros(macros))]
        if len(names) == 1 and b"_Pragma" not in self.source:
            return []
        pattern = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
        found: list[tuple[Node, str]] = []
        for hit in pattern.finditer(self.source):
            start = hit.start()
            line_start = self.source.rfind(b"\n", 0, start) + 1
            if self.source[line_start:start].lstrip().startswith(b"#") or self.in_text(
                start, hit.end()
            ):
                continue  # a #define, or words in a comment
            end = hit.end()
            paren = skip_blank(self.source, end)
            if self.source[paren : paren + 1] == b"(":
                end = close_paren(self.source, paren, len(self.source)) + 1
            directive = pragma_operator(self.source[start:end].decode("utf-8", "replace"), macros)
            if not directive:
                continue
            node = self.tree.root_node.descendant_for_byte_range(start, hit.end())
            while (
                node is not None
                and node.parent is not None
                and node.parent.start_byte == start
                and node.parent.end_byte <= end
            ):
                node = node.parent
            if node is not None:
                found.append((node, directive))
        return found

    def pragmas(self, pragmas: list[tuple[Node, str]]) -> None:
        """The offload regions and data regions of the file's pragmas (node, directive
        text), ``#pragma`` lines and ``_Pragma`` operators alike."""
        pragmas = sorted(pragmas, key=lambda p: p[0].start_byte)
        parsed = [(n, parse_pragma(t)) for n, t in pragmas]
        operators = frozenset(n.start_byte for n, _t in pragmas if n.type != "preproc_call")
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
                block = None
                if words[1 if family == "omp" else 0] in ("data", "host_data"):
                    block = statement_after(node, operators) if not inside_error(node) else None
                self.data_regions.append(
                    DataRegion(
                        family,
                        pr.directive,
                        self.path,
                        start_line(node),
                        Span.of(node),
                        pr.clauses,
                        Span.of(block) if block is not None else None,
                    )
                )
                continue
            if not is_kernel:
                continue
            # (an object-like macro's operator, ``OMP_FOR`` before its loop, is the start of
            # a declaration the parse made of it and the loop's head: found by its text)
            parent = node.parent
            swallowed = node.start_byte in operators and (
                parent is not None
                and parent.start_byte == node.start_byte
                and parent.end_byte > node.end_byte
            )
            stmt = None if inside_error(node) or swallowed else statement_after(node, operators)
            if stmt is None or (stmt.type in _NOT_REGIONS and not nested_definition(stmt)):
                stmt = self.recover_statement(node)
            if stmt is None:
                continue
            # a loop whose statement starts with a pragma line ends at that line in the
            # tree: the region runs to the end of the statement after it
            last = (detached_body(stmt) or [stmt])[-1]
            if last is stmt:
                last = macro_loop_body(stmt) or stmt
            directive, clauses = pr.directive, list(pr.clauses)
            # stacked or nested worksharing pragmas belong to this region
            for other, opr in parsed:
                if other is node or opr.family != pr.family:
                    continue
                stacked = node.end_byte <= other.start_byte < stmt.start_byte
                nested = stmt.start_byte <= other.start_byte < last.end_byte
                if stacked or (nested and opr.words and opr.words[0] != "target"):
                    inner.add(other.start_byte)
                    if stacked or opr.words[0] in ("teams", "distribute", "parallel", "loop"):
                        directive += " | " + opr.directive
                        clauses.extend(opr.clauses)
            fn = enclosing_function(node)
            repaired_fn = self.repaired_function(node) if fn is None else None
            fn = fn or repaired_fn
            fdecl = function_declarator(fn) if fn is not None else None
            fname = (
                qualified_declarator_name(fdecl.child_by_field_name("declarator")) if fdecl else ""
            ) or ""
            self.kernels.append(
                Kernel(
                    name=fname or "<file scope>",
                    language="omp" if pr.family == "omp" else "acc",
                    file=self.path,
                    line=start_line(node),
                    end_line=last.end_point.row + 1,
                    span=Span(
                        node.start_byte,
                        last.end_byte,
                        (node.start_point.row, node.start_point.column),
                        (last.end_point.row, last.end_point.column),
                    ),
                    name_span=Span.of(node),
                    body_span=Span(
                        stmt.start_byte,
                        last.end_byte,
                        (stmt.start_point.row, stmt.start_point.column),
                        (last.end_point.row, last.end_point.column),
                    ),
                    directive=directive,
                    clauses=tuple(clauses),
                    node=node,
                    body=stmt,
                    function=repaired_fn,
                )
            )

    def repaired_function(self, pragma: Node) -> Node | None:
        """The function around a pragma that a broken parse left outside any (its braces
        split across ``#ifdef`` branches, a macro the grammar cannot see through before
        its declaration): found in the file parsed again as the preprocessor would have
        it (``textscan.repaired``, offsets unchanged)."""
        if not inside_error(pragma):
            return None
        empty = [m.name for m in self.macros.values() if m.params is None and not m.body.strip()]
        src = repaired(self.source, pragma.start_byte, empty)
        fn = self.function_around(src, pragma)
        block = function_block(src, pragma.start_byte) if fn is None else None
        if block is None:
            return fn
        # the function alone; then without the words of its head, one by one from the
        # first, that the grammar may not see through (``EXPORT static int f(...)``)
        head, brace, end = block
        alone = bytearray(mask_outside(src, head, end))
        words = list(re.finditer(rb"[A-Za-z_]\w*", src[head : src.rfind(b"(", head, brace)]))
        for word in [None, *words[:-2]]:
            if word is not None:
                alone[head + word.start() : head + word.end()] = b" " * len(word.group(0))
            fn = self.function_around(bytes(alone), pragma)
            if fn is not None:
                return fn
        return None

    def function_around(self, source: bytes, pragma: Node) -> Node | None:
        """The function definition around ``pragma``'s offsets in a parse of ``source``
        (the regions of one function share it)."""
        tree = self.repaired_trees.get(source)
        if tree is None:
            tree = self.repaired_trees[source] = parse(source, language_for_path(self.path))
        at = tree.root_node.descendant_for_byte_range(pragma.start_byte, pragma.end_byte)
        return enclosing_function(at)

    def recover_statement(self, pragma: Node) -> Node | None:
        """The statement after a pragma in a broken parse (e.g. braces split by ``#ifdef``):
        find its extent textually, then parse it alone inside a dummy function in a masked
        copy of the file (offsets unchanged)."""
        src = self.source
        start = skip_blank(src, pragma.end_byte)
        while src.startswith(b"#", start):  # stacked pragmas / #ifdef lines
            nl = src.find(b"\n", start)
            if nl < 0:
                return None
            start = skip_blank(src, nl + 1)
        end = statement_end(src, start)
        line_start = src.rfind(b"\n", 0, pragma.start_byte) + 1
        line_end = src.find(b"\n", line_start)
        prefix = b"void __r(){"
        if end is None or line_end - line_start < len(prefix):
            return None
        masked = bytearray(mask_outside(src, start, end))
        blank_else_branches(masked, start, end)
        masked[line_start : line_start + len(prefix)] = prefix
        masked = masked[:end] + b"}" + masked[end + 1 :] if end < len(masked) else masked + b"}"
        tree = parse(bytes(masked), language_for_path(self.path))
        node = tree.root_node.descendant_for_byte_range(start, max(start, end - 1))
        best = None
        # error recovery may stretch the statement over the dummy function's closing brace
        while node is not None and node.start_byte >= start and node.end_byte <= end + 1:
            if node.start_byte == start and is_statement(node):
                best = node
            node = node.parent
        return best

    # -- launches -----------------------------------------------------------------------------
    def launch(self, call: Node, form: str, at: Node | None = None) -> None:
        """Record the launch ``call``; ``at`` is where it happens when ``call`` is in a
        macro's expansion (the macro's invocation: its line and its function's values)."""
        fn_node = call.child_by_field_name("function")
        args = call_arguments(call)
        args = [a for a in args if not a.startswith(("//", "/*"))]
        if form == "chevron":
            cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
            parts = [text(c) for c in cfg.named_children] if cfg else []
            name = kernel_ref(text(fn_node))
            rest = args
        elif form == "cuLaunchKernel":
            # cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra), with
            # cuModuleGetFunction(&f, module, "name") naming the kernel
            if len(args) < 10:
                return
            name = self.module_function(call, args[0])
            parts = [f"dim3({', '.join(args[1:4])})", f"dim3({', '.join(args[4:7])})", *args[7:9]]
            array = re.sub(r"^&\s*|\[\s*0\s*\]$", "", args[9].strip())
            rest = list(argument_array(call, array))
        elif form == "cudaLaunchKernelEx":
            # cudaLaunchKernelEx(&config, k, args...) (cudaLaunchKernelExC(&config, (void *)k,
            # args)): the dimensions are the config's fields, set before the call
            if len(args) < 2:
                return
            name = kernel_ref(args[1])
            config = re.sub(r"^&\s*", "", args[0].strip())
            fields = ("gridDim", "blockDim", "dynamicSmemBytes", "stream")
            grid, block, shmem, stream = (launch_config_field(call, config, f) for f in fields)
            if grid is None or block is None:
                return
            parts = [grid, block, shmem or "0", *([stream] if stream else [])]
            if text(fn_node).startswith("cudaLaunchKernelExC"):
                rest = list(argument_array(call, args[2])) if len(args) > 2 else []
            else:
                rest = args[2:]
        elif form == "graphKernelNode":
            # cudaGraphAddKernelNode(&node, graph, deps, n, &params), and the calls that set a
            # node's parameters: the kernel, its dimensions and its argument array are the
            # fields of the cudaKernelNodeParams last (``params.kernel``'s for the generic
            # cudaGraphAddNode and cudaGraphNodeSetParams: a kernel node when they name one)
            if not args:
                return
            config = re.sub(r"^&\s*", "", args[-1].strip())
            path = "" if "Kernel" in text(fn_node) else "kernel."
            given = {
                f: launch_config_field(call, config, path + f)
                for f in ("func", "gridDim", "blockDim", "sharedMemBytes", "kernelParams")
            }
            func, grid, block = given["func"], given["gridDim"], given["blockDim"]
            if func is None or grid is None or block is None:
                return
            name = kernel_ref(func)
            parts = [grid, block, given["sharedMemBytes"] or "0"]
            params = re.sub(r"^\(\s*void\s*\*\s*\*\s*\)", "", given["kernelParams"] or "")
            rest = list(argument_array(call, params)) if params else []
        elif form == "hipLaunchKernelGGL":
            if len(args) < 5:
                return
            name = kernel_ref(args[0])
            parts = [args[1], args[2], args[3], args[4]]
            rest = args[5:]
        else:  # cudaLaunchKernel(func, grid, block, args, shmem, stream)
            if len(args) < 3:
                return
            name = kernel_ref(args[0])
            parts = [args[1], args[2], *(args[4:6])]
            rest = list(argument_array(call, args[3])) if len(args) > 3 else []
        self.record_launch(name, form, parts, rest, at or call)

    def record_launch(
        self, name: str, form: str, parts: list[str], rest: list[str], site_node: Node
    ) -> None:
        """Record a launch of kernel ``name`` at ``site_node``: its configuration's texts
        (grid, block, shared memory, stream) and its arguments'."""
        if not name or len(parts) < 2:
            return
        env = self.environment(site_node)
        shmem = parts[2] if len(parts) > 2 else None
        fns = text_functions(self.functions, self.macros)
        called = tuple(
            (n, fns[n]) for n in sorted(set(NAME.findall(" ".join(parts[:3])))) if n in fns
        )
        grid_v, block_v, shmem_v = _reuse(
            self.old.launches,
            self.memo.launches,
            (parts[0], parts[1], shmem, *env.items(), *called),
            lambda: (
                evaluate_dim3(parts[0], env, fns),
                evaluate_dim3(parts[1], env, fns),
                evaluate(shmem, env, functions=fns) if shmem else None,
            ),
        )
        site = LaunchSite(
            kernel=name,
            file=self.path,
            line=start_line(site_node),
            span=Span.of(site_node),
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
        self.launches.append(site)
        # through a function pointer: a launch of each kernel it is set to
        self.launches += [replace(site, kernel=k) for k in self.pointed_kernels(site_node, name)]

    def helper_launches(self, root: Node) -> None:
        """Launches through a launching function an included header defines (``template
        <typename K, typename... A> void launch(K kernel, dim3 grid, A... args) {
        kernel<<<grid, 256>>>(args...); }``: ggml's ``ggml_cuda_kernel_launch``,
        tiny-cuda-nn's ``linear_kernel``): each call here passing a kernel launches it at the
        call, with the function's launch configuration and arguments written in the call's
        arguments."""
        helpers = {
            name: h
            for name, f in self.functions.items()
            if f.file != self.path and (h := _launching_helper_of(f)) is not None
        }
        for fname, helper in helpers.items():
            for call in call_sites(self.source, root, fname, limit=1 << 30):
                args = call_arguments(call)
                if helper.kernel_at >= len(args):
                    continue
                name = kernel_ref(args[helper.kernel_at])
                if not name or name in self.functions:
                    continue  # (a function pointer the helper is given, not a kernel)
                parts, rest = helper.written_in(args)
                self.record_launch(name, "chevron", parts, rest, call)

    def macro_launches(self, root: Node) -> None:
        """Launches written in a function-like macro's body (``#define bench(k, g) ...
        k<<<g, 256>>>(in, out, n);``, or ``hipLaunchKernelGGL(k, g, 256, 0, 0)``): each
        invocation of the macro launches its expansion's kernels there."""
        launching = {
            m.name: m
            for m in self.macros.values()
            if m.params is not None and ("<<<" in m.body or LAUNCH_API.search(m.body.encode()))
        }
        if not launching:
            return
        pattern = re.compile(
            rb"\b(" + b"|".join(re.escape(n.encode()) for n in launching) + rb")\s*\("
        )
        for hit in pattern.finditer(self.source):
            node = root.descendant_for_byte_range(hit.start(1), hit.end(1))
            invocation = node.parent if node is not None else None
            if invocation is None or invocation.type != "call_expression":
                continue  # the definition itself, or a name inside other text
            macro = launching[hit.group(1).decode()]
            args_node = invocation.child_by_field_name("arguments")
            args = [text(a) for a in (args_node.named_children if args_node else [])]
            expanded = substitute_macro(macro.body, macro.params or (), args)
            stack = [parse(f"void __expansion() {{ {expanded}; }}".encode()).root_node]
            while stack:
                n = stack.pop()
                if n.type == "call_expression":
                    if any(c.type == "kernel_call_syntax" for c in n.children):
                        self.launch(n, "chevron", at=invocation)
                    else:
                        form = api_launch_form(text(n.child_by_field_name("function")))
                        if form is not None:
                            self.launch(n, form, at=invocation)
                stack.extend(reversed(n.named_children))

    def module_function(self, call: Node, handle: str) -> str:
        """The kernel a driver-API function handle was loaded as:
        ``cuModuleGetFunction(&f, module, "vectorAdd")`` before ``call``, in its function
        (else in the file); "" when no such call names it."""
        scope = enclosing_function(call) or call.parent or call
        while scope.type != "function_definition" and scope.parent is not None:
            scope = scope.parent  # at file scope: the whole file
        pat = re.compile(
            r"\b(?:cu|hip)ModuleGetFunction\s*\(\s*&\s*"
            + re.escape(handle.strip())
            + r'\s*,[^,]*,\s*"([A-Za-z_]\w*)"'
        )
        found = ""
        for m in pat.finditer(text(scope)):
            found = m.group(1)
        return found

    def pointed_kernels(self, call: Node, name: str) -> list[str]:
        """The kernels a launch through a function pointer may run: ``kernel = &copy;``
        (or ``= copy``, or its initializer) in the function around ``kernel<<<...>>>``, or
        the kernels the function's callers pass as that parameter (``template <typename K>
        void launch(K kernel, int n, ...)`` called as ``launch(poly, n, x)``)."""
        if name in self.functions or any(k.name == name for k in self.kernels):
            return []
        fn = enclosing_function(call)
        if fn is None:
            return []
        out: list[str] = self.passed_kernels(fn, name)
        for kind, left_field, right_field in (
            ("assignment_expression", "left", "right"),
            ("init_declarator", "declarator", "value"),
        ):
            for node in descendants_of_type(fn, kind, stop=call.start_byte):
                left = node.child_by_field_name(left_field)
                right = node.child_by_field_name(right_field)
                if left is None or right is None or declared_name(left) != name:
                    continue
                if right.type == "pointer_expression":
                    right = right.child_by_field_name("argument")
                target = kernel_ref(text(right)) if right is not None else ""
                if target and target != name and target not in out:
                    out.append(target)
        return out

    def passed_kernels(self, fn: Node, name: str) -> list[str]:
        """The kernels the calls of ``fn`` in this file pass as its parameter ``name``."""
        params = [
            declared_name(p.child_by_field_name("declarator")) for p in parameter_declarations(fn)
        ]
        d = function_declarator(fn)
        callee = d.child_by_field_name("declarator") if d is not None else None
        if name not in params or callee is None:
            return []
        at = params.index(name)
        fname = unqualified_name(text(callee))
        kernels = {k.name for k in self.kernels}
        out: list[str] = []
        for c in call_sites(self.source, self.tree.root_node, fname, limit=1 << 30):
            f = c.child_by_field_name("function")
            if f is not None and f.type == "field_expression":
                continue  # ``obj.launch(...)``: another function of the name
            a = c.child_by_field_name("arguments")
            args = [x for x in (a.named_children if a is not None else []) if x.type != "comment"]
            if at < len(args):
                target = kernel_ref(text(args[at]))
                if target in kernels and target not in out:
                    out.append(target)
        return out

    def callees(self, body: Node | None) -> tuple[str, ...]:
        """Names of functions called from ``body``, transitively, in first-call order."""
        out: list[str] = []
        seen: set[str] = set()
        stack = [body] if body is not None else []
        # operator overloads the bodies may apply (``a + b`` of two ``float3``), by symbol
        op = len("operator")
        overloads = [
            (n, n[op : n.find("(")].encode())
            for n in self.functions
            if n.startswith("operator") and n.find("(") > op
        ]
        while stack and len(out) < 200:
            node = stack.pop()
            body_text = node.text or b""
            applied = [n for n, symbol in overloads if symbol in body_text]
            for name in (*self.calls_in(node), *applied):
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
        key = node.text
        if key is None:
            return called_names(node)
        return _reuse(self.old.calls, self.memo.calls, key, lambda: called_names(node))

    def environment(self, at: Node) -> dict[str, str]:
        """Names usable to evaluate an expression at ``at``: globals, then the enclosing
        function's earlier local declarations (``int n = 1 << 20; dim3 grid(n / 256);``)."""
        env: dict[str, str] = dict(self.constants)
        fn = enclosing_function(at)
        body = fn.child_by_field_name("body") if fn is not None else None
        if body is None:
            return env
        # the body's text, one object per body: its hash is computed once, not per launch
        body_text = self._texts.get(body.id) or body.text
        if body_text is None:
            return env
        self._texts[body.id] = body_text
        key = (body_text, at.start_byte - body.start_byte)
        local: dict[str, str] = _reuse(
            self.old.locals, self.memo.locals, key, lambda: local_values(body, at.start_byte)
        )
        env.update(local)
        return env


def _taken_first(nodes: list[Node], defined: Defined, values: dict[str, str]) -> list[Node]:
    """``nodes`` (in source order) on the branches the preprocessor keeps first, then those on
    branches it skips or cannot decide: with ``setdefault``, the kept definition of a name
    wins and one defined only on a skipped branch keeps that definition."""
    taken = [branch_taken(n, defined, values) is not False for n in nodes]
    return [n for n, t in zip(nodes, taken, strict=True) if t] + [
        n for n, t in zip(nodes, taken, strict=True) if not t
    ]


_BRANCHES = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
)


def _branch_declarators(cond: Node) -> list[Node]:
    """The ``x = v`` declarators of the declarations on the branches of a file-scope
    ``#if``/``#ifdef`` (nested conditionals included, function bodies not)."""
    out: list[Node] = []
    stack = [cond]
    while stack:
        n = stack.pop()
        for c in n.named_children:
            if c.type == "declaration":
                out += [
                    d for d in c.children_by_field_name("declarator") if d.type == "init_declarator"
                ]
            elif c.type in _BRANCHES:
                stack.append(c)
    return out


@dataclass(frozen=True)
class LaunchingHelper:
    """A function launching the kernel one of its parameters names
    (``kernel<<<grid, block>>>(args...)``): its parameters, which of them is the kernel,
    which is a pack of the kernel's arguments, and the launch's texts."""

    params: tuple[str, ...]
    kernel_at: int
    pack_at: int | None
    config: tuple[str, ...]  # grid, block, shared memory, stream
    args: tuple[str, ...]

    def written_in(self, call_args: list[str]) -> tuple[list[str], list[str]]:
        """The launch's configuration and arguments in terms of a call's arguments."""
        given = {
            p: a if _PLAIN.fullmatch(a.strip()) else f"({a})"
            for i, (p, a) in enumerate(zip(self.params, call_args, strict=False))
            if p and i != self.pack_at
        }

        def written(t: str) -> str:
            return _WORD.sub(lambda m: given.get(m.group(0), m.group(0)), t) if given else t

        rest: list[str] = []
        for a in self.args:
            expanded = _EXPANSION.fullmatch(a.strip())
            pack = self.params[self.pack_at] if self.pack_at is not None else None
            if expanded is not None and pack in (expanded.group(1), expanded.group(2)):
                rest += call_args[self.pack_at or 0 :]
            else:
                rest.append(written(a))
        return [written(c) for c in self.config], rest


# a header function's launch of a parameter, by the function (its file, span and node: a
# header parsed again is a new node), looked into once for all the files including it
_HELPERS: dict[tuple[str, int, int, int], LaunchingHelper | None] = {}


def _launching_helper_of(f: Function) -> LaunchingHelper | None:
    key = (f.file, f.span.start_byte, f.span.end_byte, f.node.id)
    if key not in _HELPERS:
        if len(_HELPERS) > 16384:
            _HELPERS.clear()
        _HELPERS[key] = launching_helper(f.node)
    return _HELPERS[key]


# an argument written in place of a parameter without parentheses: a name, a member, a number
_PLAIN = re.compile(r"[A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*)*|[0-9][\w.]*")
_WORD = re.compile(r"(?<![\w.>])[A-Za-z_]\w*")
# a pack of arguments passed on: ``args...``, ``std::forward<Args>(args)...``
_EXPANSION = re.compile(r"(?:std::forward\s*<[^<>]*>\s*\(\s*(\w+)\s*\)|(\w+))\s*\.\.\.")


def launching_helper(fn: Node) -> LaunchingHelper | None:
    """The launch a function makes of the kernel one of its parameters names, if it does
    (the first such launch)."""
    fdecl = function_declarator(fn)
    body = fn.child_by_field_name("body")
    plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
    if plist is None or body is None or b"<<<" not in (body.text or b""):
        return None
    params: list[str] = []
    pack_at: int | None = None
    for p in plist.named_children:
        if p.type == "variadic_parameter_declaration":
            pack_at = len(params)
        elif p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        decl = p.child_by_field_name("declarator")
        # (``Args &&...args``: the name under the reference and the pack's ``...``)
        name = qualified_declarator_name(decl) or "" if decl is not None else ""
        names = re.findall(r"[A-Za-z_]\w*", text(decl)) if decl is not None and not name else []
        params.append(name or (names[-1] if names else ""))
    for call in descendants_of_type(body, "call_expression", body.end_byte):
        cfg = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
        fn_node = call.child_by_field_name("function")
        named = kernel_ref(text(fn_node)) if cfg is not None and fn_node is not None else ""
        if named and named in params:
            return LaunchingHelper(
                tuple(params),
                params.index(named),
                pack_at,
                tuple(text(c) for c in cfg.named_children) if cfg is not None else (),
                tuple(call_arguments(call)),
            )
    return None


def _parameters(fdecl: Node) -> list[tuple[str, str]]:
    """(type text, name) of each parameter of a function declarator."""
    params = []
    plist = fdecl.child_by_field_name("parameters")
    for p in plist.named_children if plist else []:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        pname = qualified_declarator_name(p.child_by_field_name("declarator")) or ""
        ptext = text(p)
        ptype = ptext[: ptext.rfind(pname)].strip() if pname else ptext
        params.append((ptype, pname))
    return params


def _member(fn: Node) -> bool:
    """A function defined in a class body (a member operator takes ``this`` first)."""
    p = fn.parent
    while p is not None and p.type == "template_declaration":
        p = p.parent
    return p is not None and p.type == "field_declaration_list"
