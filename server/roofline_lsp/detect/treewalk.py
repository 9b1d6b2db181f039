"""Small tree-sitter helpers of kernel detection: declared names, enclosing functions,
qualifiers, calls and the local declarations before a point.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace

from tree_sitter import Node

from roofline_lsp.detect.textscan import kernel_ref
from roofline_lsp.model.kernel import Function, Kernel, Macro
from roofline_lsp.syntax.cexpr import Step, TextFunction, inner_text
from roofline_lsp.syntax.expr import (
    NAME,
    comma_parts,
    condition_expr,
    nested_definition,
    test_target,
    text,
)
from roofline_lsp.syntax.functions import function_declarator
from roofline_lsp.syntax.parsing import captures


def qualified_declarator_name(declarator: Node | None) -> str | None:
    """The name declared by a (function) declarator: identifier, A::f, operator, template."""
    while declarator is not None:
        t = declarator.type
        if t in ("identifier", "field_identifier", "qualified_identifier", "destructor_name"):
            return text(declarator)
        if t == "template_function":
            name = declarator.child_by_field_name("name")
            return text(name) if name else None
        if t == "operator_name":
            return text(declarator)
        nxt = declarator.child_by_field_name("declarator")
        if nxt is None:
            named = [c for c in declarator.named_children if "identifier" in c.type]
            return text(named[0]) if named else None
        declarator = nxt
    return None


def _parameter_list(fn: Node) -> Node | None:
    d = function_declarator(fn)
    return d.child_by_field_name("parameters") if d is not None else None


def parameter_declarations(fn: Node) -> list[Node]:
    """The parameter declarations of a function definition (a pack or ``...`` left out)."""
    plist = _parameter_list(fn)
    return [
        p
        for p in (plist.named_children if plist is not None else [])
        if p.type in ("parameter_declaration", "optional_parameter_declaration")
    ]


def is_variadic(fn: Node) -> bool:
    """Whether a function definition ends in a parameter pack or C's ``...``."""
    plist = _parameter_list(fn)
    return plist is not None and any(
        p.type in ("variadic_parameter_declaration", "variadic_parameter", "...")
        for p in plist.children
    )


def call_pattern(name: str) -> re.Pattern[bytes]:
    """The text of a call of function ``name`` up to its ``(``, template arguments allowed
    (``f(``, ``f<T>(``): what :func:`call_sites` looks for and files are screened with."""
    return re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*(?:<[^;(){}]*>)?\s*\(")


def call_sites(
    source: bytes,
    root: Node,
    name: str,
    within: Node | None = None,
    limit: int = 8,
    callee: Node | None = None,
) -> list[Node]:
    """Calls of function ``name`` in a file (``source``, parsed as ``root``; found textually,
    confirmed on the tree), or in the node ``within``; the first ``limit``. Given the
    ``callee``'s definition, only the calls that can be of it (:func:`may_call`)."""
    start, end = (within.start_byte, within.end_byte) if within is not None else (0, len(source))
    calls: list[Node] = []
    for m in call_pattern(name).finditer(source, start, end):
        node = root.descendant_for_byte_range(m.start(), m.start() + len(name))
        while node is not None and node.type not in ("call_expression", "function_declarator"):
            if node.type in ("compound_statement", "translation_unit", "declaration"):
                node = None
                break
            node = node.parent
        fn = node.child_by_field_name("function") if node is not None else None
        # (not a call whose argument mentions it: ``printf("f()")``)
        called = node is not None and node.type == "call_expression" and _covers(fn, m.start())
        if called and node is not None and (callee is None or may_call(node, callee)):
            calls.append(node)
        if len(calls) >= limit:
            break
    return calls


def _covers(node: Node | None, at: int) -> bool:
    return node is not None and node.start_byte <= at < node.end_byte


def may_call(call: Node, fn: Node) -> bool:
    """Whether ``call`` (a call site :func:`call_sites` found by ``fn``'s name) can call host
    function ``fn``: not from a ``__device__``/``__global__`` function (device code cannot
    call host code), and not through a qualifier naming another scope (``cg::reduce(...)``
    is not a call of a file's own ``reduce``: only a namespace or class ``fn`` sits in, or
    the global ``::``, may qualify it)."""
    caller = enclosing_function(call)
    if caller is not None and caller != fn:
        quals = function_qualifiers(caller)
        if ("__device__" in quals or "__global__" in quals) and "__host__" not in quals:
            return False
    called = call.child_by_field_name("function")
    qualifier = ""  # the innermost scope named: ``b`` of ``a::b::f<T>``
    while called is not None and called.type in ("qualified_identifier", "template_function"):
        scope = called.child_by_field_name("scope")
        if scope is not None:
            qualifier = text(scope).split("<", 1)[0]
        called = called.child_by_field_name("name")
    if not qualifier:
        return True  # ``f(...)``, ``::f(...)``
    owners: set[str] = set()
    decl = function_declarator(fn)
    declared = qualified_declarator_name(decl.child_by_field_name("declarator") if decl else None)
    if declared and "::" in declared:
        owners.update(part.split("<", 1)[0] for part in declared.split("::")[:-1])
    node = fn.parent
    while node is not None:
        if node.type in ("namespace_definition", "class_specifier", "struct_specifier"):
            name = node.child_by_field_name("name")
            if name is not None:
                owners.update(text(name).split("::"))
        node = node.parent
    return qualifier in owners


def unqualified_name(name: str) -> str:
    return name.rsplit("::", 1)[-1]


def enclosing_function(node: Node | None) -> Node | None:
    """The ``function_definition`` around ``node``, if any (not a loop-header macro's call
    the parser took for one inside a block: :func:`nested_definition`)."""
    p = node.parent if node is not None else None
    while p is not None and (p.type != "function_definition" or nested_definition(p)):
        p = p.parent
    return p


def kernel_function(kernel: Kernel) -> Node | None:
    """The function a kernel is: a CUDA kernel's own definition, or the function around an
    offload region."""
    if kernel.function is not None:
        return kernel.function
    anchor = kernel.node if kernel.node is not None else kernel.body
    if anchor is not None and anchor.type == "function_definition":
        return anchor
    return enclosing_function(anchor)


def function_qualifiers(fn: Node) -> tuple[str, ...]:
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
            quals.append(text(c))
        if c.type in ("function_declarator", "compound_statement"):
            break
    return tuple(quals)


def local_values(body: Node, stop: int) -> dict[str, str]:
    """The values of the local declarations in ``body`` before byte ``stop``."""
    env: dict[str, str] = {}
    for decl in descendants_of_type(body, "declaration", stop=stop):
        for d in decl.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                name = d.child_by_field_name("declarator")
                value = d.child_by_field_name("value")
                if name is not None and name.type == "identifier" and value is not None:
                    v = text(value)
                    if value.type in ("argument_list", "initializer_list"):
                        v = "dim3(" + inner_text(v) + ")"
                    env[text(name)] = v
            elif d.type == "function_declarator":  # `dim3 grid(n / 256)` (vexing parse)
                name = d.child_by_field_name("declarator")
                params = d.child_by_field_name("parameters")
                if name is not None and params is not None:
                    env[text(name)] = "dim3(" + inner_text(text(params)) + ")"
    return env


# (node id, type) -> (the node, kept so that its id is not reused; its descendants of the
# type by start): a function with many launches is walked once, not once per launch
_DESCENDANTS: dict[tuple[int, str], tuple[Node, list[Node], list[int]]] = {}
_ADDRESS_OF = re.compile(r"^(?:\(\s*(?:const\s+)?void\s*\*\s*\)\s*)?&\s*(.+)$", re.S)
_VOID_CAST = re.compile(r"(?:reinterpret|static)_cast\s*<[^<>]*>\s*\((.*)\)", re.S)


def call_arguments(call: Node) -> list[str]:
    """The texts of a call's arguments, a device lambda whole: the grammar reads ``[=]
    __device__(int i) { ... }`` as two nodes, the capture and parameters, then the body."""
    args_node = call.child_by_field_name("arguments")
    out: list[str] = []
    for a in (text(n) for n in (args_node.named_children if args_node else [])):
        if a.startswith("{") and out and out[-1].startswith("[") and out[-1].endswith(")"):
            out[-1] = f"{out[-1]} {a}"
        else:
            out.append(a)
    return out


def launch_config_field(call: Node, config: str, field: str) -> str | None:
    """The value ``field`` of launch configuration ``config`` (a ``cudaLaunchConfig_t``, a
    graph's ``cudaKernelNodeParams``; ``field`` may be a path, ``kernel.gridDim``) has at
    ``call`` in its function: its last assignment before it (``config.gridDim =
    dim3(n / 256);``, ``cfg->blockDim = 256;``), else the assignments of its components
    (``p.gridDim.x = p.gridDim.y = 1;``: ``dim3(1, 1, 1)``, a component not assigned 1),
    else a designated initializer (``cudaLaunchConfig_t config = {.gridDim = g, .blockDim =
    b};``); None when none of these."""
    if not NAME.fullmatch(config.strip()):
        return None
    fn = enclosing_function(call)
    body = fn.child_by_field_name("body") if fn is not None else None
    if body is None:
        return None
    before = (body.text or b"")[: call.start_byte - body.start_byte].decode("utf-8", "replace")
    name = re.escape(config.strip())
    key = r"\s*\.\s*".join(re.escape(part) for part in field.split("."))
    whole = _last_assigned(before, rf"\b{name}\s*(?:\.|->)\s*{key}")
    if whole is not None:
        return whole
    parts = [_last_assigned(before, rf"\b{name}\s*(?:\.|->)\s*{key}\s*\.\s*{c}") for c in "xyz"]
    if any(p is not None for p in parts):
        return f"dim3({', '.join(p or '1' for p in parts)})"
    init = re.search(rf"\b{name}\s*=\s*\{{([^{{}}]*)\}}", before)
    given = re.search(rf"\.{key}\s*=\s*([^,]+)", init.group(1)) if init is not None else None
    return given.group(1).strip() if given is not None else None


def _last_assigned(code: str, target: str) -> str | None:
    """The value the last assignment to ``target`` (a pattern) in ``code`` gives it: the
    last part of a chain (``a = b = 1``: 1); None when nothing assigns it."""
    assigned = list(re.finditer(rf"{target}\s*=(?!=)\s*([^;]+);", code))
    if not assigned:
        return None
    return re.split(r"(?<![=!<>])=(?!=)", assigned[-1].group(1))[-1].strip()


def argument_array(call: Node, array: str) -> tuple[str, ...]:
    """The kernel arguments of ``cudaLaunchKernel(k, grid, block, args, ...)``: the items of
    ``void *args[] = {&n, (void *)&x}`` declared before the call in its function, each
    without its ``&`` (so they read like the arguments of ``k<<<grid, block>>>(n, x)``).
    Empty when the array is not a local initialised that way."""
    array = array.strip()
    if not NAME.fullmatch(array):
        return ()
    fn = enclosing_function(call)
    body = fn.child_by_field_name("body") if fn is not None else None
    if body is None:
        return ()
    items: tuple[str, ...] = ()
    for decl in descendants_of_type(body, "declaration", stop=call.start_byte):
        for d in decl.children_by_field_name("declarator"):
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            while target is not None and target.type == "pointer_declarator":
                target = target.child_by_field_name("declarator")
            if target is None or value is None or value.type != "initializer_list":
                continue
            if target.type != "array_declarator" or qualified_declarator_name(target) != array:
                continue
            found = []
            for item in value.named_children:
                if item.type == "comment":
                    continue
                item_text = text(item).strip()
                cast = _VOID_CAST.fullmatch(item_text)  # reinterpret_cast<void *>(&n)
                if cast is not None:
                    item_text = cast.group(1).strip()
                m = _ADDRESS_OF.match(item_text)
                found.append(m.group(1).strip() if m else item_text)
            items = tuple(found)
    return items


def descendants_of_type(node: Node, type_: str, stop: int) -> list[Node]:
    """``node`` and its descendants of type ``type_`` that start before byte ``stop``, in
    source order."""
    hit = _DESCENDANTS.get((node.id, type_))
    if hit is None or hit[0] != node:
        out: list[Node] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == type_:
                out.append(n)
            stack.extend(reversed(n.named_children))
        out.sort(key=lambda n: n.start_byte)
        hit = (node, out, [n.start_byte for n in out])
        if len(_DESCENDANTS) >= 16:
            _DESCENDANTS.pop(next(iter(_DESCENDANTS)))
        _DESCENDANTS[(node.id, type_)] = hit
    return hit[1][: bisect.bisect_left(hit[2], stop)]


def start_line(node: Node) -> int:
    return node.start_point.row + 1


def inside_error(node: Node) -> bool:
    p = node.parent
    while p is not None:
        if p.type == "ERROR":
            return True
        p = p.parent
    return False


def called_names(node: Node) -> tuple[str, ...]:
    return tuple(
        unqualified_name(kernel_ref(text(n)))
        for n in captures("cuda-calls", node).get("callee", [])
    )


_INTEGER_TYPE = re.compile(
    r"\b(int|long|short|char|unsigned|signed|size_t|ptrdiff_t|u?int(8|16|32|64)_t|uint|bool)\b"
)
_FLOAT_TYPE = re.compile(r"\b(float|double)\b")


def _numeric_kind(type_text: str) -> bool | None:
    """True for an integer type, False for a floating one, None otherwise (a template
    parameter, a pointer, a class)."""
    if "*" in type_text or "[" in type_text:
        return None
    if _FLOAT_TYPE.search(type_text):
        return False
    if _INTEGER_TYPE.search(type_text):
        return True
    return None


def returned_expression(body: Node) -> Node | None:
    """The expression a function body made of one ``return expr;`` returns, else None."""
    stmts = [c for c in body.named_children if c.type != "comment"]
    if len(stmts) != 1 or stmts[0].type != "return_statement" or not stmts[0].named_children:
        return None
    return stmts[0].named_children[0]


def text_function(fn: Node) -> TextFunction | None:
    """A function definition whose body only returns an expression of its parameters
    (``inline int div_up(int a, int b) { return (a + b - 1) / b; }``), or a small one of
    local numbers, ifs, loops and returns (``nextPow2``), as a :class:`TextFunction`; None
    for any other function."""
    body = fn.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        return None
    rtype = fn.child_by_field_name("type")
    result = _numeric_kind(text(rtype)) if rtype is not None else None
    returned = returned_expression(body)
    if returned is None:
        if result is None:
            return None  # not a function returning a number (a kernel, a void helper)
        small = effect_function(fn)
        return replace(small, integer_result=result) if small is not None else None
    signature = _signature(fn)
    if signature is None:
        return None
    params, kinds = signature
    return TextFunction(params, text(returned), kinds, result)


def effect_function(fn: Node) -> TextFunction | None:
    """A small host function of any result (``void getLevels(int n, int *levels)``) as
    :class:`TextFunction` steps, run for what it leaves behind its pointer parameters
    (``*levels = i``); None when it is larger or has a statement of another form."""
    body = fn.child_by_field_name("body")
    if body is None or body.type != "compound_statement":
        return None
    if body.end_byte - body.start_byte > _MAX_FUNCTION_BYTES:
        return None
    steps = _steps(body, {}, [0])
    signature = _signature(fn)
    if steps is None or signature is None:
        return None
    params, kinds = signature
    return TextFunction(params, "", kinds, None, steps)


def _signature(fn: Node) -> tuple[tuple[str, ...], tuple[bool | None, ...]] | None:
    """A function's parameter names and the integer kind of each (None: a pointer, an
    array, a class); None for a variadic function."""
    fdecl = function_declarator(fn)
    if fdecl is None:
        return None
    plist = fdecl.child_by_field_name("parameters")
    params: list[str] = []
    kinds: list[bool | None] = []
    for p in plist.named_children if plist is not None else []:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            if p.type == "comment":
                continue
            return None  # variadic
        name = qualified_declarator_name(p.child_by_field_name("declarator"))
        if not name:
            return None
        ptype = p.child_by_field_name("type")
        decl = p.child_by_field_name("declarator")
        ref = decl is not None and decl.type in ("pointer_declarator", "array_declarator")
        params.append(name)
        kinds.append(None if ref or ptype is None else _numeric_kind(text(ptype)))
    return tuple(params), tuple(kinds)


_MAX_FUNCTION_STATEMENTS = 64  # a host helper with more is not run
_MAX_FUNCTION_BYTES = 4096


def _steps(node: Node, kinds: dict[str, bool | None], count: list[int]) -> tuple[Step, ...] | None:
    """The statements of a small host function as :class:`Step`s (``kinds``: the integer
    kind of each local declared so far); None when one is not of the few forms run (a call
    for its effect, a pointer, a switch, a goto ...)."""
    stmts = node.named_children if node.type == "compound_statement" else [node]
    out: list[Step] = []
    for st in stmts:
        count[0] += 1
        if count[0] > _MAX_FUNCTION_STATEMENTS:
            return None
        t = st.type
        if t == "comment":
            continue
        part: tuple[Step, ...] | None
        if t == "compound_statement":
            part = _steps(st, kinds, count)
        elif t == "declaration":
            part = _declared(st, kinds)
        elif t == "expression_statement":
            e = st.named_children[0] if st.named_children else None
            part = _effect(e, kinds) if e is not None else ()
        elif t == "return_statement":
            part = _returned(st.named_children[0], kinds) if st.named_children else None
        elif t == "if_statement":
            cond = _condition_text(st)
            then = st.child_by_field_name("consequence")
            alt = st.child_by_field_name("alternative")
            if alt is not None and alt.type == "else_clause":
                alt = alt.named_children[0] if alt.named_children else None
            a = _steps(then, kinds, count) if then is not None else None
            b = _steps(alt, kinds, count) if alt is not None else ()
            ok = cond is not None and a is not None and b is not None
            part = (Step("if", expr=cond or "", then=a or (), orelse=b or ()),) if ok else None
        elif t in ("for_statement", "while_statement"):
            part = _loop(st, kinds, count)
        elif t == "break_statement":
            part = (Step("break"),)
        else:
            part = None
        if part is None:
            return None
        out.extend(part)
    return tuple(out)


def _returned(e: Node, kinds: dict[str, bool | None]) -> tuple[Step, ...] | None:
    """``return e;`` (``return ++x;``: the step, then x; ``return x++;``: x)."""
    if e.type == "update_expression":
        arg = e.child_by_field_name("argument")
        if arg is None or arg.type != "identifier":
            return None
        prefix = text(e).lstrip().startswith(("++", "--"))
        step = (_effect(e, kinds) or ()) if prefix else ()
        return (*step, Step("return", expr=text(arg)))
    return (Step("return", expr=text(e)),)


def _condition_text(st: Node) -> str | None:
    cond = condition_expr(st)
    return text(cond) if cond is not None else None


def _loop(st: Node, kinds: dict[str, bool | None], count: list[int]) -> tuple[Step, ...] | None:
    """``while (c) body`` and ``for (init; c; update) body`` as an init and a loop step."""
    body = st.child_by_field_name("body")
    cond: str | None = None
    init: tuple[Step, ...] | None = ()
    update: tuple[Step, ...] | None = ()
    if st.type == "while_statement":
        c = condition_expr(st)
        target = test_target(c)
        if target is not None and c is not None:
            # while (v >>= 1): the step, then the test, before every trip
            init = update = _effect(c, kinds)
            cond = text(target)
        elif c is not None and c.type in ("assignment_expression", "update_expression"):
            return None  # while (k--), while (a[i] = f()): not run
        elif c is not None:
            cond = text(c)
    if st.type == "for_statement":
        c = st.child_by_field_name("condition")
        cond = text(c) if c is not None else None
        i = st.child_by_field_name("initializer")
        if i is not None:
            init = _declared(i, kinds) if i.type == "declaration" else _effect(i, kinds)
        u = st.child_by_field_name("update")
        update = _effect(u, kinds) if u is not None else ()
    inner = _steps(body, kinds, count) if body is not None else None
    if cond is None or init is None or update is None or inner is None:
        return None
    return (*init, Step("loop", expr=cond, then=inner, orelse=update))


def _declared(decl: Node, kinds: dict[str, bool | None]) -> tuple[Step, ...] | None:
    """``int x = e, y;``: numbers only (no pointers, arrays); a type named by one word
    (``auto``, a template parameter, a typedef) keeps the value as computed."""
    ty = decl.child_by_field_name("type")
    kind = _numeric_kind(text(ty)) if ty is not None else None
    if ty is None or (kind is None and not NAME.fullmatch(text(ty))):
        return None
    out: list[Step] = []
    for d in decl.children_by_field_name("declarator"):
        if d.type == "identifier":
            kinds[text(d)] = kind
            continue  # declared, no value yet
        if d.type != "init_declarator":
            return None
        name = d.child_by_field_name("declarator")
        val = d.child_by_field_name("value")
        if name is None or name.type != "identifier" or val is None:
            return None
        kinds[text(name)] = kind
        out.append(Step("set", text(name), "", text(val), kind))
    return tuple(out)


_COMPOUND = {"+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="}


def _effect(e: Node, kinds: dict[str, bool | None]) -> tuple[Step, ...] | None:
    """An expression run for its effect: assignments and ``++``/``--`` of plain names
    (a comma list of them)."""
    if e.type == "comma_expression":
        out: list[Step] = []
        for c in comma_parts(e):
            part = _effect(c, kinds)
            if part is None:
                return None
            out.extend(part)
        return tuple(out)
    if e.type == "update_expression":
        arg = e.child_by_field_name("argument")
        if arg is None or arg.type != "identifier":
            return None
        sign = "+" if "++" in text(e) else "-"
        return (Step("set", text(arg), sign, "1", kinds.get(text(arg))),)
    if e.type == "assignment_expression":
        left = e.child_by_field_name("left")
        right = e.child_by_field_name("right")
        op = e.child_by_field_name("operator")
        if left is None or right is None or op is None:
            return None
        name = pointee_name(left) if left.type != "identifier" else text(left)
        o = op.type
        if name is None or o != "=" and o not in _COMPOUND:
            return None
        return (Step("set", name, "" if o == "=" else o[:-1], text(right), kinds.get(name)),)
    return None


def pointee_name(left: Node) -> str | None:
    """``*p`` or ``p[0]`` of a pointer parameter, as the name ``p[0]`` (what the caller's
    variable passed as ``&x`` receives); None for any other target."""
    arg = left.child_by_field_name("argument")
    if arg is None or arg.type != "identifier":
        return None
    if left.type == "pointer_expression" and text(left).lstrip().startswith("*"):
        return f"{text(arg)}[0]"
    index = left.child_by_field_name("index") or next(
        (c for c in left.named_children if c != arg), None
    )
    if left.type == "subscript_expression" and index is not None:
        return f"{text(arg)}[0]" if text(index).strip("[] ") == "0" else None
    return None


_TEXT_FUNCTIONS: dict[int, tuple[object, object, dict[str, TextFunction]]] = {}


def text_functions(
    functions: dict[str, Function], macros: dict[str, Macro]
) -> dict[str, TextFunction]:
    """The function-like macros and expression-returning functions of a file by name, for
    evaluating launch expressions that call them (cached on the two tables' identity)."""
    key = id(functions)
    hit = _TEXT_FUNCTIONS.get(key)
    if hit is not None and hit[0] is functions and hit[1] is macros:
        return hit[2]
    out: dict[str, TextFunction] = {}
    for m in macros.values():
        if m.params is not None and m.body and all(p.isidentifier() for p in m.params):
            out[m.name] = TextFunction(m.params, m.body)
    for name, f in functions.items():
        tf = text_function(f.node)
        if tf is not None:
            out.setdefault(name, tf)
    _TEXT_FUNCTIONS[key] = (functions, macros, out)
    if len(_TEXT_FUNCTIONS) > 256:
        _TEXT_FUNCTIONS.pop(next(iter(_TEXT_FUNCTIONS)))
    return out
