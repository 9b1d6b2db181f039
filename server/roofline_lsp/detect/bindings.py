"""What the host side says about a kernel: values of its parameters and of the host variables
an offload region reads, allocation sizes of its buffers and the launch dimensions.

Sources, in order of precedence: values the user gave (``Inputs.values``, ``// roofline: n=1<<20``
hint comments), the program arguments (``atoi(argv[1])`` with ``Inputs.args``), the host code
before the launch (declarations and assignments of the launching function, and of its callers
for its parameters; ``dim3`` components; only the branch of an ``if`` the values decide;
values read or counted at run time are unknown), ``#define``/``constexpr`` constants, and the
helpers a launch expression calls (function-like macros, functions returning an expression:
``ceil_div(n, bs)``). Without program arguments ``argc`` is 1, so the program's own defaults
apply (``argc > 1 ? atoi(argv[1]) : 1024``). Allocation sizes come from
``cudaMalloc``/``malloc``/``new T[n]``/``std::vector<T> v(n)`` and OpenMP ``map(a[0:n])``.
Pure text and tree analysis; nothing is executed.
"""

from __future__ import annotations

import functools
import math
import re
import shlex
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from roofline_lsp.detect.pragmas import SECTION_START
from roofline_lsp.detect.program import (
    Unit,
    defined_in_siblings,
    included_body,
    sibling_stamps,
    units_including,
    units_mentioning,
)
from roofline_lsp.detect.treewalk import (
    call_arguments,
    call_pattern,
    call_sites,
    descendants_of_type,
    effect_function,
    enclosing_function,
    is_variadic,
    kernel_function,
    parameter_declarations,
    pointee_name,
    qualified_declarator_name,
    text_functions,
)
from roofline_lsp.model.kernel import Detection, Function, Kernel, LaunchSite
from roofline_lsp.model.stamps import FileStamp
from roofline_lsp.syntax.cexpr import (
    Functions,
    evaluate,
    evaluate_dim3,
    inner_text,
    run_for_effects,
    split_args,
)
from roofline_lsp.syntax.conditionals import (
    Defined,
    active_text,
    branch_taken,
    default_build,
    dropped,
    file_defined,
)
from roofline_lsp.syntax.datatypes import parse_type, type_name
from roofline_lsp.syntax.declarations import declarations
from roofline_lsp.syntax.expr import (
    NAME,
    array_sizes,
    comma_parts,
    declarator_levels,
    declarator_stars,
    declared_name,
    loop_header,
    step_of,
    string_length,
    text,
    trips,
)
from roofline_lsp.syntax.functions import function_declarator, function_name
from roofline_lsp.syntax.hints import parse_hints
from roofline_lsp.syntax.sources import (
    LOCAL_INCLUDE,
    SourceReader,
    SourceView,
    source_view,
)

Dim3 = tuple[int, int, int]

_ARGV_CALL = re.compile(
    r"\b(?:std\s*::\s*)?(atoi|atol|atoll|atof|stoi|stol|stoll|stoul|stoull|stof|stod|strtol|"
    r"strtoul|strtoll|strtoull|strtof|strtod)\s*\(\s*argv\s*\[\s*(\d+)\s*\][^()]*(?:\([^()]*\))?"
    r"[^()]*\)"
)
_ARGV_BARE = re.compile(r"\bargv\s*\[\s*(\d+)\s*\]")
_CALL_OPEN = re.compile(r"\b[A-Za-z_]\w*\s*\(")
_CAST = re.compile(r"^(?:\(\s*[\w\s*]+\)\s*|(?:const|reinterpret|static)_cast\s*<[^<>]*>\s*\()")
_SIZEOF = re.compile(r"\bsizeof\s*\(\s*([^()]*(?:\([^()]*\))?[^()]*)\)")
_ALLOC_API = re.compile(
    r"\b(cudaMalloc|hipMalloc|cudaMallocManaged|hipMallocManaged|cudaMallocHost|hipHostMalloc|"
    r"cudaHostAlloc|hipMallocHost|cudaMallocAsync|hipMallocAsync|posix_memalign)\s*\("
)
_ALLOC_ASSIGN = re.compile(
    r"\b([A-Za-z_]\w*)\s*=\s*(?:\([^()]*\)\s*|static_cast\s*<[^<>]*>\s*|reinterpret_cast\s*<"
    r"[^<>]*>\s*)?\(?\s*(malloc|calloc|aligned_alloc|omp_target_alloc|_mm_malloc|"
    r"sycl::malloc_device|sycl::malloc_shared|malloc_device|malloc_shared|new\s+[\w:<>, ]+?\[)\s*"
)
_DEVICE_QUERY = re.compile(
    r"\b(?:cuda|hip)DeviceGetAttribute\s*\(\s*&\s*([A-Za-z_]\w*)\s*,\s*"
    r"(?:cudaDevAttr|hipDeviceAttribute)(\w+)"
)
# device attributes by their enumerator's name (lower case) -> the cudaDeviceProp field
_DEVICE_ATTRIBUTES = {
    "multiprocessorcount": "multiProcessorCount",
    "clockrate": "clockRate",
    "l2cachesize": "l2CacheSize",
    "warpsize": "warpSize",
    "maxthreadsperblock": "maxThreadsPerBlock",
    "maxsharedmemoryperblock": "sharedMemPerBlock",
    "maxthreadspermultiprocessor": "maxThreadsPerMultiProcessor",
    "maxblockspermultiprocessor": "maxBlocksPerMultiProcessor",
    "computecapabilitymajor": "major",
    "computecapabilityminor": "minor",
}
# the GPUs the program finds: the one the verdict is for (a program splitting its work over
# them gives that GPU all of it)
_DEVICE_COUNT = re.compile(r"\b(?:cuda|hip)GetDeviceCount\s*\(\s*&\s*([A-Za-z_]\w*)\s*\)")
# host memory the device may address (pinned, mapped or registered: with unified
# addressing a kernel reads it in place), and the device pointer to it
_HOST_MEMORY = re.compile(
    r"\b(cudaHostAlloc|cudaMallocHost|hipHostMalloc|hipHostAlloc|hipMallocHost|cudaHostRegister"
    r"|hipHostRegister|cudaHostGetDevicePointer|hipHostGetDevicePointer)\s*\("
)
# the occupancy API: what it returns comes from the target's per-SM limits (``_occupancy``)
_OCCUPANCY = re.compile(
    r"\b(?:cuda|hip)Occupancy(MaxActiveBlocksPerMultiprocessor|MaxPotentialBlockSize)"
    r"(?:VariableSMem)?(?:WithFlags)?\s*(?:<[^<>()]*>)?\s*\("
)
# copies whose first argument is the destination and the others are read
_COPY_CALL = re.compile(
    r"(?:std::)?(?:memcpy|memmove)|(?:cuda|hip)Memcpy(?:Async)?|(?:cuda|hip)MemcpyToSymbol(?:Async)?"
    r"|omp_target_memcpy"
)
# a copy from the host to a device buffer: ``cudaMemcpy(d_p, &p, sizeof(p), ...)``
_HOST_TO_DEVICE = re.compile(r"(?:cuda|hip)Memcpy(?:Async)?")
# a copy to a ``__constant__``/``__device__`` variable, and the variable it names
_TO_SYMBOL = re.compile(r"(?:cuda|hip)MemcpyToSymbol(?:Async)?")
_SYMBOL_NAME = re.compile(r"(?:HIP_SYMBOL\s*\(\s*)?([A-Za-z_]\w*)\s*\)?")
_ARRAY_VALUES = 64  # a local array's initializer elements kept as values, at most
_VECTOR_DECL = re.compile(r"\bstd::vector\s*<\s*([\w:]+)\s*>\s+([A-Za-z_]\w*)\s*\(")


@dataclass(frozen=True)
class ModelledQuery:
    """A runtime query answered from the GPU's profile (``cudaGetDeviceCount``) and the host
    variables it set."""

    call: str
    names: tuple[str, ...]


@dataclass
class HostContext:
    """Values, types and buffer sizes visible to one kernel (mutable while being built)."""

    texts: dict[str, str] = field(default_factory=dict)  # name -> expression text
    types: dict[str, str] = field(default_factory=dict)  # host variable -> declared type text
    extents: dict[str, float] = field(default_factory=dict)  # buffer -> elements allocated
    aliases: dict[str, str] = field(default_factory=dict)  # kernel param -> host buffer name
    fixed: dict[str, float] = field(default_factory=dict)  # user-given values (win over all)
    origin: dict[str, str] = field(default_factory=dict)  # name -> "hint" | "argument" | ...
    # names the program sets at run time from what no source gives (``fscanf(f, "%d", &n)``,
    # ``file >> n``, ``load(file, &n)``) and the kernel parameters passed them: name -> the
    # host variables so set that it comes from
    runtime: dict[str, tuple[str, ...]] = field(default_factory=dict)
    block: Dim3 | None = None
    grid: Dim3 | None = None
    template_args: tuple[str, ...] = ()
    # the launching function's template parameters, as its first instantiation gives them
    # ("" where nothing does)
    host_template: dict[str, str] = field(default_factory=dict)
    launch: LaunchSite | None = None
    functions: Functions = field(default_factory=dict)  # macros / helpers launch text calls
    # properties of the GPU the verdict is for, by ``cudaDeviceProp`` field name
    # (``prop.multiProcessorCount``, ``cudaDeviceGetAttribute(&n, ...)``)
    device: Mapping[str, float] = field(default_factory=dict)
    # runtime queries answered from the GPU's profile where the answer on the machine may
    # differ (the occupancy API, the number of GPUs), for the explanation: those the
    # launch's values come from (``used_queries``)
    modelled_queries: list[ModelledQuery] = field(default_factory=list)
    # pointers to host memory the device may read in place (zero-copy): host variables a
    # ``cudaHostGetDevicePointer`` set or holding pinned/registered host memory ...
    host_memory: set[str] = field(default_factory=set)
    # ... and the kernel's pointer parameters the launch gives them
    mapped: set[str] = field(default_factory=set)
    # the host functions of the file and the headers it includes, by name
    definitions: Mapping[str, Function] = field(default_factory=dict)
    # the parameters of an offload region's function a call passes a lambda (``forall(n,
    # [=](int i) { y[i] = a * x[i]; })``): the lambda's text, which the region's ``f(i)`` runs
    lambdas: dict[str, str] = field(default_factory=dict)
    # ... and a functor's temporary: its type (``Saxpy`` of ``run(n, Saxpy{x, y, a})``)
    functors: dict[str, str] = field(default_factory=dict)
    # a CUDA kernel's pointer parameters whose memory the host filled from values it knows
    # (``cudaMemcpy(d_p, &p, sizeof(p), ...)`` before the launch): ``p->n``, ``p[0]``
    copied: set[str] = field(default_factory=set)
    # the record types the kernel's file and its local headers declare: field names in order
    # (``Dataset d = {1000, 0, 2000};`` sets ``d.nrows``, ``d.ncols``...)
    structs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    struct_sizes: Mapping[str, int] = field(default_factory=dict)  # ... and their sizes
    _cache: dict[str, int | float | None] = field(default_factory=dict)
    # host loops met by the scan: whether each runs a trip, as its values were at its first
    # statement (:func:`_never_runs`), by node id
    _loop_runs: dict[int, tuple[Node, str | None, frozenset[str], bool]] = field(
        default_factory=dict
    )

    def add_queries(self, queries: Iterable[ModelledQuery]) -> None:
        """Record modelled queries, each once, in the order met."""
        for q in queries:
            if q not in self.modelled_queries:
                self.modelled_queries.append(q)

    def get(self, name: str) -> float | None:
        """The numeric value of ``name`` if the host side determines it."""
        v = self.value(name)
        return float(v) if v is not None else None

    def value(self, name: str) -> int | float | None:
        """``get``, an integer staying an integer (C division of host values truncates)."""
        if name in self.fixed:
            return self.fixed[name]
        if name in self._cache:
            return self._cache[name]
        self._cache[name] = None  # cycle guard
        t = self.texts.get(name)
        if t is None and self.device:
            t = _device_property(name, self.device)
        if t is not None and "sizeof" in t:
            # a constant sized in bytes (``const int DATA_SIZE = dataN * sizeof(float)``)
            t = self.host_text(t, [])
        v = evaluate(t, _Env(self), functions=self.functions) if t is not None else None
        if v is not None and (math.isnan(v) or math.isinf(v)):
            v = None
        self._cache[name] = v
        return v

    def set_at_run_time(self, expr: str, depth: int = 0) -> tuple[str, ...]:
        """The host variables ``expr`` uses, through the expressions that set them, that the
        program sets at run time (``runtime``) and that have no value."""
        out: list[str] = []
        for m in NAME.finditer(expr):
            nm = m.group(0)
            if self.value(nm) is not None:
                continue
            found = self.runtime.get(nm)
            if found is None and depth < 4 and self.texts.get(nm):
                found = self.set_at_run_time(self.texts[nm], depth + 1)
            out.extend(x for x in found or () if x not in out)
        return tuple(out)

    def eval_text(self, expr: str) -> float | None:
        v = self.eval_value(expr)
        return float(v) if v is not None else None

    def host_text(self, expr: str, argv: list[str]) -> str:
        """``expr`` with the program arguments and ``sizeof`` substituted
        (:func:`substitute_host`, with this context's types, record sizes and arrays)."""
        return substitute_host(expr, argv, self.types, self.struct_sizes, self.extents)

    def eval_value(self, expr: str) -> int | float | None:
        """``eval_text``, an integer staying an integer."""
        return evaluate(expr, _Env(self), functions=self.functions)


class _Env(Mapping[str, "str | float | int"]):
    """cexpr environment view over a HostContext (numbers first, then texts)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def __getitem__(self, key: str) -> str | float | int:
        v = self.ctx.value(key)
        if v is None:
            raise KeyError(key)
        return v

    def get(  # type: ignore[override]
        self, key: str, default: str | float | int | None = None
    ) -> str | float | int | None:
        v = self.ctx.value(key)
        return default if v is None else v

    def __iter__(self) -> Iterator[str]:
        return iter(self.ctx.texts)

    def __len__(self) -> int:
        return len(self.ctx.texts)


def argv_of(args: str | None) -> list[str]:
    if not args:
        return []
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def substitute_host(
    expr: str,
    argv: list[str],
    types: Mapping[str, str],
    sizes: Mapping[str, int] | None = None,
    elements: Mapping[str, float] | None = None,
) -> str:
    """Replace ``atoi(argv[k])`` by the program argument, ``strcmp(argv[k], "r")`` by the sign
    of comparing it with the text, and ``sizeof(T)`` by its size (``sizes``: the program's
    record types'; ``elements``: the element counts of its arrays, for ``sizeof(a)``)."""
    if "argv" in expr:

        def compared(m: re.Match[str]) -> str:
            k = int(m.group(1) or m.group(4))
            if not 1 <= k <= len(argv):
                return m.group(0)
            a, b = (argv[k - 1], m.group(2)) if m.group(1) else (m.group(3), argv[k - 1])
            return str((a > b) - (a < b))

        expr = _ARGV_STRCMP.sub(compared, expr)

        def arg(m: re.Match[str]) -> str:
            k = int(m.group(2))
            if 1 <= k <= len(argv):
                v = argv[k - 1]
                return v if _numeric(v) else m.group(0)
            return m.group(0)

        expr = _ARGV_CALL.sub(arg, expr)

        def bare(m: re.Match[str]) -> str:
            k = int(m.group(1))
            return argv[k - 1] if 1 <= k <= len(argv) and _numeric(argv[k - 1]) else m.group(0)

        expr = _ARGV_BARE.sub(bare, expr)
    if "sizeof" in expr:
        expr = _SIZEOF.sub(lambda m: str(sizeof(m.group(1), types, sizes, elements)), expr)
    if '"-' in expr:
        # a getter of an option with a default (``get_int_arg(&args, "--ne", 30)``): the
        # command line's ``--ne 40``, else the default
        given = option_values(argv)
        expr = _OPTION_DEFAULT.sub(lambda m: given.get(m.group(1).lstrip("-")) or m.group(2), expr)
    if "getOption" in expr:
        # an option-parser object (``op.getOptionInt("PointCount")``): the command line's
        # ``--PointCount 2048``, else the default its ``addOption`` registered
        given = option_values(argv)
        expr = _GET_OPTION.sub(
            lambda m: given.get(m.group(2)) or f"{m.group(1)}.option_{m.group(2)}", expr
        )
    return expr


# a call whose last two arguments are an option's name and a number, its default
# (``Arguments_consume_int_or_default(&args, "--ne", 30)``, ``cli.get("-n", 1024)``)
_OPTION_DEFAULT = re.compile(
    r"\b[A-Za-z_][\w:]*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)*\s*(?:<[^<>()]*>)?\s*\("
    r"(?:[^()\"]*,)?\s*\"(-{1,2}[A-Za-z][\w-]*)\"\s*,\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
    r"[uUlLfF]*\s*\)"
)
# ``op.getOptionInt("n")`` and the ``op.addOption("n", OPT_INT, "4096", ...)`` that
# registers its default (SHOC's OptionParser)
_GET_OPTION = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\.|->)\s*getOption\w*\s*\(\s*\"(\w+)\"\s*\)")
_ADD_OPTION = re.compile(
    r"\b([A-Za-z_]\w*)\s*(?:\.|->)\s*addOption\s*\(\s*\"(\w+)\"\s*,\s*\w+\s*,\s*\"([^\"]*)\""
)


# ``strcmp(argv[1], "r")`` (either order): the sign of comparing the argument with the text
_ARGV_STRCMP = re.compile(
    r'\bstrcmp\s*\(\s*argv\s*\[\s*(\d+)\s*\]\s*,\s*"([^"\\]*)"\s*\)'
    r'|\bstrcmp\s*\(\s*"([^"\\]*)"\s*,\s*argv\s*\[\s*(\d+)\s*\]\s*\)'
)


def sizeof(
    inner: str,
    types: Mapping[str, str],
    sizes: Mapping[str, int] | None = None,
    elements: Mapping[str, float] | None = None,
) -> int:
    """The bytes of ``sizeof(inner)``: a variable's type (a whole array of known length,
    ``float data[] = {...}``, ``float g[N][M]``, is its elements), else a type's size."""
    inner = inner.strip()
    name = re.sub(r"[\s*()]|\[.*?\]", "", inner)
    if name in types and not re.fullmatch(r"[\w:\s<>]*\*+\s*", inner):
        t = parse_type(types[name])
        deref = inner.count("*") + inner.count("[")
        n = elements.get(name) if elements else None
        if deref == 0 and "[]" in types[name] and n and math.isfinite(n):
            return int(n) * t.size
        if t.pointer > deref:
            return 8
        if t.kind == "unknown" and sizes and t.name in sizes:
            return sizes[t.name]  # ``sizeof(*rv)`` of ``FOUR_VECTOR *rv``: the record's
        return t.size
    if inner.endswith("*"):
        return 8
    t = parse_type(inner)
    record = re.sub(r"\b(?:const|struct|volatile)\b", " ", inner).strip()
    if t.kind == "unknown" and sizes and record in sizes:
        return sizes[record]  # ``sizeof(uint4_aligned)``: a struct the program declares
    return t.size


def _numeric(v: str) -> bool:
    return re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", v) is not None


# --------------------------------------------------------------------------------------------
# host functions
# --------------------------------------------------------------------------------------------


def function_params(fn: Node) -> list[tuple[str, str]]:
    """(type text, name) of each parameter of a function definition."""
    out = []
    for p in parameter_declarations(fn):
        decl = p.child_by_field_name("declarator")
        name = declared_name(decl)
        full = text(p)
        tyt = full[: full.rfind(name)] if name else full
        if decl is not None:
            tyt = text(p.child_by_field_name("type")) + " " + declarator_stars(decl)
        out.append((tyt.strip(), name))
    return out


def with_defaults(fn: Node, args: list[str]) -> list[str]:
    """A call's argument texts followed by the default values of the parameters it leaves
    out (``void run(float *a, int n, int m = 32)`` called as ``run(a, n)``: ``m`` is 32)."""
    out = list(args)
    for p in parameter_declarations(fn)[len(args) :]:
        default = p.child_by_field_name("default_value")
        if default is None:
            break
        out.append(text(default))
    return out


def array_reference_sizes(fn: Node) -> dict[int, str]:
    """The sizes of a function's parameters that are references to arrays (``T
    (&items)[N]``), by parameter position: a call deduces a template parameter ``N`` from
    its argument's length."""
    out: dict[int, str] = {}
    for i, p in enumerate(parameter_declarations(fn)):
        decl = p.child_by_field_name("declarator")
        size = decl.child_by_field_name("size") if decl is not None else None
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        if (
            decl is not None
            and decl.type == "array_declarator"
            and size is not None
            and inner is not None
            and inner.type == "parenthesized_declarator"
            and "&" in text(inner)
        ):
            out[i] = text(size)
    return out


_STMT_CONTAINERS = frozenset(
    {
        "compound_statement",
        "if_statement",
        "else_clause",
        "for_statement",
        "while_statement",
        "do_statement",
        "switch_statement",
        "case_statement",
        "labeled_statement",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "try_statement",
        "catch_clause",
        "for_range_loop",
        "attributed_statement",
    }
)


def host_statements(fn: Node, stop: int) -> list[tuple[Node, int]]:
    """Declarations and expression statements of a function body before byte ``stop``, in
    order, with their loop depth (statement level only: expressions are not descended)."""
    out: list[tuple[Node, int]] = []
    body = fn.child_by_field_name("body")
    if body is None:
        return out
    defined: Defined | None = None  # the file's #defines, read at the first conditional
    stack: list[tuple[Node, int]] = [(body, 0)]
    while stack:
        node, depth = stack.pop()
        if node.start_byte >= stop:
            continue
        t = node.type
        if t in ("declaration", "expression_statement") or (
            t == "while_statement" and round_up(node) is not None
        ):
            out.append((node, depth))
            continue
        if t == "if_statement":
            # ``if (argc < 3 || (n = atoi(argv[1])) <= 0)``, ``if (getLevels(n, &levels))``:
            # the assignments and calls of the condition run on the path past it
            cond = node.child_by_field_name("condition")
            if cond is not None:
                effects = ("assignment_expression", "call_expression")
                out.extend((a, depth) for a in _outermost(cond, effects))
        if t == "for_statement":
            init = node.child_by_field_name("initializer")
            if init is not None and init.type != "declaration":
                # ``for (i = 0; ...)``: the assignments run once, before the first trip
                out.extend((a, depth) for a in comma_parts(init))
            if node.child_by_field_name("update") is not None:
                out.append((node, depth))  # what its update clause stepped, at its end
        if t == "for_range_loop":
            out.append((node, depth))  # its variable, before the body
        if t in _STMT_CONTAINERS:
            d = depth + (1 if t in ("for_statement", "while_statement", "do_statement") else 0)
            kids = node.named_children
            if t.startswith("preproc_"):  # only the branch the preprocessor keeps
                defined = defined or file_defined(fn)
                kids = [c for c in kids if not dropped(c, defined)]
            for c in reversed(kids):
                stack.append((c, d))
    out.sort(key=lambda x: statement_at(x[0]))
    return out


def _record_fields(ctx: HostContext, fn: Node, type_text: str) -> list[str]:
    """The fields, in order, of the aggregate type ``type_text`` names (``Dataset``, ``struct
    Dataset``, ``const Dataset``): declared in ``fn``'s file, else in the kernel's file or
    its headers; empty for another type, or one ``fn``'s file gives a constructor (braces
    then call it: ``Img image{w, h}``)."""
    words = [w for w in re.findall(r"[A-Za-z_][\w:]*", type_text) if w not in _QUALIFIERS]
    if len(words) != 1:
        return []
    name = words[0].rsplit("::", 1)[-1]
    root = _root(fn)
    if _constructor(root.text or b"", root, name) is not None:
        return []
    fields = declarations(root).structs.get(name) or ctx.structs.get(name)
    return list(fields) if fields else []


_QUALIFIERS = frozenset({"const", "volatile", "static", "struct", "class", "constexpr"})
_VECTOR_OF = re.compile(r"\bstd::vector\s*<\s*([^<>]+?)\s*>")


def _aggregate(
    ctx: HostContext,
    fn: Node,
    name: str,
    type_text: str,
    value: Node,
    argv: list[str],
    array: bool = False,
) -> bool:
    """``Dataset d = {1000, 0, 2000};`` (``{.ncols = 2000}`` too): each field its value, by
    position (a nested list leaves its field unknown); ``std::vector<Dataset> v = {{...},
    ...}`` or an ``array`` ``Dataset v[] = {{...}, ...}``: the first element's fields as
    ``v[0].ncols`` (and ``v.size()``). False when the type is no record type the file or
    its headers declare."""
    vector = _VECTOR_OF.search(type_text)
    fields = _record_fields(ctx, fn, vector.group(1) if vector else type_text)
    if not fields:
        return False
    elements = value.named_children
    if vector or array:
        if vector:
            _assign(ctx, f"{name}.size()", str(len(elements)), argv)
        if not elements or elements[0].type != "initializer_list":
            return True
        name, elements = f"{name}[0]", elements[0].named_children
    for i, element in enumerate(elements):
        field_, item = (fields[i] if i < len(fields) else None), element
        if element.type == "initializer_pair":  # ``.ncols = 2000``
            designator = element.child_by_field_name("designator")
            item = element.child_by_field_name("value") or element
            field_ = text(designator).lstrip(".").strip() if designator is not None else None
        if field_ is None:
            continue
        known = item.type != "initializer_list"
        _assign(ctx, f"{name}.{field_}", text(item) if known else "", argv)
    return True


def _range_element(loop: Node, ctx: HostContext, argv: list[str]) -> None:
    """``for (auto p : inputs)``: ``p`` as the first element the host knows (``inputs[0]``
    and its fields), what the launches in the body see on the first trip."""
    declarator = loop.child_by_field_name("declarator")
    right = loop.child_by_field_name("right")
    var = declared_name(declarator) if declarator is not None else ""
    if not var or right is None or not NAME.fullmatch(text(right).strip()):
        return
    first = f"{text(right).strip()}[0]"
    for key in [k for k in ctx.texts if k == first or k.startswith(first + ".")]:
        v = ctx.value(key)
        _assign(ctx, var + key[len(first) :], repr(v) if v is not None else "", argv)


def _outermost(node: Node, types: tuple[str, ...]) -> list[Node]:
    """The outermost nodes of ``types`` in ``node`` (itself included; not within a lambda),
    in source order."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            out.append(n)
        elif n.type != "lambda_expression":
            stack.extend(reversed(n.named_children))
    return out


_ROUND_UP = re.compile(
    r"while\s*\(\s*([A-Za-z_]\w*)\s*%\s*([^()!=]+?)\s*(?:!=\s*0\s*)?\)\s*\{?\s*"
    r"(?:\+\+\s*\1|\1\s*\+\+|\1\s*\+=\s*1)\s*;\s*\}?"
)


def statement_at(node: Node) -> int:
    """Where a host statement takes effect: a ``for`` loop's update clause at its end."""
    return node.end_byte if node.type == "for_statement" else node.start_byte


def round_up(node: Node) -> tuple[str, str] | None:
    """``while (n % c != 0) n++;``: the variable and the divisor it is rounded up to a
    multiple of (a known value after the loop, not one known only at run time)."""
    m = _ROUND_UP.fullmatch(text(node).strip())
    return (m.group(1), m.group(2)) if m else None


def _scan_function(fn: Node, stop: int, ctx: HostContext, argv: list[str]) -> None:
    """Record the host declarations/assignments of ``fn`` before ``stop`` into ``ctx``."""
    _declare_params(fn, ctx)
    for node, depth in host_statements(fn, stop):
        if statement_at(node) < stop:
            _scan_statement(node, depth, fn, ctx, argv)
    _options(compiled_text(fn), ctx, argv)


def compiled_text(fn: Node) -> str:
    """``fn``'s text without the preprocessor's dropped branches and directive lines
    (``conditionals.active_text``): what option parsing and allocations are read from."""
    if fn.text is None or not _CONDITIONAL_DIRECTIVE.search(fn.text):
        return text(fn)
    return active_text(fn, file_defined(fn))


_CONDITIONAL_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(?:if|el|endif)", re.M)


def method_class(fn: Node) -> str:
    """The class of a method: around an inline definition, or that a qualified definition
    names (``Solver`` of ``void Solver::step()``, ``Stream`` of ``Stream<T>::copy``); else
    ""."""
    p = fn.parent
    while p is not None and p.type in ("field_declaration_list", "template_declaration"):
        p = p.parent
    if p is not None and p.type in ("class_specifier", "struct_specifier"):
        owner = text(p.child_by_field_name("name"))
    else:
        owner = _qualified_owner(fn)
    return owner.rsplit("::", 1)[-1].split("<", 1)[0]


@dataclass(frozen=True)
class _ClassParts:
    """Where a class's parts are: the trees of the method's own file, of the headers it
    includes (through the functions they define) and of the sibling files that name the
    class (its declaration in a header, the object a ``main.cpp`` configures), each with
    its source and, for a sibling, its detection."""

    cls: str
    trees: tuple[tuple[Node, bytes, Detection | None], ...]

    def members(self) -> dict[str, str]:
        """The class's data members: field name -> type text, from the first declaration."""
        for root, _source, detection in self.trees:
            macros = detection.macros if detection is not None else None
            found = declarations(root, macros).structs.get(self.cls)
            if found:
                return dict(found)
        return {}

    def initializers(self) -> dict[str, str]:
        """The class's default member initializers (``int reps_ = 12;``, ``float s{2.5f};``):
        field name -> its expression, from the first definition of the class."""
        for root, _source, _d in self.trees:
            for kind in ("class_specifier", "struct_specifier"):
                for node in descendants_of_type(root, kind, root.end_byte):
                    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
                    if name is None or body is None or text(name) != self.cls:
                        continue
                    out: dict[str, str] = {}
                    for field_ in body.named_children:
                        decl = field_.child_by_field_name("declarator")
                        value = field_.child_by_field_name("default_value")
                        if field_.type != "field_declaration" or decl is None or value is None:
                            continue
                        if value.type == "initializer_list":  # ``{2.5f}``: one value
                            if value.named_child_count != 1:
                                continue
                            value = value.named_children[0]
                        out[text(decl)] = text(value)
                    return out
        return {}

    def method(self, name: str) -> Node | None:
        return next(
            (m for root, _s, _d in self.trees if (m := _method_definition(root, self.cls, name))),
            None,
        )

    def constructor(self, arity: int) -> Node | None:
        """The constructor taking ``arity`` arguments, else the first."""
        for wanted in (arity, None):
            for root, src, _d in self.trees:
                if c := _constructor(src, root, self.cls, wanted):
                    return c
        return None


def _class_parts(fn: Node, detection: Detection, view: SourceView | None) -> _ClassParts | None:
    """The parts of the class method ``fn`` belongs to (None for a free function)."""
    cls = method_class(fn)
    if not cls:
        return None
    own = _root(fn)
    trees: dict[int, tuple[Node, bytes, Detection | None]] = {own.id: (own, detection.source, None)}
    for f in detection.functions.values():
        if f.node is not None:
            root = _root(f.node)
            trees.setdefault(root.id, (root, root.text or b"", None))
    pat = re.compile(rb"\b" + re.escape(cls.encode()) + rb"\b")
    for u in units_mentioning(detection.file, pat, view):
        trees.setdefault(u.root.id, (u.root, u.detection.source, u.detection))
    return _ClassParts(cls, tuple(trees.values()))


def _members(
    fn: Node, detection: Detection, ctx: HostContext, argv: list[str], view: SourceView | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The data members a method sees by their bare names (``u[i]`` in ``Solver::step``):
    their types (field name -> type text, as the file, its headers or its sibling files
    declare the class) and values (:func:`_member_values`)."""
    parts = _class_parts(fn, detection, view)
    if parts is None:
        return {}, {}
    types = parts.members()
    return types, _member_values(fn, parts, set(types), detection, ctx, argv, view)


def _member_values(
    fn: Node,
    parts: _ClassParts,
    members: set[str],
    detection: Detection,
    ctx: HostContext,
    argv: list[str],
    view: SourceView | None,
) -> dict[str, str]:
    """The values a method's data members hold: from the object it is called on
    (``s.step()``, ``p->step()``; in this file or a sibling, ``main.cpp``), constructed
    where the caller declares it (``Solver s(n, iters)``, ``new Solver(n, iters)``), through
    the class's default member initializers (``int reps_ = 12;``), the constructor's member
    initializers (``n_(n)``) and the members its body assigns (``m_ = n * 2;``), then the
    setters the caller runs on it. The first call whose object the caller constructs gives
    them."""
    method = function_name(fn)
    if not members or not method:
        return {}
    pat = re.compile(rb"\b([A-Za-z_]\w*)\s*(?:\.|->)\s*" + re.escape(method.encode()) + rb"\s*\(")
    program = _Program(detection.file, view)
    _SCANNING.append(program)  # (a setter calling a helper defined in a sibling file)
    try:
        for root, source, unit in parts.trees:
            found = unit or (detection if root == _root(fn) else None)
            if found is None:
                continue  # (a header's callers are not searched)
            for m in pat.finditer(source):
                caller = enclosing_function(root.descendant_for_byte_range(m.start(), m.end()))
                if caller is None or caller == fn:
                    continue
                obj = m.group(1).decode()
                args = _constructed_with(caller, obj, parts.cls, m.start())
                if args is None:
                    continue
                sub, _start, _runs = _caller_scope(caller, m.start(), found, ctx, argv, 1, view, [])
                inner = _program_context(detection, argv, ctx.fixed, ctx.device)
                for member, value in parts.initializers().items():
                    _assign(inner, member, value, argv)  # before the constructor's
                ctor = parts.constructor(len(args))
                if ctor is not None:
                    _run_method(
                        ctor,
                        [sub.eval_value(sub.host_text(a, argv)) for a in args],
                        inner,
                        argv,
                    )
                _object_updates(caller, obj, parts, m.start(), sub, inner, argv)
                out = {k: repr(v) for k in members if (v := inner.value(k)) is not None}
                if out:
                    return out
    finally:
        _SCANNING.pop()
    return {}


def _run_method(
    method: Node, args: list[int | float | None], members: HostContext, argv: list[str]
) -> None:
    """Run a constructor or method of an object whose data members ``members`` holds, its
    parameters bound to ``args``: member initializers (``n_(n)``), then its body."""
    for (_ptype, pname), v in zip(function_params(method), args, strict=False):
        if pname:
            members.texts[pname] = repr(v) if v is not None else ""
    members._cache.clear()
    inits = next((c for c in method.named_children if c.type == "field_initializer_list"), None)
    for init in inits.named_children if inits is not None else []:
        name = next((c for c in init.named_children if c.type == "field_identifier"), None)
        value = init.named_children[-1] if init.named_child_count > 1 else None
        if name is not None and value is not None and value.named_child_count == 1:
            v = members.eval_value(text(value.named_children[0]))
            members.texts[text(name)] = repr(v) if v is not None else ""
    _scan_function(method, method.end_byte, members, argv)


def _object_updates(
    caller: Node,
    obj: str,
    parts: _ClassParts,
    before: int,
    scope: HostContext,
    members: HostContext,
    argv: list[str],
) -> None:
    """What ``caller`` does to object ``obj`` before byte ``before``: a member assigned
    (``s.iters = 10``) or a method of its class run on it (a setter, ``s.setIters(10)``),
    values from ``scope``. In a loop (once per trip, or on some trips) or a branch the host
    values cannot decide what they set is not known; in one they decide against, nothing."""
    for node, depth in host_statements(caller, before):
        e = node.named_children[0] if node.type == "expression_statement" else None
        if e is None:
            continue
        taken = _branch_taken(node, caller, scope, argv)
        if taken is False:
            continue
        depth += taken is None
        if e.type == "assignment_expression":
            left = text(e.child_by_field_name("left")).replace(" ", "")
            right = e.child_by_field_name("right")
            for sep in (".", "->"):
                field_ = left[len(obj) + len(sep) :] if left.startswith(obj + sep) else ""
                if field_ and right is not None and NAME.fullmatch(field_):
                    v = scope.eval_value(scope.host_text(text(right), argv))
                    members.texts[field_] = repr(v) if v is not None and depth == 0 else ""
                    members._cache.clear()
        elif e.type == "call_expression":
            f = e.child_by_field_name("function")
            if (
                f is None
                or f.type != "field_expression"
                or text(f.child_by_field_name("argument")) != obj
            ):
                continue
            method = parts.method(text(f.child_by_field_name("field")))
            arguments = e.child_by_field_name("arguments")
            if method is None or arguments is None:
                continue
            before_call = dict(members.texts)
            values = [
                scope.eval_value(scope.host_text(text(a), argv)) for a in arguments.named_children
            ]
            _run_method(method, values, members, argv)
            if depth > 0:
                for k, now in members.texts.items():
                    if before_call.get(k) != now:
                        members.texts[k] = ""
                members._cache.clear()


def _method_definition(root: Node, cls: str, name: str) -> Node | None:
    """The definition of method ``name`` of class ``cls`` in the tree ``root`` (inline or
    ``cls::name``)."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            if function_name(n) == name and method_class(n) == cls:
                return n
            continue
        stack.extend(n.named_children)
    return None


def _constructor(source: bytes, root: Node, cls: str, arity: int | None = None) -> Node | None:
    """The first definition of class ``cls``'s constructor in the tree ``root`` of
    ``source`` (inline or ``cls::cls(...)``), found textually and confirmed on the tree;
    with ``arity``, the first taking that many arguments."""
    name = re.escape(cls.encode())
    for m in re.finditer(rb"\b" + name + rb"\s*(?:::\s*" + name + rb"\s*)?\(", source):
        node: Node | None = root.descendant_for_byte_range(m.start(), m.start() + len(cls))
        while node is not None and node.type not in ("function_definition", "compound_statement"):
            node = node.parent
        fdecl = function_declarator(node) if node is not None else None
        declared = fdecl.child_by_field_name("declarator") if fdecl is not None else None
        if declared is None or text(declared).replace(" ", "") not in (cls, f"{cls}::{cls}"):
            continue
        if node is not None and (arity is None or len(function_params(node)) == arity):
            return node
    return None


def _constructed_with(caller: Node, obj: str, cls: str, before: int) -> list[str] | None:
    """The constructor arguments of object ``obj`` of class ``cls`` as ``caller`` declares
    it before byte ``before``: ``cls obj(a, b)``, ``cls obj{a, b}``, ``cls *obj = new
    cls(a, b)``, ``auto obj = cls(a, b)``; None if it does not."""
    stack = [caller]
    while stack:
        n = stack.pop()
        if n.start_byte >= before:
            continue
        if n.type == "declaration":
            ty = text(n.child_by_field_name("type")).split("<", 1)[0].strip()
            for d in n.children_by_field_name("declarator"):
                if ty not in (cls, "auto") or declared_name(d) != obj:
                    continue
                args = _construction_args(d)
                if args is not None:
                    return args
            continue
        stack.extend(n.named_children)
    return None


def _construction_args(d: Node) -> list[str] | None:
    """The constructor arguments a declarator gives: ``s`` (none), ``s(n, iters)``, ``s{n,
    iters}``, ``*s = new Solver(n, iters)``, ``s = Solver(n, iters)``; None if it gives
    none."""
    if d.type == "identifier":  # ``Solver s;``: default-constructed
        return []
    if d.type == "function_declarator":  # ``Solver s(n, iters)`` parses as one
        params = d.child_by_field_name("parameters")
        return [text(a) for a in params.named_children] if params else []
    value = d.child_by_field_name("value") if d.type == "init_declarator" else None
    if value is not None and value.type in ("new_expression", "call_expression"):
        value = value.child_by_field_name("arguments")
    if value is not None and value.type in ("argument_list", "initializer_list"):
        return [text(a) for a in value.named_children]
    return None


def _qualified_owner(fn: Node) -> str:
    """The class a qualified method definition names (``Stream<T>`` of ``void
    Stream<T>::copy()``), else ""."""
    fdecl = function_declarator(fn)
    qname = qualified_declarator_name(fdecl.child_by_field_name("declarator")) if fdecl else ""
    return qname.rsplit("::", 1)[0] if qname and "::" in qname else ""


def _declare_params(fn: Node, ctx: HostContext) -> None:
    """The types of host function ``fn``'s parameters."""
    for ptype, pname in function_params(fn):
        if pname:
            if "*" in ptype or "[" in ptype:
                # a declared pointer stays one (a caller's argument may be an array typedef)
                ctx.types[pname] = ptype
            else:
                ctx.types.setdefault(pname, ptype)


def _scan_statement(node: Node, depth: int, fn: Node, ctx: HostContext, argv: list[str]) -> None:
    """Record one declaration or expression statement of host function ``fn`` (``depth``:
    the loops around it) into ``ctx``; of a ``for`` loop ended, what its update clause
    stepped."""
    if node.type == "for_statement":
        _loop_exit(node, depth, ctx, argv)
        return
    if node.type == "for_range_loop":
        _range_element(node, ctx, argv)
        return
    if depth > 0 and _never_runs(node, fn, ctx):
        return  # in a loop the host values say runs no trip (no arguments to parse)
    # what a call may change at run time (``init(&cfg)``) is unknown after it, unless the
    # call's own effects (``_call_effects``, from these values) say what it becomes
    held: dict[str, str] = {}
    reads = _read_at_run_time(node)
    if reads and _branch_taken(node, fn, ctx, argv) is False:
        reads = []  # (on a path the host values rule out: ``else fscanf(f, "%d", &n)``)
    for read in reads:
        ctx.runtime[read] = (read,)
        for name in [k for k in ctx.texts if k == read or k.startswith(read + ".")]:
            was = ctx.value(name)
            if was is not None:
                held[name] = repr(was)
            _assign(ctx, name, "", argv)
            ctx.runtime[name] = (name,)
    if node.type != "declaration":
        _vector_updates(node, depth, fn, ctx, argv)
    if node.type == "expression_statement":
        _runtime_queries(text(node), ctx, argv)
    if node.type == "while_statement":
        ru = round_up(node)
        taken = _branch_taken(node, fn, ctx, argv) if ru is not None else False
        if ru is not None and ru[0] in ctx.texts and taken is not False:
            x, c = ru
            _assign(ctx, x, f"({x}) + (({c}) - ({x}) % ({c})) % ({c})", argv)
        return
    if node.type == "declaration":
        ty = text(node.child_by_field_name("type"))
        for d in node.children_by_field_name("declarator"):
            name = declared_name(d)
            if not name:
                continue
            ctx.types[name] = ty + " " + declarator_stars(d)
            if "dim3" in ty and d.type in ("init_declarator", "identifier"):
                v = d.child_by_field_name("value") if d.type == "init_declarator" else None
                _assign_dim3(ctx, name, text(v) if v is not None else "", argv)
            elif d.type == "init_declarator" and _assign_vector(
                ctx, name, text(d.child_by_field_name("value") or d), argv
            ):
                pass
            elif d.type == "init_declarator":
                v = d.child_by_field_name("value")
                array = d.child_by_field_name("declarator")
                size = _array_elements(array) if array is not None else None
                if size is not None:
                    ctx.extents[name] = _maybe(ctx, size, argv)
                if v is None:
                    continue
                vt = text(v)
                chars = string_length(v)
                if chars is not None:
                    # ``const char *key = "0001..."``: strlen(key) (std::string: key.size())
                    for measured in (f"strlen({name})", f"{name}.size()", f"{name}.length()"):
                        _assign(ctx, measured, str(chars), argv)
                    continue
                if v.type in ("argument_list", "initializer_list"):
                    inner = v.named_children
                    listed = array is not None and array.type == "array_declarator"
                    if listed and size is None and v.type == "initializer_list":
                        ctx.extents[name] = float(len(inner))  # ``float c[] = {1, 2, 3}``
                    if v.type == "initializer_list" and _aggregate(
                        ctx, fn, name, ty, v, argv, listed
                    ):
                        continue
                    listed_vector = "vector<" in ty.replace(" ", "")
                    if (
                        v.type == "initializer_list"
                        and array is not None
                        and (array.type == "array_declarator" or "array<" in ty or listed_vector)
                        and len(inner) <= _ARRAY_VALUES
                    ):
                        # const int sizes[] = {256, 1024}: sizes[1] is 1024 (a std::array and
                        # a std::vector listed so too, whose size() is the list's length)
                        for i, element in enumerate(inner):
                            _assign(ctx, f"{name}[{i}]", text(element), argv)
                        if listed_vector:
                            _assign(ctx, f"{name}.size()", str(len(inner)), argv)
                        continue
                    if "vector" in ty and v.type == "argument_list" and inner:
                        # std::vector<float> w(m): w.size() is m; w(m, 1.f): each is 1
                        _assign(ctx, f"{name}.size()", text(inner[0]), argv)
                        if len(inner) == 2 and _invariant(inner[1], None):
                            _assign(ctx, f"{name}[*]", text(inner[1]), argv)
                    if len(inner) == 1:
                        vt = text(inner[0])
                    else:
                        if "vector" in ty and inner:
                            ctx.extents[name] = _maybe(ctx, text(inner[0]), argv)
                        continue
                _assign(ctx, name, vt, argv)
                _copy_fields(ctx, name, vt, argv)
                _point_at(ctx, ctx, name, vt)
                if v.type == "call_expression":
                    _call_effects(v, fn, ctx, argv, result=name, held=held)
            elif d.type == "function_declarator" and "dim3" in ty:
                params = d.child_by_field_name("parameters")
                _assign_dim3(ctx, name, text(params), argv)
            elif d.type == "function_declarator" and "vector" in ty:
                # std::vector<float> w(m) (parsed as a declaration of a function w)
                params = d.child_by_field_name("parameters")
                first = params.named_children[0] if params is not None else None
                if first is not None:
                    _assign(ctx, f"{name}.size()", text(first), argv)
            elif d.type == "array_declarator":
                size = _array_elements(d)
                if size is not None:
                    ctx.extents[name] = _maybe(ctx, size, argv)
            elif d.type == "identifier" and _VECTOR_TYPE.search(ty) and "&" not in ty:
                _assign(ctx, f"{name}.size()", "0", argv)  # filled by ``_vector_updates``
    else:
        if node.type == "expression_statement":
            e = node.named_children[0] if node.named_children else None
        else:  # an expression of a ``for`` header's initializer
            e = node
        if e is not None and e.type == "call_expression":
            _scanned(e, ctx, argv)
            _copied_to_device(e, ctx, argv)
            registered = _ADD_OPTION.match(text(e))
            if registered is not None and _numeric(registered.group(3)):
                obj, name, default = registered.groups()
                _assign(ctx, f"{obj}.option_{name}", default, argv)
            _call_effects(e, fn, ctx, argv, held=held)
        # ``n++;``, and one inside another expression (``table[++n] = i;``)
        for u in _outermost(e, ("update_expression",)) if e is not None else ():
            arg = u.child_by_field_name("argument")
            counter = _target(arg) if arg is not None else None
            if counter in ctx.texts and _branch_taken(node, fn, ctx, argv) is not False:
                sign = "+" if "++" in text(u) else "-"
                # in counted loops and nothing else (``for x, for z: i++``): once per trip of
                # each; in a branch of a loop (``nnz++`` per element read): known only at
                # run time
                times = 1.0 if depth == 0 else _counted_times(node, fn, ctx)
                step = f"({counter}) {sign} {times!r}" if times is not None else ""
                _assign(ctx, str(counter), step, argv)
        if e is not None and e.type == "assignment_expression":
            left = e.child_by_field_name("left")
            op = e.child_by_field_name("operator")
            right = e.child_by_field_name("right")
            if left is None or right is None or op is None:
                return
            target = _target(left)
            if _OPTION_VALUE.search(text(right)):
                if not _option_given(node, fn, argv):
                    # ``case 's': size = atoi(optarg)`` in the option loop, run without
                    # ``-s``: the default it had
                    return
                number = _option_number(node, fn, argv) if _CONVERTED.match(text(right)) else None
                if target is not None and number is not None:
                    # given: its number, here (``ny = nx`` after it sees it too)
                    _assign(ctx, target, number, argv)
                    return
            taken = _branch_taken(node, fn, ctx, argv) if target is not None else False
            if target is None or taken is False:
                return
            every = _each_element_field(left, right, node, fn) if op.type == "=" else None
            if every is not None:  # for (i = 0; i < n; i++) plan[i].count = N / n;
                _assign(ctx, every, text(right) if taken else "", argv)
                return
            if "[?]" in target:  # some element (or a field of it): none is known any more
                head, _, tail = target.partition("[?]")
                same = re.compile(re.escape(head) + r"\[[^\]]*\]" + re.escape(tail))
                for k in [k for k in ctx.texts if same.match(k)]:
                    _assign(ctx, k, "", argv)
                return
            if taken is None and (depth > 0 or _in_case(node, fn)):
                # set on some iterations only (``if (count == 0) count = 1;``), or by one case
                # of a switch on a value not known: it varies
                _assign(ctx, target, "", argv)
                return
            rt = text(right)
            if op.type == "=" and "dim3" in ctx.types.get(target, ""):
                _assign_dim3(ctx, target, rt, argv)
            elif op.type == "=" and _assign_vector(ctx, target, rt, argv):
                pass
            elif op.type == "=" and depth > 0 and target in _IDENT.findall(rt):
                # ``n = n * shape_i`` in a loop: accumulated (see ``_accumulated``)
                _assign(ctx, target, _accumulated(node, fn, ctx, target, right), argv)
                _copy_fields(ctx, target, "", argv)
            elif op.type == "=":
                _assign(ctx, target, rt, argv)
                _copy_fields(ctx, target, rt, argv)
            elif op.type in ("*=", "+=", "-=", "/=", "<<=", ">>=") and target in ctx.texts:
                if depth == 0:
                    _assign(ctx, target, f"({target}) {op.type[:-1]} ({rt})", argv)
                else:
                    _assign(ctx, target, _accumulated(node, fn, ctx, target, e), argv)


_VECTOR_TYPE = re.compile(r"\bstd::vector\s*<")
_STORAGE = re.compile(r"\s*(?:([A-Za-z_]\w*)\s*\.\s*data\s*\(\s*\)|&\s*([A-Za-z_]\w*)\s*\[.*\])\s*")
_APPEND = ("push_back", "emplace_back")


def _vector_updates(node: Node, depth: int, fn: Node, ctx: HostContext, argv: list[str]) -> None:
    """What a statement does to the host's ``std::vector`` sizes and elements. An element
    appended (``shape.push_back(dim)``) grows the size, once per trip of the counted loops
    around it, and is the vector's next element; while every element appended is the same
    value, that value is each element's (``[*]``: ``n = n * shape[i]`` in a loop). Whatever
    else changes a vector (``resize``, ``insert``, a call it is handed to) leaves what is
    not known from it unknown."""
    for call in _outermost(node, ("call_expression",)):
        _vector_call(call, node, depth, fn, ctx, argv)


def _vector_call(
    call: Node, node: Node, depth: int, fn: Node, ctx: HostContext, argv: list[str]
) -> None:
    callee = call.child_by_field_name("function")
    args_node = call.child_by_field_name("arguments")
    args = args_node.named_children if args_node is not None else []
    if callee is not None and callee.type == "field_expression":
        obj = callee.child_by_field_name("argument")
        method = callee.child_by_field_name("field")
        name = text(obj) if obj is not None else ""
        if method is None or f"{name}.size()" not in ctx.texts:
            return
        if text(method) in _APPEND and len(args) == 1:
            _appended(node, depth, fn, ctx, name, args[0], argv)
        elif text(method) in ("resize", "assign", "insert", "erase", "clear", "pop_back", "swap"):
            size = text(args[0]) if text(method) == "resize" and depth == 0 and args else ""
            _forget_elements(ctx, name, argv)
            _assign(ctx, f"{name}.size()", size, argv)
        return
    if callee is None:
        return
    definition = ctx.definitions.get(text(callee))
    for i, a in enumerate(args):
        name = text(a)
        storage = _STORAGE.fullmatch(name)
        if storage is not None:  # ``fread(v.data(), ...)``: what it holds, not its size
            _forget_elements(ctx, storage.group(1) or storage.group(2), argv)
            continue
        if f"{name}.size()" not in ctx.texts:
            continue
        if definition is not None:
            params = function_params(definition.node)
            ptype = params[i][0] if i < len(params) else ""
            if "&" not in ptype or "const" in ptype:
                continue  # a copy or a read-only reference: the caller's vector stays
        _forget_elements(ctx, name, argv)  # handed to what may fill it
        _assign(ctx, f"{name}.size()", "", argv)


def _appended(
    node: Node, depth: int, fn: Node, ctx: HostContext, name: str, arg: Node, argv: list[str]
) -> None:
    size = ctx.value(f"{name}.size()")
    if branch_taken(node, default_build(fn), {}) is False:
        return  # (``#ifdef EXAMPLE`` around it: not in the default build)
    if depth == 0:
        taken = _branch_taken(node, fn, ctx, argv)
        if taken is False:
            return
        times = 1.0 if taken else None
    else:  # (in a branch of the loop: known only at run time)
        times = _counted_times(node, fn, ctx)
    if size is None or times is None:
        _forget_elements(ctx, name, argv)
        _assign(ctx, f"{name}.size()", "", argv)
        return
    value = text(arg)
    same = _invariant(arg, _outer_loop(node, fn))
    every = ctx.texts.get(f"{name}[*]")
    if same and (size == 0 or every == value):
        _assign(ctx, f"{name}[*]", value, argv)
    elif every is not None:
        _assign(ctx, f"{name}[*]", "", argv)
    if depth == 0 and size < _ARRAY_VALUES:
        _assign(ctx, f"{name}[{int(size)}]", value, argv)
    _assign(ctx, f"{name}.size()", repr(size + times), argv)


def _each_element(expr: Node, ctx: HostContext) -> str | None:
    """``expr``'s text with each element of a vector whose elements are all one value
    (``shape[i]``) replaced by that value; None when it calls a function or reads another
    element."""
    raw, base = expr.text or b"", expr.start_byte
    parts, at = [], 0
    for n in _outermost(expr, ("call_expression", "subscript_expression")):
        array = n.child_by_field_name("argument")
        every = ctx.texts.get(f"{text(array)}[*]") if n.type == "subscript_expression" else None
        if array is None or not every:
            return None
        parts += [raw[at : n.start_byte - base].decode("utf-8", "replace"), f"({every})"]
        at = n.end_byte - base
    return "".join(parts) + raw[at:].decode("utf-8", "replace")


def _forget_elements(ctx: HostContext, name: str, argv: list[str]) -> None:
    for key in [k for k in ctx.texts if k.startswith(name + "[")]:
        _assign(ctx, key, "", argv)


def _outer_loop(node: Node, fn: Node) -> Node | None:
    """The outermost ``for`` loop of host function ``fn`` around ``node``."""
    outer: Node | None = None
    p = node.parent
    while p is not None and p != fn:
        outer = p if p.type == "for_statement" else outer
        p = p.parent
    return outer


def _invariant(expr: Node, loop: Node | None) -> bool:
    """Whether ``expr`` has one value on every trip of ``loop`` (None: no loop): it calls
    nothing and reads no element, and the loop changes none of its names."""
    if _outermost(expr, ("call_expression", "subscript_expression")):
        return False
    return loop is None or not (_changed_names(loop) & set(_IDENT.findall(text(expr))))


def _accumulated(node: Node, fn: Node, ctx: HostContext, target: str, update: Node) -> str:
    """The value after the loops around host statement ``node`` of a variable it steps
    (``total += len``, ``n *= dim``, ``n = n * dim``) by an amount the same on every trip:
    stepped as many times as the counted loops run (``_counted_times``); "" (known only at
    run time) when they are not counted, the statement is in a branch, or the amount
    changes in the loops (``total += sizes[i]``, ``x += x``)."""
    op, by = "", None
    if update.type == "assignment_expression":
        operator = update.child_by_field_name("operator")
        op = operator.type[:-1] if operator is not None else ""
        by = update.child_by_field_name("right")
    elif update.type == "binary_expression":  # the right side of ``n = n * dim``
        operator = update.child_by_field_name("operator")
        left, right = update.child_by_field_name("left"), update.child_by_field_name("right")
        if operator is not None and left is not None and text(left) == target:
            op, by = operator.type, right
        elif operator is not None and operator.type in ("+", "*") and right is not None:
            op, by = (operator.type, left) if text(right) == target else ("", None)
    if op not in ("+", "-", "*", "/", "<<", ">>") or by is None:
        return ""
    outer = _outer_loop(node, fn)
    amount = _each_element(by, ctx)
    if outer is None or amount is None:
        return ""
    if _changed_names(outer) & set(_IDENT.findall(amount)):
        return ""
    times = _counted_times(node, fn, ctx)
    now, step = ctx.value(target), ctx.eval_text(amount)
    if times is None or now is None or step is None:
        return ""
    v = _stepped(now, op, step, times)
    return "" if v is None else repr(v)


def _changed_names(loop: Node) -> set[str]:
    """The names a loop's header and body assign or step (its variables)."""
    out: set[str] = set()
    stack = [loop]
    while stack:
        n = stack.pop()
        if n.type in ("assignment_expression", "update_expression"):
            side = n.child_by_field_name("left") or n.child_by_field_name("argument")
            name = _target(side) if side is not None else None
            if name is not None:
                out.add(name)
        elif n.type == "init_declarator":
            out.add(declared_name(n))
        stack.extend(n.named_children)
    return out


# host functions being run for what they set (``setup_main()``, ``getParams(..., n, m)``)
_EFFECT_DEPTH = [0]


@dataclass
class _Program:
    """The file whose host code is being scanned, the view its siblings are read through,
    the files whose folders were searched for a callee (to validate the scan cache), and
    the callees found there by name."""

    path: str
    view: SourceView | None
    looked: list[str] = field(default_factory=list)
    found: dict[str, tuple[Node, Mapping[str, str]] | None] = field(default_factory=dict)

    def sibling_function(self, name: str) -> tuple[Node, Mapping[str, str]] | None:
        """A host function defined in another file of the folder, with that file's
        constants (``int getLevels(...)`` in ``reference.cu``)."""
        if name not in self.found:
            self.looked.append(self.path)
            unit = defined_in_siblings(self.path, name, self.view)
            fn = unit.detection.functions.get(name) if unit is not None else None
            self.found[name] = (
                (fn.node, unit.detection.constants)
                if unit is not None
                and fn is not None
                and fn.node is not None
                and fn.node.type == "function_definition"
                else None
            )
        return self.found[name]


# the programs whose host code is being scanned, innermost last
_SCANNING: list[_Program] = []


def _call_effects(
    call: Node,
    fn: Node,
    ctx: HostContext,
    argv: list[str],
    result: str | None = None,
    held: Mapping[str, str] | None = None,
) -> None:
    """What a call to a host function of the file sets for its caller: the variables
    passed to its reference parameters (``void getParams(int &n)``) and the globals it
    assigns (``cuda_num_SMs = deviceProp.multiProcessorCount`` in ``setup_main()``), from
    running its statements with the call's arguments; unknown where they are not known.
    ``result``: the caller's variable the call initialises (``Params p = make(argc, argv)``),
    which gets the fields of the local struct the function returns. ``held``: the values the
    caller's variables had before the call (those it passes by address are unknown after
    it until these effects say otherwise)."""
    name_node = call.child_by_field_name("function")
    if name_node is None or name_node.type != "identifier" or _EFFECT_DEPTH[0] >= 3:
        return
    # the file's functions (headers included), else one in an ``extern "C"`` block
    known = ctx.definitions.get(text(name_node))
    callee = known.node if known is not None else _definition(_root(fn), text(name_node))
    constants: Mapping[str, str] = {}
    if callee is not None and callee.type != "function_definition":
        callee = None  # a prototype: defined elsewhere
    if callee is None and _SCANNING:
        other = _SCANNING[-1].sibling_function(text(name_node))
        if other is not None:
            callee, constants = other
    if callee is None or callee == fn:
        return
    returned = _returned_name(callee) if result is not None else None
    if returned is None and not _sets_outside(callee):
        for key, value in (held or {}).items():
            _assign(ctx, key, value, argv)  # it changes nothing its caller sees
        return
    args_node = call.child_by_field_name("arguments")
    args = with_defaults(callee, [text(a) for a in (args_node.named_children if args_node else [])])
    params = function_params(callee)
    refs = _reference_params(callee)
    sub = HostContext(
        fixed=ctx.fixed, functions=ctx.functions, device=ctx.device, definitions=ctx.definitions
    )
    sub.texts.update(constants)  # a callee in another file: that file's constants
    sub.texts.update(ctx.texts)
    caller = dict(ctx.texts) | dict(held or {})
    values = [ctx.eval_value(ctx.host_text(a, argv)) for a in args]
    # a struct passed by address (``init(&cfg)``) or as a pointer variable (``init(p)``):
    # what the caller knows of its fields, through the parameter (``cfg.n`` as ``c->n``);
    # a variable passed by address (``getLevels(n, &levels)``): ``pointers``
    through: dict[str, str] = {}
    pointers: dict[str, str] = {}
    for (_ptype, pname), a, v in zip(params, args, values, strict=False):
        if pname:
            sub.texts[pname] = repr(v) if v is not None else ""
            address = _ADDRESS_OF.fullmatch(a)
            if address is not None:
                pointers[pname] = address.group(1)
                through[pname] = address.group(1) + "."
            elif _IDENT_ONLY.match(a.strip()) and "*" in ctx.types.get(a.strip(), ""):
                through[pname] = a.strip() + "->"
    for pname, owner in through.items():
        for key in [k for k in caller if k.startswith(owner)]:
            now = ctx.value(key)
            had = held.get(key, "") if held else ""
            sub.texts[f"{pname}->{key[len(owner) :]}"] = had or (
                repr(now) if now is not None else ""
            )
    before = dict(sub.texts)
    # what the variables passed by address held before the call
    prior = {
        pname: float(held[owner]) if held and owner in held else ctx.value(owner)
        for pname, owner in pointers.items()
    }
    _EFFECT_DEPTH[0] += 1
    try:
        _scan_function(callee, callee.end_byte, sub, argv)
        _options(compiled_text(callee), sub, argv)  # (``read_CLI(argc, argv, input)``)
    finally:
        _EFFECT_DEPTH[0] -= 1
    out: dict[str, str] = {}
    for (_ptype, pname), a in zip(params, args, strict=False):
        if not pname:
            continue
        owner, prefix = "", ""
        if pname in refs and _IDENT_ONLY.match(a.strip()):
            out[a.strip()] = pname
            owner, prefix = a.strip() + ".", pname + "."  # its fields: ``p.n = n``
        elif pname in through:
            # ``p->n = n`` of ``setup(&cfg)``, ``in->n = 128`` of ``init(p)``
            owner, prefix = through[pname], pname + "->"
            pointee = f"{pname}[0]"  # ``*n = 4`` of ``get(&n)``
            if pname in pointers and sub.texts.get(pointee) != before.get(pointee):
                out[pointers[pname]] = pointee
        for key, value in sub.texts.items() if owner else ():
            if key.startswith(prefix) and value != before.get(key):
                out[f"{owner}{key[len(prefix) :]}"] = key  # the caller's ``cfg.n``, ``p->n``
    for name in _globals_set(sub, before):
        out.setdefault(name, name)
    if returned is not None:  # p.iters of ``return p;``, p->iters of a returned pointer
        for key in [k for k in sub.texts if k.startswith((returned + ".", returned + "->"))]:
            out[f"{result}{key[len(returned) :]}"] = key
    for target, source in out.items():
        v = sub.value(source)
        _assign(ctx, target, repr(v) if v is not None else "", argv)
    for key, value in (held or {}).items():
        if key not in out and _left_alone(key, callee, pointers, through, refs, args, params):
            _assign(ctx, key, value, argv)  # passed to it, left alone by it
    unknown = {pname: owner for pname, owner in pointers.items() if ctx.value(owner) is None}
    runnable = effect_function(callee) if unknown else None
    if runnable is not None:
        # set in a loop or a branch (``if (len == 1 << i) { *levels = i; return 0; }``):
        # run the function on the call's numbers
        pointees = {f"{p}[0]": v for p, v in prior.items() if v is not None}
        local = run_for_effects(runnable, values, _Env(sub), ctx.functions, pointees)
        for pname, owner in unknown.items():
            v = local.get(f"{pname}[0]") if local is not None else None
            if v is not None:
                _assign(ctx, owner, repr(v), argv)


def _left_alone(
    key: str,
    callee: Node,
    pointers: Mapping[str, str],
    through: Mapping[str, str],
    refs: set[str],
    args: list[str],
    params: list[tuple[str, str]],
) -> bool:
    """Whether the caller's ``key`` (``cfg.n``, ``levels``, ``p->n``) was handed to
    ``callee`` (by address, as a pointer or by reference) and the callee stores to it
    nowhere, in no branch or loop (what a call it makes may change is unknown in its own
    scan already)."""
    stored = _body(callee).stored
    for pname, owner in pointers.items():
        if key == owner:
            return f"{pname}[0]" not in stored
    for pname, owner in through.items():  # ``cfg.`` or ``p->``
        if key.startswith(owner):
            field_ = f"{pname}->{key[len(owner) :]}"
            return field_ not in stored and f"{pname}->*" not in stored
    for (_t, pname), a in zip(params, args, strict=False):
        a = a.strip()
        if pname in refs and (key == a or key.startswith(a + ".")):
            return pname + key[len(a) :] not in stored and pname not in stored
    return False


@dataclass(frozen=True)
class _Body:
    """What a host function's body stores to and declares, in any branch or loop."""

    # names assigned or stepped (``n``, ``p->n``, ``levels[0]`` for ``*levels = i``); a
    # pointer handed on to a call (``loadPPM(file, w, h)``) as ``w``, ``w[0]`` and ``w->*``:
    # anything through it may change
    stored: frozenset[str]
    declared: frozenset[str]


_BODIES: OrderedDict[int, tuple[Node, _Body]] = OrderedDict()


def _body(fn: Node) -> _Body:
    """:class:`_Body` of host function ``fn`` (cached per function node)."""
    hit = _BODIES.get(fn.id)
    if hit is not None and hit[0] == fn:
        return hit[1]
    stored: set[str] = set()
    declared: set[str] = set()
    stack = [fn.child_by_field_name("body")]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        target = None
        if n.type == "declaration":
            declared.update(declared_name(d) for d in n.children_by_field_name("declarator"))
        elif n.type == "assignment_expression":
            left = n.child_by_field_name("left")
            target = _target(left) if left is not None else None
        elif n.type == "update_expression":
            arg = n.child_by_field_name("argument")
            target = _target(arg) if arg is not None else None
        elif n.type == "call_expression" and (arguments := n.child_by_field_name("arguments")):
            for a in arguments.named_children:
                name = text(a).lstrip("&*( ").rstrip(") ")
                if _IDENT_ONLY.match(name):
                    stored.update((f"{name}[0]", f"{name}->*", name))
        if target:
            stored.add(target)
        stack.extend(n.named_children)
    found = _Body(frozenset(stored), frozenset(declared))
    _BODIES[fn.id] = (fn, found)
    if len(_BODIES) > 512:
        _BODIES.popitem(last=False)
    return found


def _scanned(call: Node, ctx: HostContext, argv: list[str]) -> None:
    """``sscanf(argv[2], "%d", &q)``: q is the program argument (one conversion of one
    argument; anything else a scan sets is known only at run time)."""
    name = call.child_by_field_name("function")
    args_node = call.child_by_field_name("arguments")
    if name is None or text(name) != "sscanf" or args_node is None:
        return
    args = [text(a) for a in args_node.named_children]
    targets = [m.group(1) for a in args[2:] if (m := _ADDRESS_OF.fullmatch(a)) is not None]
    one = len(args) == 3 and len(targets) == 1 and _ARGV_BARE.fullmatch(args[0].strip())
    for t in targets:
        _assign(ctx, t, args[0] if one else "", argv)


def _copied_to_device(call: Node, ctx: HostContext, argv: list[str]) -> None:
    """``cudaMemcpy(d_p, &p, sizeof(p), cudaMemcpyHostToDevice)`` (also inside an error
    check, ``CHECK(cudaMemcpy(...))``): the device buffer holds what the host knows of
    ``p`` at the copy, as ``d_p->n`` for its fields and ``d_p[0]`` for a number; and
    ``cudaMemcpyToSymbol(c_n, &n, sizeof(int))`` (``hipMemcpyToSymbol(HIP_SYMBOL(c_n),
    ...)``): the ``__constant__``/``__device__`` variable holds ``n``'s value (or fields)."""
    while call.type == "call_expression":
        name = call.child_by_field_name("function")
        args_node = call.child_by_field_name("arguments")
        args = args_node.named_children if args_node is not None else []
        if name is None or not args:
            return
        if _TO_SYMBOL.fullmatch(text(name)) is not None:
            _copied_to_symbol([text(a) for a in args], ctx, argv)
            return
        if _HOST_TO_DEVICE.fullmatch(text(name)) is None:
            call = args[0]  # the copy an error check wraps
            continue
        dst = text(args[0]).strip()
        if not NAME.fullmatch(dst):
            return
        for key in [k for k in ctx.texts if k == f"{dst}[0]" or k.startswith(dst + "->")]:
            _assign(ctx, key, "", argv)  # what the buffer held before
        if len(args) > 1:  # ``&p``: as ``d_p = &p`` would point
            _point_at(ctx, ctx, dst, text(args[1]))
            ctx._cache.clear()
        return


def _copied_to_symbol(args: list[str], ctx: HostContext, argv: list[str]) -> None:
    """``cudaMemcpyToSymbol(symbol, &src, count[, offset, kind])``: a whole variable copied
    from the start of the symbol gives the symbol its value; any other copy leaves it
    unknown."""
    m = _SYMBOL_NAME.fullmatch(args[0].strip())
    if m is None:
        return
    symbol = m.group(1)
    src = _ADDRESS_OF.fullmatch(args[1].strip()) if len(args) > 1 else None
    whole = len(args) < 4 or args[3].strip() == "0"
    if src is None or not whole:
        _assign(ctx, symbol, "", argv)
        return
    _assign(ctx, symbol, src.group(1), argv)
    _copy_fields(ctx, symbol, src.group(1), argv)


def _returned_name(fn: Node) -> str | None:
    """The local a host function returns (``return p;``, its last statement), if any."""
    body = fn.child_by_field_name("body")
    last = body.named_children[-1] if body is not None and body.named_children else None
    if last is None or last.type != "return_statement" or not last.named_children:
        return None
    value = last.named_children[0]
    return text(value) if value.type == "identifier" else None


def _globals_set(scope: HostContext, before: Mapping[str, str]) -> list[str]:
    """The names a host scope set that are not its own (neither declared in it nor its
    parameters) and that differ from what they were (``before``): the globals it
    assigned, and the fields of global structs (``params.n = atoi(argv[1])``)."""
    return [
        name
        for name, value in scope.texts.items()
        if _IDENT.fullmatch(name)
        and name.split(".", 1)[0] not in scope.types
        and value != before.get(name)
    ]


def _sets_outside(fn: Node) -> bool:
    """Whether host function ``fn`` may set anything its caller sees: it has a reference
    parameter, assigns a name it does not declare (a global), or stores through a pointer
    parameter (``p->n = n``, ``*n = 4``) or hands one on to a call (``read_file(c)``)."""
    if _reference_params(fn):
        return True
    params = {name for _t, name in function_params(fn)}
    body = _body(fn)
    for target in body.stored:
        root = re.split(r"\.|->|\[", target, maxsplit=1)[0]
        through = "->" in target or target.endswith("[0]")
        if (through and root in params) or (root not in params and root not in body.declared):
            return True
    return False


def _definition(root: Node, name: str) -> Node | None:
    """The definition of host function ``name`` at the top level of the file (or in a
    namespace, or a function template's)."""
    return _definitions(root).get(name)


# a tree's root (by id, checked) -> its top-level function definitions by name
_DEFINITIONS: OrderedDict[int, tuple[Node, dict[str, Node]]] = OrderedDict()


def _definitions(root: Node) -> dict[str, Node]:
    """The top-level definitions of a tree by name, the first of each (cached per tree: a
    search per call made a ``main`` of N calls cost N^2)."""
    hit = _DEFINITIONS.get(root.id)
    if hit is not None and hit[0] == root:
        return hit[1]
    out: dict[str, Node] = {}
    stack = list(reversed(root.named_children))
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            out.setdefault(function_name(n), n)
        elif n.type in _DEFINITION_SCOPES:
            stack.extend(reversed(n.named_children))
    _DEFINITIONS[root.id] = (root, out)
    if len(_DEFINITIONS) > 32:
        _DEFINITIONS.popitem(last=False)
    return out


_DEFINITION_SCOPES = frozenset(
    {"namespace_definition", "declaration_list", "linkage_specification", "template_declaration"}
)


def _reference_params(fn: Node) -> set[str]:
    """The parameters of ``fn`` passed by non-const reference (``int &n``)."""
    out: set[str] = set()
    for p in parameter_declarations(fn):
        decl = p.child_by_field_name("declarator")
        if decl is not None and decl.type == "reference_declarator" and "const" not in text(p):
            out.add(declared_name(decl))
    return out


def _loop_exit(node: Node, depth: int, ctx: HostContext, argv: list[str]) -> None:
    """The host variables a ``for`` header's update clause stepped (``for (; log2N > 11;
    log2N -= 2, N >>= 2)``), after the loop: their values once it has run its trips, when
    the loop is counted and its values known, else unknown. (A launch in the body sees the
    first trip's values.)"""
    update = node.child_by_field_name("update")
    init = node.child_by_field_name("initializer")
    local = (
        {declared_name(d) for d in init.children_by_field_name("declarator")}
        if init is not None and init.type == "declaration"
        else set()
    )
    steps: dict[str, tuple[str, float | None]] = {}
    for u in comma_parts(update) if update is not None else []:
        st = step_of(u)
        if st is None:
            target = _target(u.child_by_field_name("left") or u)
            if target is not None and target not in local:
                steps[target] = ("=", None)
            continue
        var, step, op = st
        if var not in local:
            steps[var] = (op, 1.0 if step is None else ctx.eval_text(text(step)))
    if not steps:
        return
    n = None if depth > 0 else _host_trips(node, ctx)
    after: dict[str, str] = {}
    for var, (op, by) in steps.items():
        if var in ctx.texts:
            # from the values on entry (the trips were counted from them)
            now = ctx.value(var)
            v = None if n is None or by is None or now is None else _stepped(now, op, by, n)
            after[var] = "" if v is None else repr(v)
    for var, value in after.items():
        _assign(ctx, var, value, argv)


def _counted_times(node: Node, fn: Node, ctx: HostContext) -> float | None:
    """How many times statement ``node`` of host function ``fn`` runs inside counted loops:
    the product of their trips when only those loops and blocks enclose it, none breaks out
    early and no inner loop's header uses an outer loop's variable; else None."""
    loops: list[Node] = []
    child, p = node, node.parent
    while p is not None and p != fn:
        if p.type == "for_statement":
            loops.append(p)
        elif p.type != "compound_statement" and not _kept_branch(p, child, fn):
            return None  # a branch, a while loop, a switch, an ``#if`` branch maybe dropped
        child, p = p, p.parent
    if not loops or _leaves_early(loops[-1]):
        return None
    times, outer = 1.0, set[str]()
    for lp in reversed(loops):  # outermost first
        hdr = loop_header(lp)
        if hdr is None or hdr.var is None:
            return None
        parts = (hdr.start, hdr.bound, hdr.step)
        if outer & {n for part in parts if part is not None for n in _IDENT.findall(text(part))}:
            return None  # a triangular nest: its trips differ from one outer trip to the next
        t = _host_trips(lp, ctx)
        if t is None:
            return None
        times *= t
        outer.add(hdr.var)
    return times


def _kept_branch(conditional: Node, part: Node, fn: Node) -> bool:
    """Whether ``part`` is on a branch of ``conditional``, an ``#if``, that the preprocessor
    keeps in the default build (a name the file never defines is not defined: no ``-D``)."""
    if not conditional.type.startswith("preproc_"):
        return False
    return branch_taken(part, default_build(fn), {}) is True


def _leaves_early(node: Node) -> bool:
    """Whether ``node`` holds a ``break``, ``return`` or ``goto`` (a loop that may stop before
    its count)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("break_statement", "return_statement", "goto_statement"):
            return True
        stack.extend(n.named_children)
    return False


def _never_runs(node: Node, fn: Node, ctx: HostContext) -> bool:
    """Whether statement ``node`` of host function ``fn`` is in a ``for`` loop the host
    values say runs no trip (``for (i = 1; i < argc; i++)`` run without arguments), as
    they were when the scan entered the loop."""
    loops: list[Node] = []
    p = node.parent
    while p is not None and p != fn:
        if p.type == "for_statement":
            loops.append(p)
        p = p.parent
    outer: set[str] = set()
    for lp in reversed(loops):  # outermost first
        hit = ctx._loop_runs.get(lp.id)
        if hit is None or hit[0] != lp:
            hit = ctx._loop_runs[lp.id] = (lp, *_loop_facts(lp, ctx))
        _lp, var, names, runs = hit
        if var is None or outer & names:
            return False  # (not a counted loop; ``z < x`` of an outer ``x``: trips vary)
        if not runs:
            return True
        outer.add(var)
    return False


def _loop_facts(lp: Node, ctx: HostContext) -> tuple[str | None, frozenset[str], bool]:
    """A host loop's variable, the names its header reads, and whether it runs a trip."""
    hdr = loop_header(lp)
    if hdr is None or hdr.var is None:
        return None, frozenset(), True
    parts = (hdr.start, hdr.bound, hdr.step)
    names = frozenset(n for part in parts if part is not None for n in _IDENT.findall(text(part)))
    return hdr.var, names, _host_trips(lp, ctx) != 0


def _host_trips(node: Node, ctx: HostContext) -> float | None:
    """The trips of a host ``for`` loop from the host's values, None when not known."""
    hdr = loop_header(node)
    if hdr is None or hdr.var is None:
        return None
    start = ctx.eval_text(text(hdr.start)) if hdr.start is not None else ctx.get(hdr.var)
    bound = ctx.eval_text(text(hdr.bound)) if hdr.bound is not None else 0.0
    step = ctx.eval_text(text(hdr.step)) if hdr.step is not None else 1.0
    if start is None or bound is None or step is None:
        return None
    return trips(start, bound, hdr.bound_op, step, hdr.step_op)


def _stepped(x: int | float, op: str, by: float, n: float) -> int | float | None:
    """``x`` stepped ``n`` times by ``op by``; None when that is not a number."""
    try:
        if op in ("+", "-"):
            v: float = x + by * n if op == "+" else x - by * n
        elif op == "*":
            v = x * by**n
        elif op == "/" and by:
            v = x / by**n
        elif op in ("<<", ">>") and by == int(by) and n == int(n):
            v = x * 2.0 ** (by * n) if op == "<<" else x / 2.0 ** (by * n)
        else:
            return None
    except OverflowError:
        return None
    if not math.isfinite(v):
        return None
    if isinstance(x, int):
        return math.floor(v)  # an integer variable stays one (C division truncates)
    return v


def _assign_dim3(ctx: HostContext, name: str, value: str, argv: list[str]) -> None:
    """``dim3 name(value)``, ``dim3 name = value`` or ``name = value``: the components
    ``name.x``/``.y``/``.z`` get their texts (1 when absent, as ``dim3`` defaults), and
    ``name`` the ``dim3`` of them, so that ``name.x = 256`` later updates it."""
    value = value.strip()
    if value.startswith("dim3"):
        value = value[4:].strip()
    inner = inner_text(value)
    if not value:
        parts = []
    elif inner != value:
        parts = split_args(inner)
    elif "dim3" in ctx.types.get(value, "") and NAME.fullmatch(value):
        parts = [f"{value}.{c}" for c in "xyz"]
    else:
        parts = [value]
    if len(parts) > 3:
        return
    parts += ["1"] * (3 - len(parts))
    for c, part in zip("xyz", parts, strict=True):
        _assign(ctx, f"{name}.{c}", part, argv)
    _assign(ctx, name, f"dim3({name}.x, {name}.y, {name}.z)", argv)


# a CUDA vector type's constructor: ``make_int2(w, h)``, ``make_float3(0, 0, 2.0f)``
_MAKE_VECTOR = re.compile(r"\s*make_[a-z]+([1-4])\s*(\(.*\))\s*\Z", re.S)


def _assign_vector(ctx: HostContext, name: str, value: str, argv: list[str]) -> bool:
    """``int2 name = make_int2(a, b)`` or ``name = make_int2(a, b)``: the components
    ``name.x``/``.y`` (``.z``, ``.w``) get the arguments' texts; False (nothing assigned)
    when ``value`` is not such a constructor."""
    m = _MAKE_VECTOR.match(value)
    if m is None or inner_text(m.group(2)) == m.group(2):
        return False
    parts = split_args(inner_text(m.group(2)))
    if len(parts) != int(m.group(1)):
        return False
    for c, part in zip("xyzw", parts, strict=False):
        _assign(ctx, f"{name}.{c}", part, argv)
    return True


def _read_at_run_time(node: Node) -> list[str]:
    """Variables a statement sets at run time: passed by address to a call
    (``fscanf(f, "%d", &n)``, ``loadPPM(file, &width)``) or read from a stream
    (``file >> n``, ``std::cin >> n >> m``)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "pointer_expression":
            op = n.child_by_field_name("operator")
            arg = n.child_by_field_name("argument")
            if op is not None and op.type == "&" and arg is not None and arg.type == "identifier":
                p = n.parent
                call = p.parent if p is not None else None
                callee = call.child_by_field_name("function") if call is not None else None
                # a cast (``reinterpret_cast<void *>(&n)`` in a launch's argument array)
                # reads nothing
                cast = callee is not None and text(callee).split("<")[0].endswith("_cast")
                # the source of a copy (``cudaMemcpy(d_p, &p, ...)``) is read, not set
                copied = callee is not None and _COPY_CALL.fullmatch(text(callee)) is not None
                source = copied and p is not None and p.named_children.index(n) > 0
                if p is not None and p.type == "argument_list" and not cast and not source:
                    out.append(text(arg))
        elif n.type == "binary_expression" and n.parent is not None:
            op = n.child_by_field_name("operator")
            right = n.child_by_field_name("right")
            top = n  # a chain ``in >> a >> b`` is ``(in >> a) >> b``: each name is read
            while top.parent is not None and top.parent.type == "binary_expression":
                up = top.parent.child_by_field_name("operator")
                if up is None or up.type != ">>" or top.parent.child_by_field_name("left") != top:
                    break
                top = top.parent
            if (
                op is not None
                and op.type == ">>"
                and top.parent is not None
                and top.parent.type == "expression_statement"
                and right is not None
                and right.type == "identifier"
            ):
                out.append(text(right))
        stack.extend(n.named_children)
    return out


def _target(left: Node) -> str | None:
    """The name an assignment sets: ``n``, a ``dim3``'s component ``grid.x``, a field of
    a local struct ``dim.boxes`` or one through a pointer ``p->n`` (as that name: a later
    store through another pointer to the same struct is not seen)."""
    if left.type == "identifier":
        return text(left)
    if left.type == "pointer_expression":  # *cnt = m: what cnt points at, cnt[0]
        return pointee_name(left)
    if left.type == "subscript_expression":  # an element of a local array: sizes[1]
        element = _element(left)
        if element is None:
            return None
        array, i = element
        return f"{array}[{i if i.isdigit() else '?'}]"
    if left.type == "field_expression":
        arg = left.child_by_field_name("argument")
        fld = left.child_by_field_name("field")
        op = left.child_by_field_name("operator")
        if arg is None or fld is None or text(op) not in (".", "->"):
            return None
        if arg.type == "identifier":
            return f"{text(arg)}{text(op)}{text(fld)}"
        if arg.type == "subscript_expression":  # a field of an element: plan[i].n
            of = _target(arg)
            return f"{of}{text(op)}{text(fld)}" if of else None
    return None


def _element(subscript: Node) -> tuple[str, str] | None:
    """A local array's element: the array's name and the index's text (``sizes[i]``)."""
    arr = subscript.child_by_field_name("argument")
    idx = subscript.child_by_field_name("index") or next(
        (c for c in subscript.named_children if c != arr), None
    )
    if arr is None or arr.type != "identifier" or idx is None:
        return None
    return text(arr), text(idx).strip("[] ")


def _each_element_field(left: Node, right: Node, node: Node, fn: Node) -> str | None:
    """``plan[*].n`` for ``plan[i].n = v`` in a loop over ``i`` of ``fn`` with ``v`` not
    depending on ``i``: every element's field the loop sets (else None)."""
    arg = left.child_by_field_name("argument") if left.type == "field_expression" else None
    element = _element(arg) if arg is not None and arg.type == "subscript_expression" else None
    if element is None or not NAME.fullmatch(element[1]):
        return None
    array, counter = element
    loop = node.parent
    while loop is not None and loop != fn and loop.type != "for_statement":
        loop = loop.parent
    hdr = loop_header(loop) if loop is not None and loop.type == "for_statement" else None
    if hdr is None or hdr.var != counter or counter in _IDENT.findall(text(right)):
        return None
    op = left.child_by_field_name("operator")
    fld = left.child_by_field_name("field")
    return f"{array}[*]{text(op)}{text(fld)}"


def _no_options(expr: str) -> str:
    """``expr`` with each call given the whole command line (``checkCmdLineFlag(argc,
    (const char **)argv, "wA")``) replaced by 0: what it finds in an empty one."""
    out, i = [], 0
    for m in _CALL_OPEN.finditer(expr):
        if m.start() < i:
            continue
        depth, close = 1, m.end()
        while close < len(expr) and depth:
            depth += {"(": 1, ")": -1}.get(expr[close], 0)
            close += 1
        if depth:
            break
        close -= 1  # at the call's ``)``
        args = split_args(expr[m.end() : close])
        if any(_CAST.sub("", a.strip()).rstrip(")").strip() == "argv" for a in args):
            out.append(expr[i : m.start()] + "0")
            i = close + 1
    return "".join(out) + expr[i:]


def _branch_taken(node: Node, fn: Node, ctx: HostContext, argv: list[str]) -> bool | None:
    """Whether ``node`` runs, as far as the host values decide the ``if``s around it: False
    in a branch they decide against (``if (argc > 2) reps = atoi(argv[2]);`` run without a
    second argument), None under a condition they cannot decide, else True."""
    child, p = node, node.parent
    taken: bool | None = True
    while p is not None and p != fn:
        if p.type == "if_statement" and child != p.child_by_field_name("condition"):
            cond = p.child_by_field_name("condition")
            cond_text = inner_text(text(cond)) if cond is not None else ""
            v = ctx.eval_text(ctx.host_text(cond_text, argv)) if cond_text else None
            if v is None and not argv:
                # run without arguments, a helper searching them (``checkCmdLineFlag(argc,
                # argv, "wA")``, or a flag set from one) finds none
                flags = _searched_flags(cond_text, ctx)
                if "argv" in flags:
                    v = ctx.eval_text(ctx.host_text(_no_options(flags), argv))
            alt = p.child_by_field_name("alternative")
            in_else = alt is not None and alt.start_byte <= child.start_byte < alt.end_byte
            names = _OPTION_NAME.findall(cond_text) if v is None and "argv" in cond_text else []
            if names:
                # a test of a command-line word for an option (``strcmp(argv[i], "--grid")
                # == 0``): its branch runs when the option is given; in the loop over the
                # words the other branch runs for the other words (the next test of an
                # ``else if`` chain decides), else it runs when the option is not given
                named = bool({n.lstrip("-") for n in names} & _given_options(argv))
                if named == in_else and (not in_else or not _in_word_loop(p, fn)):
                    return False
            elif v is None:
                taken = None
            elif bool(v) == in_else:
                return False
        elif p.type == "case_statement":
            runs = _case_runs(p, ctx, argv)
            if runs is False:
                return False
            if runs is None:
                taken = None
        child, p = p, p.parent
    return taken


def _in_word_loop(node: Node, fn: Node) -> bool:
    """Whether ``node`` is in a loop of ``fn`` over the command line's words (its test
    reads ``argc``)."""
    p = node.parent
    while p is not None and p != fn:
        if p.type in ("for_statement", "while_statement", "do_statement"):
            cond = p.child_by_field_name("condition")
            if cond is not None and re.search(r"\bargc\b", text(cond)):
                return True
        p = p.parent
    return False


def _searched_flags(cond: str, ctx: HostContext) -> str:
    """``cond`` with each variable set from a search of the command line (``bool shmoo =
    checkCmdLineFlag(argc, argv, "shmoo")``) replaced by that search."""

    def flag(m: re.Match[str]) -> str:
        t = ctx.texts.get(m.group(0)) or ""
        return f"({t})" if "argv" in t else m.group(0)

    return NAME.sub(flag, cond)


def _in_case(node: Node, fn: Node) -> bool:
    """Whether ``node`` is in a ``case`` of a ``switch`` of ``fn``."""
    p = node.parent
    while p is not None and p != fn:
        if p.type == "case_statement":
            return True
        p = p.parent
    return False


def _case_runs(case: Node, ctx: HostContext, argv: list[str]) -> bool | None:
    """Whether a ``case`` of a ``switch`` runs: the case its known value selects (else
    ``default``) and those it falls through to; None when the value is not known."""
    body = case.parent
    switch = body.parent if body is not None else None
    if body is None or switch is None or switch.type != "switch_statement":
        return None
    cond = switch.child_by_field_name("condition")
    v = ctx.eval_text(ctx.host_text(inner_text(text(cond)), argv)) if cond else None
    if v is None:
        return None
    cases = [c for c in body.named_children if c.type == "case_statement"]
    values = [c.child_by_field_name("value") for c in cases]
    entered = next(
        (i for i, x in enumerate(values) if x is not None and ctx.eval_text(text(x)) == v), None
    )
    if entered is None:
        entered = next((i for i, x in enumerate(values) if x is None), None)  # default
    mine = next(i for i, c in enumerate(cases) if c == case)
    if entered is None or mine < entered:
        return False
    # fall-through: every case from the entered one up to this one ends without a break
    return not any(_ends_case(c) for c in cases[entered:mine])


def _ends_case(case: Node) -> bool:
    """Whether a ``case`` breaks or returns (``case 1: n = 4; break;``, also in braces)."""
    ends = ("break_statement", "return_statement")
    return any(
        c.type in ends
        or (c.type == "compound_statement" and any(x.type in ends for x in c.named_children))
        for c in case.named_children
    )


_CONVERT = (
    r"(?:\(\s*\w+(?:\s+\w+)*\s*\)\s*\(?\s*)?"  # a cast: (int), (unsigned int)(
    r"(?:std\s*::\s*)?(?:atoi|atol|atoll|atof|stoi|stol|stoll|stoul|"
    r"stof|stod|strtol|strtoul|strtoll|strtoull|strtod|strtof)\s*\(\s*"
)
_GETOPT = re.compile(
    r"case\s*'(\w)'\s*:\s*\{?\s*(?:if\s*\(\s*optarg[^;{}]*?\)\s*\{?\s*)?"
    r"([A-Za-z_]\w*)\s*=\s*" + _CONVERT + r"optarg"
)
_OPTION_NAME = re.compile(r'"(-{1,2}[A-Za-z][\w-]*)"')  # "-n", "--iters" in a comparison
# a conversion of the option's word to a number (``atoi(argv[++i])``, ``strtol(optarg, ...)``)
_CONVERTED = re.compile(_CONVERT + r"(?:optarg\b|argv\s*\[)")
_STRCMP_OPT = re.compile(
    _OPTION_NAME.pattern
    + r'[^";]{0,400}?[;{)]\s*([A-Za-z_](?:[\w.]|->)*)\s*=\s*'
    + _CONVERT
    + r"argv\s*\["
)


def option_values(argv: list[str]) -> dict[str, str]:
    """``-n 20000 --iters 5 --size=8`` -> {"n": "20000", "iters": "5", "size": "8"}."""
    out: dict[str, str] = {}
    for i, tok in enumerate(argv):
        if not tok.startswith("-") or _numeric(tok):
            continue
        key, eq, val = tok.lstrip("-").partition("=")
        if eq:
            out[key] = val
        elif i + 1 < len(argv) and _numeric(argv[i + 1]):
            out[key] = argv[i + 1]
    return out


# the value of a command-line option being parsed: getopt's ``optarg``, the word after the
# option (``argv[++i]``, ``argv[i + 1]``, ``argv[i]`` after ``if (++i < argc)``)
_OPTION_VALUE = re.compile(
    r"\boptarg\b|\bargv\s*\[\s*(?:\+\+\s*\w+|\w+\s*\+\s*1|\w+\s*\+\+|[A-Za-z_]\w*)\s*\]"
)


def _option_given(node: Node, fn: Node, argv: list[str]) -> bool:
    """Whether the command line gives the option whose parsing ``node`` is in (the
    ``case 's':`` of a getopt loop, the ``if (!strcmp(argv[i], "-n"))`` around it); True
    when no option name is found around it."""
    names = _option_names(node, fn)
    return not names or bool(names & _given_options(argv))


def _given_options(argv: list[str]) -> set[str]:
    """The option names the command line gives (``--grid 256 -v`` -> grid, v)."""
    return {t.lstrip("-").partition("=")[0] for t in argv if t.startswith("-")}


def _option_number(node: Node, fn: Node, argv: list[str]) -> str | None:
    """The number the command line gives the option whose parsing ``node`` is in
    (``--grid 256`` for ``if (strcmp(argv[i], "--grid") == 0) { ++i; nx = atoi(argv[i]); }``),
    None when it gives none or no option name is found around ``node``."""
    opts = option_values(argv)
    found = [opts[n] for n in sorted(_option_names(node, fn)) if n in opts]
    return found[0] if len(found) == 1 and _numeric(found[0]) else None


def _option_names(node: Node, fn: Node) -> set[str]:
    """The option names the ``case``/``if`` tests around ``node`` (in ``fn``) compare with."""
    names: set[str] = set()
    child, p = node, node.parent
    while p is not None and p != fn:
        if p.type == "case_statement" and (value := p.child_by_field_name("value")) is not None:
            names.add(text(value).strip("'"))
        elif (
            p.type == "if_statement"
            and (cond := p.child_by_field_name("condition"))
            and p.child_by_field_name("alternative") != child
        ):  # (an ``else if`` for "-e" is not in the option "-s" its first test names)
            names.update(n.lstrip("-") for n in _OPTION_NAME.findall(text(cond)))
        child, p = p, p.parent
    return names


def _options(fn_text: str, ctx: HostContext, argv: list[str]) -> None:
    """Values of variables set by command-line option parsing (``getopt``'s
    ``case 'n': n = atoi(optarg)`` or ``if (!strcmp(argv[i], "-n")) n = atoi(argv[++i])``)."""
    if not argv or ("optarg" not in fn_text and '"-' not in fn_text):
        return
    opts = option_values(argv)
    if not opts:
        return
    found = [(m.group(1), m.group(2)) for m in _GETOPT.finditer(fn_text)]
    found += [(m.group(1).lstrip("-"), m.group(2)) for m in _STRCMP_OPT.finditer(fn_text)]
    for opt, var in found:
        if opt in opts and _numeric(opts[opt]):
            ctx.texts[var] = opts[opt]
    ctx._cache.clear()


def _array_elements(decl: Node) -> str | None:
    """The element count of an array declarator: ``a[N][M]`` holds ``(N) * (M)``."""
    sizes = array_sizes(decl)
    if not sizes or None in sizes:
        return None
    return " * ".join(f"({text(s)})" for s in sizes if s is not None)


def _maybe(ctx: HostContext, expr: str, argv: list[str]) -> float:
    v = ctx.eval_text(ctx.host_text(expr, argv))
    return v if v is not None else math.nan


# a name, a dim3's or struct's field; not the last part of a qualified name (``ns::N`` is
# the namespace's N, not a local N: ``constexpr auto N = ns::N;`` refers to no earlier N)
_IDENT = re.compile(r"(?<!::)(?<!->)(?<![\w.])[A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*)*")
_IDENT_ONLY = re.compile(r"[A-Za-z_]\w*\Z")
_QUALIFIED = re.compile(r"\s*(?:[A-Za-z_]\w*::)+([A-Za-z_]\w*)\s*")  # ns::N -> N


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _assign(ctx: HostContext, name: str, expr: str, argv: list[str]) -> None:
    expr = _COMMENT.sub(" ", expr) if "/" in expr else expr
    for param, given in ctx.host_template.items() if "(" in expr or "<" in expr else ():
        if given:  # a cast to (or the size of) the template function's type parameter: its
            # instantiation's, before ``sizeof`` is evaluated
            expr = re.sub(
                rf"(\(\s*|static_cast\s*<\s*){re.escape(param)}(\s*[)>])", rf"\g<1>{given}\2", expr
            )
    expr = ctx.host_text(expr, argv)
    prev = ctx.texts.get(name)
    qualified = _QUALIFIED.fullmatch(expr)
    if prev is not None and qualified is not None and qualified.group(1) == name:
        return  # ``constexpr auto N = ns::N;``: the namespace's N, which N holds already
    if name in expr and name in _IDENT.findall(expr):
        if prev is None:
            return
        expr = _in_terms_of(expr, name, prev)
    if prev is not None:
        # names defined from this one keep the value it had (``m = n * 2; n = 10;``); a
        # dim3 is its components (``grid.x = 256`` updates ``grid``)
        owner = name.split(".", 1)[0]
        for other, t in ctx.texts.items():
            if other in (name, owner) or not t or name not in t:
                continue
            if name in _IDENT.findall(t):
                ctx.texts[other] = _in_terms_of(t, name, prev) if prev else ""
    ctx.texts[name] = _known(expr)
    ctx._cache.clear()


_ARITHMETIC = re.compile(
    r"\b(?:int|float|double|char|bool|long|short|unsigned|signed|size_t|half|"
    r"u?int\d+_t|dim3)\b"
)


def _copy_fields(ctx: HostContext, target: str, source: str, argv: list[str]) -> None:
    """A whole struct copied (``Dimensions b = dims;``, ``s.dims_b = dims;``): the fields
    the host knows of ``source`` become ``target``'s, those it does not are unknown."""
    source = source.strip()
    if source and not _IDENT.fullmatch(source):
        return
    declared = ctx.types.get(source.split(".", 1)[0], "") if source else "?"
    if not declared or "*" in declared or _ARITHMETIC.search(declared):
        return  # a number or a pointer (or no declared type): no fields to copy
    known = {k[len(source) :]: k for k in ctx.texts if source and k.startswith(source + ".")}
    for key in [k for k in ctx.texts if k.startswith(target + ".")]:
        if key[len(target) :] not in known:
            _assign(ctx, key, "", argv)
    for rest, key in known.items():
        v = ctx.value(key)
        _assign(ctx, target + rest, repr(v) if v is not None else "", argv)


def _in_terms_of(expr: str, name: str, prev: str) -> str:
    """``expr`` with ``name`` replaced by the text it had before (``prev``)."""
    return _known(_IDENT.sub(lambda m: f"({prev})" if m.group(0) == name else m.group(0), expr))


def _known(expr: str) -> str:
    return expr if len(expr) <= 400 else ""  # "": not known


# an allocation in host code: the buffer's name, the text of its size, whether in bytes
_Allocation = tuple[str, str, bool]


def _allocations(src: str, ctx: HostContext, argv: list[str]) -> None:
    """Buffer sizes (in elements) from allocation calls in ``src``."""
    _record_allocations(_allocation_sites(src), ctx, argv)


def _record_allocations(sites: Iterable[_Allocation], ctx: HostContext, argv: list[str]) -> None:
    for name, size, bytes_ in sites:
        _record_alloc(ctx, name, size, argv, bytes_)


@functools.lru_cache(maxsize=16)
def _allocation_sites(src: str) -> tuple[_Allocation, ...]:
    """The allocation calls in ``src``, in order (a file's, read once for all its kernels
    that have no launch)."""
    out: list[_Allocation] = []
    for m in _ALLOC_API.finditer(src):
        args = _call_args(src, m.end() - 1)
        if args is None or len(args) < 2:
            continue
        target = re.sub(r"^\(\s*void\s*\*\*\s*\)|[&()\s]", "", args[0])
        target = target.rsplit(".", 1)[-1].rsplit("->", 1)[-1]
        size_arg = args[2] if m.group(1) == "posix_memalign" and len(args) > 2 else args[1]
        out.append((target, size_arg, True))
    for m in _ALLOC_ASSIGN.finditer(src):
        name, kind = m.group(1), m.group(2)
        if kind.startswith("new"):
            close = _bracket_end(src, m.end())
            if close is None:
                continue
            out.append((name, src[m.end() : close], False))
            continue
        args = _call_args(src, src.find("(", m.end() - 1))
        if not args:
            continue
        if kind == "calloc" and len(args) >= 2:
            out.append((name, f"({args[0]}) * ({args[1]})", True))
        elif kind == "aligned_alloc" and len(args) >= 2:
            out.append((name, args[1], True))
        elif kind.endswith(("malloc_device", "malloc_shared")):
            out.append((name, args[0], False))
        else:
            out.append((name, args[0], True))
    for m in _VECTOR_DECL.finditer(src):
        args = _call_args(src, m.end() - 1)
        if args:
            out.append((m.group(2), args[0], False))
    return tuple(out)


def _record_alloc(ctx: HostContext, name: str, size: str, argv: list[str], bytes_: bool) -> None:
    if not NAME.fullmatch(name):
        return
    v = ctx.eval_text(ctx.host_text(size, argv))
    if v is None or v <= 0:
        if name not in ctx.extents:
            ctx.extents[name] = math.nan
        return
    if bytes_:
        # the bytes of one element, ``sizeof(*name)``: a record's (``FOUR_VECTOR *rv =
        # malloc(n * sizeof(FOUR_VECTOR))`` holds n), a pointer's 8 for an array of pointers
        elem = sizeof(f"*{name}", ctx.types, ctx.struct_sizes) if name in ctx.types else 4
        v = v / max(elem, 1)
    ctx.extents[name] = v


def _runtime_queries(statement: str, ctx: HostContext, argv: list[str]) -> None:
    """What a statement's calls to the runtime about the GPU set, as the target GPU (its
    profile) answers them: device attributes, the occupancy API, the number of GPUs, and
    host memory the device may read in place."""
    query = _DEVICE_QUERY.search(statement)
    if query is not None:
        # ``cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)``
        prop = _DEVICE_ATTRIBUTES.get(query.group(2).lower())
        known = ctx.device.get(prop) if prop is not None else None
        _assign(ctx, query.group(1), repr(known) if known is not None else "", argv)
    _occupancy(statement, ctx, argv)
    _host_memory(statement, ctx, argv)
    count = _DEVICE_COUNT.search(statement)
    if count is not None:
        _assign(ctx, count.group(1), "1", argv)
        ctx.runtime.pop(count.group(1), None)
        _modelled(ctx, count.group(0), (count.group(1),))


def _host_memory(statement: str, ctx: HostContext, argv: list[str]) -> None:
    """Host memory a kernel may read in place: allocated pinned (``cudaHostAlloc(&a,
    bytes, ...)``, ``cudaMallocHost``) or registered (``cudaHostRegister(a, bytes, ...)``),
    with its size, and the device pointer to it (``cudaHostGetDevicePointer(&d_a, a, 0)``:
    ``a``'s size)."""
    for m in _HOST_MEMORY.finditer(statement):
        args = _call_args(statement, m.end() - 1)
        if not args or len(args) < 2:
            continue
        pointer, host = pointer_base(args[0]), pointer_base(args[1])
        ctx.host_memory.add(pointer)
        if not m.group(1).endswith("GetDevicePointer"):
            _record_alloc(ctx, pointer, args[1], argv, True)  # (the bytes)
        elif host in ctx.extents:
            ctx.extents[pointer] = ctx.extents[host]


def _occupancy(statement: str, ctx: HostContext, argv: list[str]) -> None:
    """What an occupancy query sets, on the target GPU, counting its resident-thread and
    -block limits only (not the kernel's registers or shared memory: a kernel they limit
    gets fewer blocks): ``cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, threads,
    smem)`` the blocks of ``threads`` an SM holds; ``cudaOccupancyMaxPotentialBlockSize(&grid,
    &block, k, smem, limit)`` the largest block (a multiple of 32, up to ``limit``) that
    reaches the most resident threads, and the blocks of it that fill every SM."""
    m = _OCCUPANCY.search(statement)
    args = _call_args(statement, m.end() - 1) if m is not None else None
    per_sm = ctx.device.get("maxThreadsPerMultiProcessor")
    blocks_per_sm = ctx.device.get("maxBlocksPerMultiProcessor")
    sms = ctx.device.get("multiProcessorCount")
    if m is None or not args or not per_sm or not blocks_per_sm or not sms:
        return
    outs = [a.group(1) for x in args[:2] if (a := _ADDRESS_OF.fullmatch(x))]
    warp = int(ctx.device.get("warpSize", 32.0))

    def resident(threads: int) -> int:
        return int(min(blocks_per_sm, per_sm // (-(-threads // warp) * warp)))

    def known(arg: str) -> int | None:
        v = ctx.eval_value(ctx.host_text(arg, argv))
        return int(v) if v is not None and math.isfinite(v) else None

    values: list[int | None]
    if m.group(1) == "MaxActiveBlocksPerMultiprocessor":
        threads = known(args[2]) if len(args) > 2 else None
        values = [resident(threads) if threads is not None and threads > 0 else None]
    else:
        top = int(ctx.device.get("maxThreadsPerBlock", 1024.0))
        limit = known(args[4]) if len(args) > 4 else 0
        if limit is None:
            values = [None, None]
        else:
            size, most = 0, 0
            for tried in range(min(limit, top) if limit > 0 else top, 0, -warp):
                if resident(tried) * tried > most:
                    size, most = tried, resident(tried) * tried
                if most >= per_sm:
                    break
            values = [int(resident(size) * sms), size]
    for name, value in zip(outs, values, strict=False):
        _assign(ctx, name, "" if value is None else str(value), argv)
        if value is not None:
            ctx.runtime.pop(name, None)
    if any(v is not None for v in values):
        _modelled(ctx, m.group(0), outs)


def _modelled(ctx: HostContext, call: str, names: Iterable[str]) -> None:
    """Record the runtime query ``call`` (its text from the name on), which set ``names``, as
    answered from the GPU's profile."""
    ctx.add_queries([ModelledQuery(re.split(r"[\s(<]", call, maxsplit=1)[0], tuple(names))])


def used_queries(ctx: HostContext, exprs: Iterable[str]) -> list[ModelledQuery]:
    """The modelled queries of ``ctx`` whose variables ``exprs`` use, directly or through the
    host values they name (``blocks = minGrid; k<<<blocks, ...>>>``, ``plan[i].n`` of
    ``plan[*].n = N / gpus``)."""
    seen: set[str] = set()
    todo = list(exprs)
    while todo and len(seen) < 200:
        expr = todo.pop()
        for name in {*_IDENT.findall(expr), *_fields_of_each(expr)} - seen:
            seen.add(name)
            if ctx.texts.get(name):
                todo.append(ctx.texts[name])
    return [q for q in ctx.modelled_queries if seen.intersection(q.names)]


# a field of an array's element: ``plan[i].n`` (``_fields_of_each``)
_ELEMENT_FIELD = re.compile(r"\b([A-Za-z_]\w*)\[[^\[\]]*\]((?:\.|->)[A-Za-z_]\w*)")


def _fields_of_each(expr: str) -> list[str]:
    """``plan[*].n`` for each ``plan[i].n`` in ``expr``."""
    return [f"{m.group(1)}[*]{m.group(2)}" for m in _ELEMENT_FIELD.finditer(expr)]


def _call_args(src: str, open_paren: int) -> list[str] | None:
    if open_paren < 0 or open_paren >= len(src) or src[open_paren] != "(":
        return None
    depth = 0
    for j in range(open_paren, min(len(src), open_paren + 2000)):
        c = src[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return split_args(src[open_paren + 1 : j])
    return None


def _bracket_end(src: str, start: int) -> int | None:
    depth = 1
    for j in range(start, min(len(src), start + 500)):
        if src[j] == "[":
            depth += 1
        elif src[j] == "]":
            depth -= 1
            if depth == 0:
                return j
    return None


def _passed_calls(detection: Detection, root: Node, name: str) -> list[Node]:
    """Calls of function ``name`` made through a parameter it is passed as: in
    ``run(x, n, step)``, where ``run`` calls its parameter ``op(x, n)``, that call."""
    out: list[Node] = []
    pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b(?!\s*[(<])")
    for m in pat.finditer(detection.source):
        node = root.descendant_for_byte_range(m.start(), m.end())
        if node is not None and node.parent and node.parent.type == "pointer_expression":
            node = node.parent  # ``&step``
        args = node.parent if node is not None else None
        if node is None or args is None or args.type != "argument_list":
            continue
        call = args.parent
        fn = call.child_by_field_name("function") if call is not None else None
        if fn is None or fn.type != "identifier":
            continue
        pos = next(i for i, a in enumerate(args.named_children) if a.start_byte == node.start_byte)
        d = _definition(root, text(fn))
        params = function_params(d) if d is not None else []
        if d is not None and pos < len(params) and params[pos][1]:
            out += call_sites(detection.source, root, params[pos][1], d.child_by_field_name("body"))
        if len(out) >= 8:
            break
    return out


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def _caller_scope(
    caller: Node,
    stop: int,
    detection: Detection,
    ctx: HostContext,
    argv: list[str],
    depth: int,
    view: SourceView | None,
    looked: list[str],
) -> tuple[HostContext, dict[str, str], bool]:
    """The host values at byte ``stop`` of host function ``caller`` (a call in it): the
    file's constants with ``ctx``'s user-given values, what ``caller``'s own callers pass it,
    its statements before ``stop`` and its allocations (a buffer ``main`` allocates and
    passes down keeps its size); with the starting values (to tell what it set) and whether
    ``caller`` runs in the default run (``_bind_callers``)."""
    sub = _program_context(detection, argv, ctx.fixed, ctx.device)
    _extern_globals(detection, sub, view)
    start = dict(sub.texts)  # the file's constants and argc, the globals it declares extern
    runs = _bind_callers(caller, detection, sub, argv, depth, view, looked)
    _scan_function(caller, stop, sub, argv)
    _allocations(compiled_text(caller), sub, argv)
    return sub, start, runs


# host call levels followed up from a launch towards main (main -> run -> sort -> scan ->
# launch is four)
_CALLER_DEPTH = 4


def _bind_callers(
    fn: Node,
    detection: Detection,
    ctx: HostContext,
    argv: list[str],
    depth: int,
    view: SourceView | None,
    looked: list[str],
) -> bool:
    """Give the parameters of host function ``fn`` the values of a call site's arguments
    (in this file, else in the other files of its folder, read through ``view``; the files
    whose folder was searched are added to ``looked``), and the globals its caller set before
    the call (a function without parameters too: ``void run()`` launching with ``g_n``
    that main set). The call taken is the first that runs in the default run: not one in a
    branch the host values decide against, nor in a function only such a call reaches
    (``shmoo()`` run with ``--shmoo`` only), else the first. False when no call runs."""
    name = function_name(fn)
    if not name or name == "main" or depth > _CALLER_DEPTH:
        return True
    params = function_params(fn)
    units = [Unit(detection.file, detection, _root(fn))]
    calls = call_sites(detection.source, units[0].root, name, callee=fn)
    calls = [c for c in calls if enclosing_function(c) not in (None, fn)]
    if not calls:
        calls = _passed_calls(detection, units[0].root, name)
    if not calls:
        pat = call_pattern(name)
        looked.append(detection.file)
        for u in units_mentioning(detection.file, pat, view):
            calls = [
                c
                for c in call_sites(u.detection.source, u.root, name, callee=fn)
                if enclosing_function(c)
            ]
            if calls:
                detection = u.detection
                break
    chosen: _CallScope | None = None
    tried = 0
    for call in calls:
        caller = enclosing_function(call)
        if caller is None or caller == fn:
            continue
        args = call_arguments(call)
        if len(args) > len(params) and not is_variadic(fn):
            continue
        sub, start, runs = _caller_scope(
            caller, call.start_byte, detection, ctx, argv, depth + 1, view, looked
        )
        runs = runs and _branch_taken(call, caller, sub, argv) is not False
        if chosen is None or runs:
            chosen = _CallScope(caller, with_defaults(fn, args), sub, start)
        tried += 1
        if runs or tried == _CALLS_TRIED:
            break
    if chosen is None:
        return True
    _bind_call(fn, params, chosen, detection, ctx, argv, view)
    return runs


# call sites of a function tried for one that runs in the default run
_CALLS_TRIED = 3


@dataclass(frozen=True)
class _CallScope:
    """A call site's caller, the call's arguments (defaults filled in), the caller's scope at
    the call and the values it started with."""

    caller: Node
    args: list[str]
    sub: HostContext
    start: dict[str, str]


def _bind_call(
    fn: Node,
    params: list[tuple[str, str]],
    chosen: _CallScope,
    detection: Detection,
    ctx: HostContext,
    argv: list[str],
    view: SourceView | None,
) -> None:
    """``fn``'s parameters given the arguments of the call ``chosen`` (with its caller, the
    arguments, the caller's scope and its starting values)."""
    caller, args, sub, start = chosen.caller, chosen.args, chosen.sub, chosen.start
    ctx.add_queries(used_queries(sub, args))
    # globals the caller (or its callers) set before the call (``cuda_num_SMs =
    # deviceProp.multiProcessorCount`` in main), other than the file's constants
    for name in _globals_set(sub, start):
        if name in detection.constants:
            continue
        v = sub.eval_value(name)
        if v is not None and name not in ctx.texts:
            ctx.texts[name] = repr(v)
    # a type that is the caller's own template parameter: what its instantiation gives,
    # else nothing (the parameter's own declaration then applies)
    instantiation = _instantiation(caller, detection, view)
    for (_ptype, pname), a in zip(params, args, strict=False):
        if not pname:
            continue
        # a lambda, written in the call or held by a local (``auto k = [=](int i) {..};``)
        lam = a if a.lstrip().startswith("[") else sub.texts.get(a.strip(), "")
        if lam.lstrip().startswith("["):
            _pass_lambda(ctx, sub, pname, lam)
            continue
        m = TEMPORARY.match(a)
        if m and m.group(1).rsplit("::", 1)[-1] in ctx.structs:
            ctx.functors[pname] = m.group(1)  # a functor's temporary (``Saxpy{x, y, a}``)
        v = sub.eval_value(sub.host_text(a, argv))  # (``run(d, atoi(argv[1]))``)
        if v is not None:
            ctx.texts[pname] = repr(v)
        elif behind := sub.set_at_run_time(a):  # the caller set it at run time
            ctx.runtime[pname] = behind
        for f, fv in struct_fields(sub, a, pname).items():
            ctx.texts[f] = repr(fv)
        _point_at(ctx, sub, pname, a)
        base = pointer_base(a)
        ext = sub.extents.get(base)
        if ext is not None and not math.isnan(ext):
            ctx.extents[pname] = ext
        if base in sub.host_memory:
            ctx.host_memory.add(pname)
        if base in sub.types and pname not in ctx.types:
            given = _element_type(sub.types[base], a)
            word = type_name(given)[0]
            if word in instantiation:
                given = re.sub(rf"\b{re.escape(word)}\b", instantiation[word], given)
            if word not in instantiation or instantiation[word]:
                ctx.types[pname] = given
    ctx._cache.clear()


# a temporary of a named type (``Saxpy{x, y, a}``, ``Op<float>()``): the type
TEMPORARY = re.compile(r"\s*([A-Za-z_][\w:]*)\s*(?:<[^(){}]*>)?\s*[({]")


def _pass_lambda(ctx: HostContext, sub: HostContext, pname: str, lam: str) -> None:
    """Parameter ``pname`` given the lambda ``lam`` by the call: its text, and what the
    caller's scope (``sub``) says of the names it captures: their types, values and buffer
    sizes (``x`` of ``[=](int i) { y[i] = a * x[i]; }``), where this scope has none."""
    ctx.lambdas[pname] = lam
    for name in set(NAME.findall(lam)):
        if name in sub.types:
            ctx.types.setdefault(name, sub.types[name])
        ext = sub.extents.get(name)
        if ext is not None and not math.isnan(ext):
            ctx.extents.setdefault(name, ext)
        if name not in ctx.texts and (v := sub.eval_value(name)) is not None:
            ctx.texts[name] = repr(v)


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def _device_property(name: str, device: Mapping[str, float]) -> str | None:
    """``prop.multiProcessorCount`` (a ``cudaDeviceProp``'s field, as the target GPU
    has it) as a number text, else None."""
    owner, dot, prop = name.rpartition(".")
    v = device.get(prop) if dot and owner else None
    return repr(v) if v is not None else None


def _including_function(
    detection: Detection, view: SourceView | None
) -> tuple[Detection, Node, int] | None:
    """The sibling file, function and byte where the header of ``detection`` is
    ``#include``d inside a function body (a fragment of that function), if any."""
    for u, starts in units_including(detection.file, view):
        for start in starts:
            fn = enclosing_function(u.root.descendant_for_byte_range(start, start + 1))
            if fn is not None:
                return u.detection, fn, start
    return None


def _program_context(
    detection: Detection,
    argv: list[str],
    fixed: dict[str, float] | None = None,
    device: Mapping[str, float] | None = None,
) -> HostContext:
    """A host scope's starting values: the file's constants, ``argc`` (no arguments
    given: the program's own defaults, ``argc > 1 ? atoi(argv[1]) : 1024``) and CUDA's and
    HIP's ``warpSize`` (32 on the NVIDIA GPUs, as in device code; HIP host code sizes
    launches with it: ``dim3 grids(n / (BLOCK_SIZE / warpSize))``)."""
    ctx = HostContext(
        fixed=fixed if fixed is not None else {},
        functions=text_functions(detection.functions, detection.macros),
        device=device or {},
        definitions=detection.functions,
    )
    ctx.texts["warpSize"] = "32"
    ctx.texts.update(detection.constants)
    for name, ty in detection.constant_types.items():
        if ty.split()[-1:] == ["dim3"] and name in detection.constants:
            # ``dim3 block(512);`` at file scope: its components too (``N / block.x``)
            _assign_dim3(ctx, name, detection.constants[name], argv)
    ctx.texts["argc"] = str(len(argv) + 1)
    return ctx


# ``extern size_t even_sites_on_node;``: a global another file of the program defines
_EXTERN = re.compile(rb'^[ \t]*extern\s+(?:"C"\s+)?[\w:<>\s*&]+?\b([A-Za-z_]\w*)\s*;', re.M)


def _extern_globals(detection: Detection, ctx: HostContext, view: SourceView | None) -> None:
    """The values of the globals the file (or a header it includes) declares ``extern`` and
    a sibling file defines with an initializer (``size_t even_sites_on_node =
    sites_on_node / 2;`` in main.cpp), with that file's constants they are written in."""
    sources = [detection.source]
    for m in LOCAL_INCLUDE.finditer(detection.source):
        found = included_body(m.group(1).decode("utf-8", "replace"), detection.file, view)
        if found is not None:
            sources.append(found[1].text or b"")
    names = {
        m.group(1).decode() for src in sources if b"extern" in src for m in _EXTERN.finditer(src)
    }
    names -= ctx.texts.keys()
    if not names:
        return
    pat = re.compile(
        rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\s*="
    )
    for u in units_mentioning(detection.file, pat, view):
        if names & u.detection.constants.keys():
            for name, value in u.detection.constants.items():
                ctx.texts.setdefault(name, value)
            names -= u.detection.constants.keys()
            ctx._cache.clear()
        if not names:
            return


def host_context(
    kernel: Kernel,
    detection: Detection,
    block: Dim3 | None = None,
    grid: Dim3 | None = None,
    args: str | None = None,
    values: Mapping[str, str | float] | None = None,
    read: SourceReader | None = None,
    device: Mapping[str, float] | None = None,
    structs: Mapping[str, Mapping[str, str]] | None = None,
    instantiation: tuple[str, ...] = (),
    struct_sizes: Mapping[str, int] | None = None,
    arrays: Mapping[str, tuple[str, float]] | None = None,
) -> HostContext:
    """Everything the host side says about ``kernel`` (see the module docstring). The other
    files of the folder are read through ``read`` (open buffers first), else from disk.
    ``device``: the target GPU's ``cudaDeviceProp`` values the host code may query;
    ``structs``: the record types the kernel's file and its headers declare (their fields in
    order, for aggregate initializers) and ``struct_sizes`` their sizes (``sizeof``);
    ``instantiation``: the kernel's template arguments in the launch that is meant (a
    profile's ``k<unsigned char>``), which give the launching template function's
    parameters they are named by (``k<TData><<<...>>>`` in ``runTest<TData>``:
    ``sizeof(TData)`` is 1 there); ``arrays``: the file-scope arrays, their type text and
    elements (``float ga[1 << 20]``: ``sizeof(ga)`` in ``main`` is 4 MiB)."""
    view = source_view(read)
    argv = argv_of(args)
    ctx = _program_context(detection, argv, device=device)
    ctx.structs = structs or {}
    ctx.struct_sizes = struct_sizes or {}
    for name, (type_text, elements) in (arrays or {}).items():
        ctx.types.setdefault(name, type_text)
        ctx.extents.setdefault(name, elements)
    _extern_globals(detection, ctx, view)
    hints: dict[str, str | float] = dict(parse_hints(detection.source))
    if values:
        hints.update(values)
    values = hints
    if values:
        for k, v in values.items():
            if isinstance(v, int | float):
                ctx.fixed[k] = v
            else:
                val = evaluate(v, ctx.texts)
                if val is not None:
                    ctx.fixed[k] = val
            ctx.origin[k] = "hint"
    if kernel.is_offload:
        anchor = kernel.node if kernel.node is not None else kernel.body
        fn = kernel_function(kernel)
        scope, stop = detection, anchor.start_byte if anchor is not None else 0
        if fn is None and anchor is not None:
            # a region in a header included inside a function (``#include
            # "kernel_histogram.h"`` in ``bucketSort``): that function's names, where it
            # includes it, with the includer's constants
            found = _including_function(detection, view)
            if found is not None:
                scope, fn, stop = found
                for name, value in scope.constants.items():
                    ctx.texts.setdefault(name, value)
        if fn is not None:
            # a region in a function template: the instance meant gives its parameters
            meant = dict(zip((p[0] for p in _template_parameters(fn)), instantiation, strict=False))
            _function_scope(ctx, scope, fn, stop, argv, view, meant)
            _map_extents(kernel, detection, ctx, fn if scope is detection else None)
            if block is not None and grid is not None:
                _solve_iterations(kernel, ctx, block, grid, argv)
        ctx.block, ctx.grid = block, grid
        ctx.modelled_queries = []  # (what an offloaded region sizes itself by is its own)
        return ctx
    unit: Unit | None = None
    sites = detection.launches_of(kernel)
    if sites and kernel.body is not None:
        unit = Unit(detection.file, detection, _root(kernel.body))
    else:
        # ``k<<<``, ``(void *)k)``, a driver-API module function's name ``"k"``, the first
        # argument of ``hipLaunchKernelGGL(k, ...)`` or of a launching macro, or a function
        # pointer set to it (``stencil = k;``, ``{k1, k2}``) that is launched
        pat = re.compile(
            rb"\b" + re.escape(kernel.name.encode()) + rb'\s*(?:<[^;{}]*>)?\s*(?:<<<|\)|"|,|;|\})'
        )
        for u in units_mentioning(detection.file, pat, view):
            sites = u.detection.launches_of(kernel)
            if sites:
                unit = u
                break
    site = _pick_launch(sites, block, grid)
    if block is None and unit is not None and len(sites) > 1:
        site = _taken_launch(sites, unit, ctx, argv, view) or site
    elif block is not None and grid is not None and unit is not None and len(sites) > 1:
        site = _sized_launch(sites, unit, ctx, argv, view, block, grid) or site
    ctx.launch = site
    if site is not None and unit is not None:
        if unit.detection is not detection:
            # the launch is evaluated in its own file, with the constants it sees
            ctx.functions = text_functions(unit.detection.functions, unit.detection.macros)
            ctx.texts.update(unit.detection.constants)
            ctx._cache.clear()
        root = unit.root
        call = root.descendant_for_byte_range(site.span.start_byte, site.span.end_byte)
        fn = enclosing_function(call) if call is not None else None
        scoped = fn is not None and site.file == unit.detection.file
        launch_text = unit.detection.source[site.span.start_byte : site.span.end_byte].decode(
            "utf-8", "replace"
        )
        m = re.search(
            # `k<T, 4><<<...>>>(...)`, or the kernel argument of the launch APIs
            re.escape(kernel.name) + r"\s*<(.*?)>\s*(<<<|\(|\)|,)",
            launch_text,
        )
        named = split_args(m.group(1), angles=True) if m and "<<" not in m.group(1) else []
        if fn is not None and scoped:
            meant = dict(zip((a.strip() for a in named), instantiation, strict=False))
            _function_scope(ctx, unit.detection, fn, site.span.start_byte, argv, view, meant)
        # the host scope (callers, assignments, run-time reads) knows more than detection's
        # declarations before the launch: what it cannot evaluate is unknown
        if scoped:  # a given launch size tells what its one unknown host value was
            for given, expr in ((grid, site.grid), (block, site.block)):
                if given is not None:
                    _solve_size(ctx, expr, given, argv)
        if block is None:
            block = _dim(ctx, site.block, argv) if scoped else site.block_value
        if grid is None:
            grid = _dim(ctx, site.grid, argv) if scoped else site.grid_value
        # an empty dimension is no launch (a value read at run time was taken for 0)
        block = block if block is None or 0 not in block else None
        grid = grid if grid is None or 0 not in grid else None
        # launch arguments are evaluated in the host's scope first, then become the
        # kernel's parameter values (a parameter may share a host variable's name)
        bound: dict[str, float] = {}
        unknown: list[str] = []
        extents: dict[str, float] = {}
        launch_args = list(site.args)
        if kernel.node is not None:
            launch_args = with_defaults(kernel.node, launch_args)
        for (_ptype, pname), a in zip(kernel.params, launch_args, strict=False):
            if not pname:
                continue
            pv = ctx.eval_value(ctx.host_text(a, argv))
            if pv is not None and pname not in ctx.fixed:
                bound[pname] = pv
            elif pname not in ctx.fixed:
                unknown.append(pname)
            bound.update(struct_fields(ctx, a, pname))
            held = _copied_values(ctx, a, pname)
            if held:
                bound.update(held)
                ctx.copied.add(pname)
            base = pointer_base(a)
            if base in ctx.extents:
                extents[pname] = ctx.extents[base]
                ctx.aliases[pname] = base
            if base in ctx.host_memory:
                ctx.mapped.add(pname)
        for pname, pval in bound.items():
            ctx.fixed[pname] = pval
            ctx.origin.setdefault(pname, "launch")
        passed = dict(zip((p for _t, p in kernel.params), launch_args, strict=False))
        for pname in unknown:
            behind = ctx.set_at_run_time(passed[pname])
            if behind:  # an argument the program sets at run time (``k<<<...>>>(cols)``)
                ctx.runtime[pname] = behind
            # not the value of a host variable that shares the parameter's name
            ctx.texts[pname] = ""
        ctx.extents.update(extents)
        ctx._cache.clear()
        if fn is not None and not scoped:
            ctx.host_template = _instantiation(fn, unit.detection, view)
        if named:
            # the launching function's own parameters become what its instantiation gives,
            # else empty (the kernel's own default applies)
            ctx.template_args = tuple(ctx.host_template.get(a.strip(), a) for a in named)
    else:
        _allocations(detection.source.decode("utf-8", "replace"), ctx, argv)
    ctx.block, ctx.grid = block, grid
    launched = (site.grid, site.block, *site.args) if site is not None else ()
    ctx.modelled_queries = used_queries(ctx, launched)
    return ctx


def _function_scope(
    ctx: HostContext,
    detection: Detection,
    fn: Node,
    stop: int,
    argv: list[str],
    view: SourceView | None,
    given: Mapping[str, str] | None = None,
) -> None:
    """Host values at byte ``stop`` of the function ``fn`` a launch or region is in: its
    template parameters as ``given`` (the launch meant) or else its calls instantiate them
    (before the scan: ``(IdxType)n`` in the host code reads as ``(int)n``), in a method the
    object's data members, then the function's own names (a local or parameter of a
    member's name wins)."""
    ctx.host_template = _instantiation(fn, detection, view, deduce=True)
    for param, value in (given or {}).items():
        if param in ctx.host_template:
            ctx.host_template[param] = value
    _template_values(fn, detection, ctx, view)
    types, values = _members(fn, detection, ctx, argv, view)
    ctx.types.update(types)
    ctx.texts.update(values)
    _host_scope(ctx, detection, fn, stop, argv, view)


def struct_fields(ctx: HostContext, arg: str, param: str) -> dict[str, int | float]:
    """The fields the host set on a struct passed by value (``p.n = 4096`` before
    ``f(p)``), under the parameter's name (``param.n``)."""
    arg = arg.strip()
    if not NAME.fullmatch(arg):
        return {}
    out: dict[str, int | float] = {}
    for key in [k for k in ctx.texts if k.startswith(arg + ".")]:
        v = ctx.value(key)
        if v is not None:
            out[param + key[len(arg) :]] = v
    return out


def _copied_values(ctx: HostContext, arg: str, param: str) -> dict[str, float]:
    """What the host copied into the device buffer passed as ``arg``
    (:func:`_copied_to_device`), under the kernel parameter's name (``param->n``)."""
    arg = arg.strip()
    if not NAME.fullmatch(arg):
        return {}
    out: dict[str, float] = {}
    for key in [k for k in ctx.texts if k == f"{arg}[0]" or k.startswith(arg + "->")]:
        v = ctx.get(key)
        if v is not None:
            out[param + key[len(arg) :]] = v
    return out


def _point_at(ctx: HostContext, src: HostContext, pointer: str, arg: str) -> None:
    """A pointer set to a variable's address (``run(&n)``, ``Params *pp = &p``): what
    ``src`` knows of the variable, as ``pointer[0]`` (``*pointer``) and, for a struct,
    ``pointer->field``."""
    m = _ADDRESS_OF.fullmatch(arg)
    if m is None:
        return
    target = m.group(1)
    v = src.value(target)
    if v is not None:
        ctx.texts[f"{pointer}[0]"] = repr(v)
    for f, fv in struct_fields(src, target, pointer).items():
        ctx.texts[f"{pointer}->{f[len(pointer) + 1 :]}"] = repr(fv)


_ADDRESS_OF = re.compile(r"\s*&\s*([A-Za-z_]\w*)\s*")


def _element_type(base_type: str, arg: str) -> str:
    """The type of argument ``arg`` whose variable (:func:`pointer_base`) has type
    ``base_type``: a subscripted element is a pointer level less (``optr[6]`` of ``int *optr``
    is an ``int``); an address taken (``&d_a[i]``) or an offset pointer keeps the type."""
    s = re.sub(r"^\(.*?\)|[()\s]", "", arg)
    if s.startswith("&") or "." in s or "->" in s:
        return base_type
    levels = len(re.findall(r"\[[^\[\]]*\]", s.split("+")[0]))
    for _ in range(levels):
        if "*" not in base_type:
            break
        star = base_type.rindex("*")
        base_type = (base_type[:star] + base_type[star + 1 :]).strip()
    return base_type


def pointer_base(arg: str) -> str:
    """The variable whose allocation a pointer argument points into: ``d_a`` for ``d_a``,
    ``(float*)d_a + off`` or ``&d_a[i]``; the field for ``plan[i].d_data`` or ``s->buf``
    (the struct array ``plan`` is not the buffer)."""
    s = re.sub(r"^\(.*?\)|[&()\s]", "", arg).split("+")[0]
    while "[" in s:
        stripped = re.sub(r"\[[^\[\]]*\]", "", s)
        if stripped == s:
            break
        s = stripped
    return s.replace("->", ".").split(".")[-1]


def template_params(fn: Node) -> list[tuple[str, str | None]]:
    """The template parameters of function ``fn`` (``template <typename T, int BS = 32>``),
    by name with their default (no template: none)."""
    return [(name, default) for name, default, _value in _template_parameters(fn)]


def _template_parameters(fn: Node) -> list[tuple[str, str | None, bool]]:
    """:func:`template_params`, each marked whether it is a value (``int BS``) rather than
    a type."""
    decl = fn.parent
    params = decl.child_by_field_name("parameters") if decl is not None else None
    if decl is None or decl.type != "template_declaration" or params is None:
        return []
    out: list[tuple[str, str | None, bool]] = []
    for p in params.named_children:
        if p.type in ("type_parameter_declaration", "optional_type_parameter_declaration"):
            name = next((c for c in p.named_children if c.type == "type_identifier"), None)
            default = p.child_by_field_name("default_type")
        elif p.type in ("parameter_declaration", "optional_parameter_declaration"):
            name = p.child_by_field_name("declarator")
            default = p.child_by_field_name("default_value")
        else:
            continue
        value = p.type in ("parameter_declaration", "optional_parameter_declaration")
        if name is None:
            continue
        if name.type in ("type_identifier", "identifier"):
            pname = text(name)
        elif value and name.type == "function_declarator":
            pname = declared_name(name)  # ``float (*G)(float, float)``: G(x, y) calls it
        else:
            continue
        out.append((pname, text(default) if default is not None else None, value))
    return out


def _instantiation(
    fn: Node,
    detection: Detection,
    view: SourceView | None,
    *,
    deduce: bool = False,
    _depth: int = 0,
) -> dict[str, str]:
    """What the first explicit instantiation of template function ``fn`` gives its template
    parameters (``run<float>(n)``: ``{"T": "float"}``), else (``deduce``) what the first
    call's arguments make them (``axpy(x, y, 2.0, n)`` with ``double *x``), else their
    defaults; a parameter nothing gives is "" (no function template: no parameters). With
    ``deduce``, an instantiation by the calling template's own parameter (``f<T>(...)``)
    takes what that template's first instantiation gives it."""
    params = template_params(fn)
    if not params:
        return {}
    name = function_name(fn)
    calls = in_file = call_sites(detection.source, _root(fn), name, callee=fn) if name else []
    site_detection = detection
    if name and not any(_explicit_args(c) for c in calls):
        pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*<[^;(){}]*>\s*\(")
        for u in units_mentioning(detection.file, pat, view):
            calls = call_sites(u.detection.source, u.root, name, callee=fn)
            if any(_explicit_args(c) for c in calls):
                site_detection = u.detection
                break
    site = next((c for c in calls if _explicit_args(c) and enclosing_function(c) is not fn), None)
    given = [g.strip() for g in _explicit_args(site)] if site is not None else []
    if site is None and deduce:
        given = _class_instantiation(fn, detection, {n for n, _ in params})
    outer = enclosing_function(site) if site is not None and deduce and _depth < 2 else None
    outer_names = {n for n, _ in template_params(outer)} if outer is not None else set()
    if outer is not None and outer_names & set(given):
        outer_types = _instantiation(outer, site_detection, view, deduce=True, _depth=_depth + 1)
        given = [outer_types.get(g, g) if g in outer_names else g for g in given]
    deduced: dict[str, str] = {}
    if deduce and len(given) < len(params) and name:
        # the first call that is not the function's own, in this file, else in a sibling
        # (a template in a header, called from ``main.cu``)
        callers = [(detection, in_file)]
        if not any(enclosing_function(c) not in (None, fn) for c in in_file):
            callers = _sibling_calls(detection, fn, view)
        for site_det, found in callers:
            resolve = functools.partial(_resolved, detection=site_det, view=view, depth=_depth)
            deduced = _deduced_from_call(fn, found, resolve)
            if deduced:
                break
    values = {
        pname: given[i] if i < len(given) else deduced.get(pname) or default
        for i, (pname, default) in enumerate(params)
    }
    return {k: v or "" for k, v in values.items()}


def _template_values(
    fn: Node, detection: Detection, ctx: HostContext, view: SourceView | None
) -> None:
    """The values ``ctx.host_template`` gives the non-type template parameters of ``fn``
    (``template <int np, ...>`` deduced as 4): names its host code and launches read. Only
    for a function every call of which is the same (one instantiation: ``run<4>()`` and
    ``run<8>()`` launch kernels the first call would not describe)."""
    values = [name for name, _default, value in _template_parameters(fn) if value]
    name = function_name(fn)
    if not values or not name:
        return
    found = [(detection, call_sites(detection.source, _root(fn), name, callee=fn))]
    found += _sibling_calls(detection, fn, view)
    calls = {
        text(c).replace(" ", "")
        for _det, sites in found
        for c in sites
        if enclosing_function(c) not in (None, fn)
    }
    if len(calls) != 1:
        return
    for param in values:
        value = ctx.host_template.get(param)
        if value:
            ctx.texts.setdefault(param, value)


def _sibling_calls(
    detection: Detection, fn: Node, view: SourceView | None
) -> list[tuple[Detection, list[Node]]]:
    """The calls of function ``fn`` (``f(...)``, ``f<T>(...)``) in the sibling files of
    ``detection``, by file."""
    name = function_name(fn)
    pat = call_pattern(name)
    return [
        (u.detection, call_sites(u.detection.source, u.root, name, callee=fn))
        for u in units_mentioning(detection.file, pat, view)
    ]


def _class_instantiation(fn: Node, detection: Detection, names: set[str]) -> list[str]:
    """The arguments of the first instantiation in the file of the class template whose
    method ``fn`` defines (``template <class T> void Stream<T>::copy()`` and ``template class
    Stream<float>;`` or ``Stream<double> s;``), else none."""
    owner = _qualified_owner(fn).split("<", 1)[0].strip()
    if not owner or not NAME.fullmatch(owner):
        return []
    pat = re.compile(rb"\b" + re.escape(owner.encode()) + rb"\s*<([^<>;(){}]*)>")
    for m in pat.finditer(detection.source):
        args = [a.strip() for a in split_args(m.group(1).decode("utf-8", "replace"))]
        if args and not set(args) & names:
            return args
    return []


def _deduced_from_call(
    fn: Node, calls: list[Node], resolve: Callable[[Node, str], str] | None = None
) -> dict[str, str]:
    """The template parameters the first call of ``fn`` from another function deduces from
    its arguments, as C++ does: a ``const T *x`` given a ``double *`` (a parameter or local
    of the caller declared before the call) is ``double``, a ``T a`` given ``2.0`` is
    ``double``; ``N`` of ``const T v[N][N]`` given ``double v[NP][NP]``, or of ``const
    element<N, T> &e`` given ``element<NP, double> e``, is ``NP`` (``resolve``: what such a
    name of the caller stands for, its own template parameter or a local constant)."""
    names = {name for name, _ in template_params(fn)}
    call = next((c for c in calls if enclosing_function(c) not in (None, fn)), None)
    caller = enclosing_function(call) if call is not None else None
    if call is None or caller is None:
        return {}
    args_node = call.child_by_field_name("arguments")
    args = args_node.named_children if args_node is not None else []
    out: dict[str, str] = {}
    for pnode, arg in zip(parameter_declarations(fn), args, strict=False):
        found = (
            _declaration_of(caller, text(arg), call.start_byte)
            if arg.type == "identifier"
            else None
        )
        if found is None:
            continue
        given_type, given_dims = found[0], _dims(found[1])
        declarator = pnode.child_by_field_name("declarator")
        dims = _dims(declarator) if declarator is not None else []
        pairs = list(zip(dims, given_dims, strict=False))
        want = _TEMPLATE_TYPE.fullmatch(text(pnode.child_by_field_name("type")))
        have = _TEMPLATE_TYPE.fullmatch(given_type)
        if want and have and want.group(1) == have.group(1):
            pairs += zip(
                split_args(want.group(2), angles=True),
                split_args(have.group(2), angles=True),
                strict=False,
            )
        for want_arg, have_arg in pairs:
            key, value = want_arg.strip(), have_arg.strip()
            if key in names and key not in out and value:
                out[key] = resolve(caller, value) if resolve is not None else value
    for (ptype, _), arg in zip(function_params(fn), args, strict=False):
        word, stars = type_name(ptype)
        if word not in names or word in out:
            continue
        if arg.type == "number_literal" and not stars:
            lit = text(arg).lower()
            floating = "." in lit or ("e" in lit and not lit.startswith("0x"))
            out[word] = ("float" if lit.endswith("f") else "double") if floating else "int"
        elif arg.type == "identifier":
            declared = _declared_before(caller, text(arg), call.start_byte)
            host, host_stars = type_name(declared) if declared else ("", 0)
            if host and host_stars == stars and parse_type(host).kind != "unknown":
                out[word] = host
    return out


# a class template's type with its arguments (``const element<NP, double>``)
_TEMPLATE_TYPE = re.compile(r"\s*(?:const\s+)?([A-Za-z_][\w:]*)\s*<(.*)>\s*", re.S)


def _declaration_of(fn: Node, name: str, stop: int) -> tuple[str, Node] | None:
    """The type text and declarator a parameter or a declaration before byte ``stop`` of
    function ``fn`` gives ``name`` (``double v[NP][NP][2]``: ``double``, ``v[NP][NP][2]``)."""
    found: tuple[str, Node] | None = None
    for p in parameter_declarations(fn):
        d = p.child_by_field_name("declarator")
        if d is not None and declared_name(d) == name:
            found = text(p.child_by_field_name("type")), d
    for decl in descendants_of_type(fn, "declaration", stop):
        for d in decl.children_by_field_name("declarator"):
            if declared_name(d) == name:
                found = text(decl.child_by_field_name("type")), d
    return found


def _dims(declarator: Node) -> list[str]:
    inner = (
        declarator.child_by_field_name("declarator")
        if declarator.type == "init_declarator"
        else None
    )
    return [text(s) if s is not None else "" for s in array_sizes(inner or declarator)]


def _resolved(
    caller: Node, value: str, detection: Detection, view: SourceView | None, depth: int
) -> str:
    """What a name a call passes as a template argument stands for in its caller: the
    caller's own template parameter (its first instantiation's), a local constant's
    initializer (``constexpr int NP = 4``), else the name itself."""
    if not NAME.fullmatch(value):
        return value
    if value in {n for n, _ in template_params(caller)} and depth < 2:
        return _instantiation(caller, detection, view, deduce=True, _depth=depth + 1).get(value, "")
    for decl in descendants_of_type(caller, "declaration", caller.end_byte):
        for d in decl.children_by_field_name("declarator"):
            init = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if declared_name(d) == value and init is not None and "const" in text(decl):
                return text(init)
    return value


def _declared_before(fn: Node, name: str, stop: int) -> str | None:
    """The type text (stars included) a parameter or a declaration before byte ``stop`` of
    function ``fn`` gives ``name``."""
    found = _declaration_of(fn, name, stop)
    return f"{found[0]} {declarator_stars(found[1])}".strip() if found is not None else None


def _explicit_args(call: Node) -> list[str]:
    """The explicit template arguments of a call (``f<float, 4>(x)``), or none."""
    f = call.child_by_field_name("function")
    targs = f.child_by_field_name("arguments") if f is not None else None
    if f is None or f.type != "template_function" or targs is None:
        return []
    return [text(a) for a in targs.named_children]


# the files whose folder was searched for callers, with the versions of the siblings seen
# (a scan is valid while they are current)
_Seen = tuple[tuple[str, tuple[FileStamp, ...]], ...]


@dataclass(frozen=True)
class _State:
    """What a host function's scan has recorded so far (``HostContext``'s fields of the
    same names)."""

    texts: dict[str, str]
    types: dict[str, str]
    extents: dict[str, float]
    runtime: dict[str, tuple[str, ...]]
    modelled_queries: tuple[ModelledQuery, ...]
    host_memory: frozenset[str]
    lambdas: dict[str, str]
    functors: dict[str, str]

    def restore(self, ctx: HostContext) -> None:
        """Put this state into ``ctx``."""
        ctx.texts.update(self.texts)
        ctx.types.update(self.types)
        ctx.extents.update(self.extents)
        ctx.runtime.update(self.runtime)
        ctx.add_queries(self.modelled_queries)
        ctx.host_memory.update(self.host_memory)
        ctx.lambdas.update(self.lambdas)
        ctx.functors.update(self.functors)
        ctx._cache.clear()


def _siblings_seen(looked: list[str], view: SourceView | None) -> _Seen:
    """For each file whose folder was searched, the versions of its siblings."""
    return tuple((p, sibling_stamps(p, view)) for p in dict.fromkeys(looked))


def _state(ctx: HostContext) -> _State:
    return _State(
        dict(ctx.texts),
        dict(ctx.types),
        dict(ctx.extents),
        dict(ctx.runtime),
        tuple(ctx.modelled_queries),
        frozenset(ctx.host_memory),
        dict(ctx.lambdas),
        dict(ctx.functors),
    )


@dataclass
class _FunctionScan:
    """A host function's scan, kept between the launches in it: a function often launches
    many kernels, and scanning it from its start for each launch is quadratic. The values
    its callers bind and its parameters' types (``start``) are the same for every launch;
    then its statements are scanned in order up to the last launch asked for (``state``
    after the first ``scanned``), and a later launch continues from there."""

    seen: _Seen  # the sibling files searched for callers, with the versions seen
    fn_text: str
    statements: list[tuple[Node, int]]
    allocations: tuple[_Allocation, ...]
    start: _State
    stop: int = -1
    scanned: int = 0
    state: _State | None = None


# file -> the scans of its functions, for one version of its source only (a scan keeps the
# tree alive: an edited file's old trees are dropped), the files most recently used last
_SCANS: OrderedDict[str, tuple[bytes, dict[tuple[object, ...], _FunctionScan]]] = OrderedDict()
_SCANNED_FILES = 64


def _host_scope(
    ctx: HostContext,
    detection: Detection,
    fn: Node,
    stop: int,
    argv: list[str],
    view: SourceView | None,
) -> None:
    """Host values, types and allocations visible at byte ``stop`` of host function ``fn``
    (its callers' arguments, its declarations, its allocations): what
    :func:`_scan_function` and :func:`_allocations` record, from the function's
    :class:`_FunctionScan`."""
    key = (
        fn.start_byte,
        fn.end_byte,
        tuple(argv),
        tuple(sorted(ctx.host_template.items())),
        tuple(sorted(ctx.fixed.items())),
        tuple(sorted(ctx.texts.items())),
        tuple(sorted(ctx.device.items())),
    )
    source, scans = _SCANS.pop(detection.file, (detection.source, {}))
    if source is not detection.source:
        scans = {}
    _SCANS[detection.file] = (detection.source, scans)
    if len(_SCANS) > _SCANNED_FILES:
        _SCANS.popitem(last=False)
    scan = scans.get(key)
    program = _Program(detection.file, view)
    _SCANNING.append(program)
    try:
        if scan is None or not all(stamps == sibling_stamps(p, view) for p, stamps in scan.seen):
            looked: list[str] = []
            _bind_callers(fn, detection, ctx, argv, 0, view, looked)
            _declare_params(fn, ctx)
            fn_text = compiled_text(fn)
            scan = _FunctionScan(
                _siblings_seen(looked, view),
                fn_text,
                host_statements(fn, fn.end_byte),
                _allocation_sites(fn_text),
                _state(ctx),
            )
            scans[key] = scan
        if scan.state is None or stop < scan.stop:
            scan.scanned, scan.state = 0, scan.start
        scan.state.restore(ctx)
        statements, i = scan.statements, scan.scanned
        while i < len(statements) and statement_at(statements[i][0]) < stop:
            _scan_statement(*statements[i], fn, ctx, argv)
            i += 1
        scan.scanned, scan.stop, scan.state = i, stop, _state(ctx)
    finally:
        _SCANNING.pop()
    if program.looked:  # callees read from sibling files: a change there redoes the scan
        scan.seen = _siblings_seen([p for p, _s in scan.seen] + program.looked, view)
    _options(scan.fn_text, ctx, argv)
    _record_allocations(scan.allocations, ctx, argv)


_INDEX_TERM = re.compile(r"(blockIdx|blockDim|threadIdx)\.([xyz])")
_CASTS_SPACES = re.compile(r"\s+|\((?:unsigned\s*)?(?:int|long|size_t|unsigned|int64_t)\)")
_INDEX_PARTS = {"blockIdx", "blockDim", "threadIdx"}
_COMPARISON = re.compile(r"([A-Za-z_]\w*)\s*(<=|>=|<|>)\s*([A-Za-z_]\w*|\d+)")


def _global_index(value: str) -> str | None:
    """The dimension of a global thread index ``blockIdx.x * blockDim.x + threadIdx.x`` (in
    any order, with casts), else None."""
    flat = _CASTS_SPACES.sub("", value).replace("(", "").replace(")", "")
    terms = _INDEX_TERM.findall(flat)
    dims = {d for _, d in terms}
    if len(terms) != 3 or len(dims) != 1 or {t for t, _ in terms} != _INDEX_PARTS:
        return None
    rest = _INDEX_TERM.sub("", flat)
    return dims.pop() if rest in ("*+", "+*") else None


def guard_bounds(kernel: Kernel, ctx: HostContext) -> dict[str, float]:
    """The known bounds of a kernel's bounds checks by dimension: ``int i = blockIdx.x *
    blockDim.x + threadIdx.x; if (i < n)`` with ``n`` known -> {"x": n}. A launch the source
    does not give is assumed to cover them exactly (every assumed thread does a thread's
    work inside the guard)."""
    body = kernel.body
    if body is None or kernel.is_offload:
        return {}
    index: dict[str, str] = {}
    for decl in descendants_of_type(body, "init_declarator", stop=body.end_byte):
        name = decl.child_by_field_name("declarator")
        value = decl.child_by_field_name("value")
        if name is not None and value is not None and name.type == "identifier":
            d = _global_index(text(value))
            if d is not None:
                index.setdefault(text(name), d)
    bounds: dict[str, float] = {}
    for stmt in descendants_of_type(body, "if_statement", stop=body.end_byte):
        cond = stmt.child_by_field_name("condition")
        for m in _COMPARISON.finditer(text(cond) if cond is not None else ""):
            left, op, right = m.groups()
            if left not in index and right in index:
                left, right = right, left
                op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[op]
            if left not in index or op not in ("<", ">=") or index[left] in bounds:
                continue
            v = ctx.get(right) if not right.isdigit() else float(right)
            if v is not None and v > 0:
                bounds[index[left]] = v
    return bounds


def _dim(ctx: HostContext, expr: str, argv: list[str]) -> Dim3 | None:
    """A launch dimension; a name (``grid``, ``dim3(grid)``) is followed to its ``dim3`` text
    (the environment gives numbers, which would keep only a ``dim3``'s ``x``)."""
    for _ in range(4):
        expr = expr.strip()
        m = re.fullmatch(r"(?:dim3\s*)?\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*)", expr)
        name = m and (m.group(1) or m.group(2))
        if not name or name in ctx.fixed:
            break
        if name not in ctx.texts:
            expr = _dim3_components(ctx, name) or expr
            break
        expr = ctx.texts[name]
    return evaluate_dim3(ctx.host_text(expr, argv), _Env(ctx), ctx.functions)


def _dim3_components(ctx: HostContext, name: str) -> str | None:
    """``dim3(name.x, name.y, name.z)`` when the scope knows ``name.x`` (a global ``dim3
    grid;`` whose fields ``main`` sets), a further component it does not know 1 as a
    ``dim3``'s default; None when it does not know x (set at run time, or never)."""
    parts = [ctx.texts.get(f"{name}.{c}") for c in "xyz"]
    if parts[0] is None:
        return None
    return f"dim3({', '.join(p or '1' for p in parts)})"


# a name, with the fields it reads (``nthreads.x``: a dim3's component set on its own)
_NAME = re.compile(r"(?<![\w.:>])([A-Za-z_](?:\w|::)*(?:\.[A-Za-z_]\w*)*)\s*(\()?")


def _unknowns(ctx: HostContext, expr: str, depth: int = 0) -> set[str]:
    """The host names ``expr`` needs that have no value, through the texts of the names it
    reads (a called function's name is not one)."""
    out: set[str] = set()
    for m in _NAME.finditer(expr):
        name = m.group(1)
        if m.group(2):
            if "." not in name:
                continue  # a function's name
            name += "()"  # a method's result (``v.size()``)
        if name in _NOT_VALUES or ctx.value(name) is not None:
            continue
        t = ctx.texts.get(name)
        if t is None or depth > 3 or _OPAQUE.search(t):
            out.add(name)  # (``v.size()``, ``p->n``, ``a[0]``: the name is the unknown)
        else:
            inner = _unknowns(ctx, t, depth + 1)
            out |= inner if inner else {name}
    return out


_OPAQUE = re.compile(r"[.\[]\s*[A-Za-z_\]]|->")
_NOT_VALUES = frozenset({"dim3", "sizeof", "int", "unsigned", "long", "size_t", "float", "double"})


def _solve_size(ctx: HostContext, expr: str, given: Dim3, argv: list[str]) -> None:
    """A launch dimension the caller gives (``eval``'s measured launch) whose expression
    holds one host value nothing determines (``<<<n, 1>>>`` with ``n`` computed at run time;
    ``(n + 255) / 256``): the values giving this dimension, found by bisection (the
    expression rising with the value), and of those the roundest; with several, each
    component's one (``dim3 grid(w / 16, h / 16)``: w and h)."""
    for _ in range(4):  # a dim3 variable: its components' texts
        name = expr.strip()
        if not NAME.fullmatch(name) or name in ctx.fixed:
            break
        components = _dim3_components(ctx, name)
        if components is not None:
            expr = components
            break
        follow = ctx.texts.get(name, "").strip()
        if not re.fullmatch(r"dim3\s*[({].*|\{.*\}|[A-Za-z_]\w*", follow, re.S):
            break  # (a value's own text: the name is what is solved for)
        expr = follow
    if _dim(ctx, expr, argv) is not None:
        return
    unknown = _unknowns(ctx, ctx.host_text(expr, argv))
    if len(unknown) == 1:
        _bisect(ctx, unknown.pop(), lambda: _dim(ctx, expr, argv), given)
        return
    # several: each component of a dim3 may lack one of them (``dim3 grid(w / 16, h / 16)``)
    m = re.fullmatch(r"dim3\s*[({](.*)[)}]", ctx.host_text(expr, argv).strip(), re.S)
    parts = split_args(m.group(1)) if m else []
    for part, size in zip(parts, given, strict=False) if len(parts) <= 3 else ():
        unknown = _unknowns(ctx, part)
        if len(unknown) == 1:
            _bisect(ctx, unknown.pop(), functools.partial(ctx.eval_value, part), size)


def _bisect(
    ctx: HostContext,
    name: str,
    value: Callable[[], Dim3 | int | float | None],
    given: Dim3 | int,
) -> None:
    """Set ``name`` to the value for which ``value()`` (rising with it) is ``given``, found
    by bisection, and of the values giving it the roundest; nothing when none does."""

    def size(x: int) -> Dim3 | int | float | None:
        ctx.fixed[name] = x
        ctx._cache.clear()
        return value()

    def last(below: bool) -> int:
        """The largest x whose size is below ``given`` (``below``) or at most ``given``."""
        lo, hi = 0, 1 << 31
        while lo < hi:
            mid = (lo + hi + 1) // 2
            d = size(mid)
            if d is not None and (d < given if below else d <= given):  # type: ignore[operator]
                lo = mid
            else:
                hi = mid - 1
        return lo

    first, top = last(True) + 1, last(False)
    found = first <= top < 1 << 31 and size(first) == given  # (capped: nothing implied)
    del ctx.fixed[name]
    if found:
        # every value in [first, top] gives this launch: the roundest one (most trailing
        # zero bits; sizes are usually powers of two or multiples of the block)
        step = 1 << 31
        while step > 1 and -(-first // step) * step > top:
            step //= 2
        ctx.texts[name] = str(-(-first // step) * step)
        ctx.origin.setdefault(name, "launch")
    ctx._cache.clear()


# LLVM's OpenMP offload runtime on NVIDIA GPUs launches ceil(iterations / threads) teams for
# a work-shared loop without ``num_teams``, at most this many (``GV_Default_Num_Teams`` of
# ``llvm/Frontend/OpenMP/OMPGridValues.h``): a launch of exactly this many teams says only
# that the loop has at least teams x threads iterations
OMP_DEFAULT_TEAMS = 3200


def _solve_iterations(
    kernel: Kernel, ctx: HostContext, block: Dim3, grid: Dim3, argv: list[str]
) -> None:
    """The host value an offloaded loop's size lacks, from the launch ``eval`` gives (as
    ``_solve_size`` for a CUDA launch): LLVM's runtime launches ceil(iterations / threads)
    teams for a combined work-shared loop. Not from teams ``num_teams`` fixes (they need
    not follow the loop) nor at the 3200-team limit (the loop may be any longer)."""
    if kernel.clause("num_teams") or kernel.clause("num_gangs"):
        return
    first = kernel.directive.split("|")[0]
    combined = "distribute parallel for" in first or "teams loop" in first
    if not combined or grid[0] >= OMP_DEFAULT_TEAMS or kernel.body is None:
        return
    collapse = kernel.clause("collapse")
    depth = evaluate(collapse[0].items[0], {}) if collapse and collapse[0].items else 1
    extents: list[str] = []
    node: Node | None = kernel.body
    for _ in range(int(depth or 1)):
        while (
            node is not None and node.type == "compound_statement" and node.named_child_count == 1
        ):
            node = node.named_children[0]
        hdr = loop_header(node) if node is not None and node.type == "for_statement" else None
        if hdr is None or hdr.bound is None or hdr.step is not None or hdr.step_op != "+":
            return
        start = text(hdr.start) if hdr.start is not None else "0"
        if hdr.bound_op == "<":
            extents.append(f"(({text(hdr.bound)}) - ({start}))")
        elif hdr.bound_op == "<=":
            extents.append(f"(({text(hdr.bound)}) - ({start}) + 1)")
        else:
            return
        node = node.child_by_field_name("body") if node is not None else None
    threads = block[0]
    _solve_size(ctx, f"({' * '.join(extents)} + {threads} - 1) / {threads}", grid, argv)


def _taken_launch(
    sites: tuple[LaunchSite, ...],
    unit: Unit,
    ctx: HostContext,
    argv: list[str],
    view: SourceView | None,
) -> LaunchSite | None:
    """The first launch the host values do not rule out: of ``if (block_size == 16)
    k<16><<<...>>>; else k<32><<<...>>>;`` with ``block_size = 32``, the second."""
    for site, call, fn, probe in _probed_sites(sites, unit, ctx, argv, view):
        if _branch_taken(call, fn, probe, argv) is not False:
            return site
    return None


def _probed_sites(
    sites: Iterable[LaunchSite],
    unit: Unit,
    ctx: HostContext,
    argv: list[str],
    view: SourceView | None,
) -> Iterator[tuple[LaunchSite, Node, Node, HostContext]]:
    """Each launch of ``sites`` in ``unit``'s file with its call, the function around it and
    the host values there (a context of its own, with ``ctx``'s user-given values)."""
    for site in sites:
        if site.file != unit.detection.file:
            continue
        call = unit.root.descendant_for_byte_range(site.span.start_byte, site.span.end_byte)
        fn = enclosing_function(call) if call is not None else None
        if call is None or fn is None:
            continue
        probe = _program_context(unit.detection, argv, dict(ctx.fixed), ctx.device)
        _host_scope(probe, unit.detection, fn, site.span.start_byte, argv, view)
        yield site, call, fn, probe


def _sized_launch(
    sites: tuple[LaunchSite, ...],
    unit: Unit,
    ctx: HostContext,
    argv: list[str],
    view: SourceView | None,
    block: Dim3,
    grid: Dim3,
) -> LaunchSite | None:
    """The first launch whose host values size it as given (a profiled launch's ``block``
    and ``grid``): of a kernel launched once per face of a box, each face's sizes and
    arguments, the face that was measured; None when none does or one is sized as given
    without its host values (:func:`_pick_launch` took it)."""
    if any(s.block_value == block and s.grid_value == grid for s in sites):
        return None
    for site, _call, _fn, probe in _probed_sites(sites[:_SIZED_TRIED], unit, ctx, argv, view):
        if _dim(probe, site.block, argv) == block and _dim(probe, site.grid, argv) == grid:
            return site
    return None


_SIZED_TRIED = 8  # launch sites of one kernel sized in their scope to find a profiled one


def _pick_launch(
    sites: tuple[LaunchSite, ...], block: Dim3 | None, grid: Dim3 | None
) -> LaunchSite | None:
    if not sites:
        return None
    for s in sites:
        if block is not None and s.block_value == block and (grid is None or s.grid_value == grid):
            return s
    for s in sites:
        if block is not None and s.block_value == block:
            return s
    return sites[0]


def _map_extents(kernel: Kernel, detection: Detection, ctx: HostContext, fn: Node | None) -> None:
    """OpenMP/OpenACC ``map(to: a[0:n])`` sections (of the region, of the data regions
    around it and of the standalone data directives before it in its function ``fn``, if
    it is in the region's file, but for updates: ``target update to(u[0:nx])`` copies one
    row of u) -> buffer extents, in elements (rows of a pointer to arrays multiplied out:
    :func:`_section_rows`). A data region elsewhere (around a call in
    ``main``) names its own scope's arrays and sizes: it is not read in this one. A mapped
    section is the device's copy: it sizes the buffer over the host allocation a caller
    made (the largest section of a name counts)."""
    mapped: dict[str, float] = {}
    clauses = list(kernel.clauses)
    start, end = kernel.span.start_byte, kernel.span.end_byte
    for region in detection.data_regions:
        if region.file != kernel.file or "update" in region.directive.split():
            continue  # (an update copies part of a mapped buffer: it does not size it)
        if region.body is not None:
            inside = region.body.start_byte <= start and end <= region.body.end_byte
        else:
            inside = fn is not None and fn.start_byte <= region.span.start_byte < start
        if inside:
            clauses.extend(region.clauses)
    for c in clauses:
        if c.name not in ("map", "copy", "copyin", "copyout", "create", "present", "to", "from"):
            continue
        for item in c.items:
            m = re.fullmatch(SECTION_START + r"([^\]]*)\](.*)", item)
            if not m:
                continue
            name = m.group(1)
            lo, colon, length = m.group(2).partition(":")
            if not colon:
                continue
            n = ctx.eval_text(length.strip()) if length.strip() else None
            if n is None or n <= 0:
                continue
            # a[0:n][0:m]: more sections multiply
            sections = re.findall(r"\[[^\]:]*:([^\]]*)\]", m.group(3))
            for extra in sections:
                k = ctx.eval_text(extra)
                if k:
                    n *= k
            n *= _section_rows(kernel, fn, name, 1 + len(sections), ctx)
            mapped[name] = max(mapped.get(name, 0.0), n)
    ctx.extents.update(mapped)


def _section_rows(
    kernel: Kernel, fn: Node | None, name: str, sections: int, ctx: HostContext
) -> float:
    """The elements in each item of a map section of ``name`` that its ``sections``
    subscripts leave whole: a section counts the rows of a pointer to arrays or of a 2-D
    array, not their elements (``map(to: a[0:n])`` of ``float (*a)[M]`` or ``float
    a[N][M]`` is n rows of M floats). 1 when ``name`` has no array levels below them
    (``float *a``, ``float **a``) or its declaration is not in view."""
    levels = _declared_levels(kernel, fn, name)
    if levels is None or len(levels) <= sections:
        return 1.0
    rows = 1.0
    for size in levels[: len(levels) - sections]:
        k = ctx.eval_text(size) if size else None
        if k is None or k <= 0:
            return 1.0  # a pointer level, or a dimension of unknown size
        rows *= k
    return rows


def _declared_levels(kernel: Kernel, fn: Node | None, name: str) -> list[str | None] | None:
    """The pointer and array levels of the declarator of ``name``, outermost first, an array
    level as its size's text and a pointer level as None (``float (*a)[M]``: ``M``, then the
    pointer; ``float a[N][M]``: ``M``, then ``N``): the last declaration before ``kernel``'s
    region in its function ``fn`` (or the one around it), else in the file's scope; None
    when there is none."""
    start = kernel.span.start_byte
    fn = fn or enclosing_function(kernel.node)
    root = _root(kernel.node) if kernel.node is not None else None
    own = re.compile(r"\(\s*\*\s*" + re.escape(name) + r"\s*\)\s*((?:\[[^\]]*\]\s*)+)")
    for scope in [s for s in (fn, root) if s is not None]:
        found: tuple[int, list[str | None]] | None = None
        stack = [scope]
        while stack:
            n = stack.pop()
            if n.start_byte >= start or (n.type == "function_definition" and n is not fn):
                continue  # (after the region; another function's locals)
            levels: list[str | None] | None = None
            if n.type in ("declaration", "parameter_declaration"):
                for d in n.children_by_field_name("declarator"):
                    if declared_name(d) == name:
                        levels = declarator_levels(d)
            elif n.type == "expression_statement" and (m := own.search(text(n))):
                # ``float (*a)[M] = ...`` parsed as a cast ``float(*a)`` subscripted
                levels = [*re.findall(r"\[([^\]]*)\]", m.group(1))[::-1], None]
            else:
                stack.extend(n.named_children)
            if levels is not None and (found is None or n.start_byte > found[0]):
                found = (n.start_byte, levels)
        if found is not None:
            return found[1]
    return None
