"""Translation-unit declarations the counter needs: type aliases (``typedef``, ``using``,
``#define REAL double``), struct layouts, their static constants (``static constexpr int n``)
and global variables (``__constant__``, ``__device__`` arrays, textures), read once per
parsed tree.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from roofline_lsp.model.kernel import Macro
from roofline_lsp.syntax.cexpr import evaluate, split_args
from roofline_lsp.syntax.conditionals import branch_taken, defined_before
from roofline_lsp.syntax.datatypes import parse_type
from roofline_lsp.syntax.expr import initializer_length, text, value

_TYPE_WORD = re.compile(
    r"(?:(?:const|unsigned|signed|long|short|struct)\s+)*"
    r"(float|double|half|__half|int|long|short|char|bool|size_t|int64_t|uint64_t|int32_t|"
    r"uint32_t|uint8_t|int8_t|uint16_t|int16_t|unsigned|float[234]|double[234]|int[234]|"
    r"uint[234]|__nv_bfloat16)(?:\s+(?:int|long))?\s*\**"
)


@dataclass
class GlobalVar:
    name: str
    type_text: str
    space: str  # "global" | "constant" | "shared" | "texture"
    elements: float | None


StructTemplate = tuple[tuple[str, ...], dict[str, str]]  # parameter names, static members


@dataclass
class Declarations:
    aliases: dict[str, str] = field(default_factory=dict)
    structs: dict[str, dict[str, str]] = field(default_factory=dict)
    struct_sizes: dict[str, int] = field(default_factory=dict)
    globals: dict[str, GlobalVar] = field(default_factory=dict)
    # ``Type::member`` -> the value text of a static constant member, for a struct and for
    # each alias of one (``typedef Packed<float> x128``: ``x128::size`` with the template's
    # parameters replaced by the alias's arguments and ``sizeof`` of known types resolved)
    static_members: dict[str, str] = field(default_factory=dict)
    # struct template -> its parameter names and static members (value texts)
    struct_templates: dict[str, StructTemplate] = field(default_factory=dict)
    # struct (or struct template) -> its member types (``typedef Scalar ScalarType;``,
    # ``using Ord = L;``): their type texts, in the template's parameters
    member_types: dict[str, dict[str, str]] = field(default_factory=dict)
    # ``typedef unsigned int Row[4096]``: the alias's element count (its element type is
    # in ``aliases``)
    array_aliases: dict[str, float] = field(default_factory=dict)
    # object-like macros, for array sizes (``float a[N]``)
    macro_env: dict[str, str] = field(default_factory=dict)
    # struct -> its array members and their element counts (``float u[1 << 20]``)
    struct_arrays: dict[str, dict[str, float]] = field(default_factory=dict)


_CACHE: OrderedDict[int, tuple[Node, Declarations]] = OrderedDict()


def declarations(root: Node, macros: dict[str, Macro] | None = None) -> Declarations:
    """Declarations of the tree whose root is ``root`` (cached per tree)."""
    key = root.id  # the tree's node: a Node object is made anew each time it is reached
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == root:
        _CACHE.move_to_end(key)
        return hit[1]
    d = Declarations()
    if macros:
        for m in macros.values():
            if m.params is None and m.body and _TYPE_WORD.fullmatch(m.body.strip()):
                d.aliases[m.name] = m.body.strip()
            elif m.params is None and m.body:
                d.macro_env[m.name] = m.body
    _scan(root, d, 0, _branches(root, macros or {}))
    _alias_statics(d)
    _CACHE[key] = (root, d)
    if len(_CACHE) > 64:
        _CACHE.popitem(last=False)
    return d


# record types: a union's fields overlap (its size is its largest field's)
_RECORDS = ("struct_specifier", "class_specifier", "union_specifier")


def _branches(root: Node, macros: dict[str, Macro]) -> Callable[[Node], bool | None]:
    """Whether the preprocessor keeps a node of ``root``'s tree, with ``macros`` defined (and
    nothing else: a build's ``-D`` flags are not in the source): ``#ifdef USE_DOUBLE`` /
    ``typedef double real`` / ``#else`` / ``typedef float real`` declares ``real`` a float.
    An include guard (``#ifndef H`` / ``#define H`` around the file) decides nothing: the
    first inclusion is the one read."""
    known = defined_before({}, set(macros))
    guards = {
        text(name)
        for c in root.named_children
        if c.type == "preproc_ifdef"
        and c.children
        and c.children[0].type.endswith("ndef")
        and (name := c.child_by_field_name("name")) is not None
        and len(c.named_children) > 1
        and c.named_children[1].type == "preproc_def"
        and text(c.named_children[1].child_by_field_name("name")) == text(name)
    }

    def defined(name: str, at: int) -> bool | None:
        return None if name in guards else known(name, at)

    values = {m.name: m.body for m in macros.values() if m.params is None and m.body}
    return lambda node: branch_taken(node, defined, values)


def _scan(node: Node, d: Declarations, depth: int, kept: Callable[[Node], bool | None]) -> None:
    if depth > 6:
        return
    for c in node.named_children:
        t = c.type
        if t in ("type_definition", "alias_declaration") and kept(c) is False:
            continue  # an alias on a branch the preprocessor skips
        if t == "type_definition":
            ty = c.child_by_field_name("type")
            for decl in c.children_by_field_name("declarator"):
                name = text(decl).lstrip("*& ")
                if ty is not None and ty.type in _RECORDS:
                    _struct(ty, d, name)
                elif ty is not None and decl.type == "type_identifier":
                    d.aliases[name] = text(ty)
                elif ty is not None and decl.type == "pointer_declarator":
                    d.aliases[_last_ident(decl)] = text(ty) + " *"
                elif ty is not None and decl.type == "array_declarator":
                    sizes, stars, inner = _declarator_chain(decl, d)
                    count = _count(sizes) if "*" not in stars else None
                    if inner is not None and inner.type == "type_identifier" and count:
                        d.aliases[text(inner)] = text(ty)
                        d.array_aliases[text(inner)] = count
        elif t == "alias_declaration":
            name = text(c.child_by_field_name("name"))
            ty = c.child_by_field_name("type")
            if name and ty is not None:
                d.aliases[name] = text(ty)
        elif t in _RECORDS:
            name = text(c.child_by_field_name("name"))
            if name:
                _struct(c, d, name)
        elif t == "declaration":
            ty = c.child_by_field_name("type")
            if ty is not None and ty.type in _RECORDS:
                name = text(ty.child_by_field_name("name"))
                if name:
                    _struct(ty, d, name)
            _global(c, d)
        elif t == "template_declaration" and any(x.type in _RECORDS for x in c.named_children):
            params = c.child_by_field_name("parameters")
            names = tuple(
                text(n)
                for p in (params.named_children if params is not None else [])
                for n in p.named_children
                if n.type in ("type_identifier", "identifier")
            )
            for rec in (x for x in c.named_children if x.type in _RECORDS):
                name = text(rec.child_by_field_name("name"))
                if name:
                    _struct(rec, d, name, names)
        elif t in (
            "namespace_definition",
            "linkage_specification",
            "preproc_if",
            "preproc_ifdef",
            "preproc_elif",
            "preproc_else",
            "declaration_list",
            "template_declaration",
        ):
            body = c.child_by_field_name("body")
            _scan(body if body is not None else c, d, depth + 1, kept)


def _size(array: Node, d: Declarations) -> float | None:
    """The element count of one array declarator (``[N]``, ``[2 * N]``), macros evaluated."""
    size = array.child_by_field_name("size")
    if size is None:
        return None
    v = value(size, lambda _n: None)
    return v if v is not None else evaluate(text(size), d.macro_env)


def _declarator_chain(decl: Node, d: Declarations) -> tuple[list[float | None], str, Node | None]:
    """A chain of array and pointer declarators (``*a[N][4]``): the element count of each
    array level (None where unknown), the levels as ``*``/``[]`` text in order, and the
    declarator the chain names."""
    sizes: list[float | None] = []
    stars = ""
    dn: Node | None = decl
    while dn is not None and dn.type in ("array_declarator", "pointer_declarator"):
        if dn.type == "array_declarator":
            sizes.append(_size(dn, d))
            stars += "[]"
        else:
            stars += "*"
        dn = dn.child_by_field_name("declarator")
    return sizes, stars, dn


def _count(sizes: list[float | None]) -> float | None:
    """The elements of array levels of these sizes; None if one is unknown (or 0)."""
    known = [n for n in sizes if n]
    return math.prod(known) if len(known) == len(sizes) else None


def _last_ident(decl: Node) -> str:
    found = ""
    stack = [decl]
    while stack:
        n = stack.pop()
        if n.type in ("type_identifier", "identifier"):
            found = text(n)
        stack.extend(n.named_children)
    return found


def _struct(node: Node, d: Declarations, name: str, params: tuple[str, ...] = ()) -> None:
    """A struct's fields and size, and its static constant members (a template's, by its
    parameter names ``params``, kept until an alias gives them)."""
    body = node.child_by_field_name("body")
    if body is None:
        return
    fields: dict[str, str] = {}
    statics: dict[str, str] = {}
    types: dict[str, str] = {}
    arrays: dict[str, float] = {}
    size = 0
    for f in body.named_children:
        if f.type in ("type_definition", "alias_declaration"):
            member_type = f.child_by_field_name("type")
            names = (
                [text(f.child_by_field_name("name"))]
                if f.type == "alias_declaration"
                else [text(x) for x in f.children_by_field_name("declarator")
                      if x.type == "type_identifier"]
            )  # fmt: skip
            for member_name in names if member_type is not None else []:
                types[member_name] = text(member_type)
        if f.type != "field_declaration":
            continue
        if any(c.type == "storage_class_specifier" and text(c) == "static" for c in f.children):
            default = f.child_by_field_name("default_value")
            member = f.child_by_field_name("declarator")
            if default is not None and member is not None and member.type == "field_identifier":
                statics[text(member)] = text(default)
            continue  # a static member takes no room in the struct
        ty = text(f.child_by_field_name("type"))
        for decl in f.children_by_field_name("declarator"):
            sizes, levels, dn = _declarator_chain(decl, d)
            # an array of an array alias (``Row rows[2]``) holds both counts; an array
            # level of unknown size counts one element
            count = d.array_aliases.get(ty, 1.0) * math.prod(n or 1 for n in sizes)
            stars = levels.replace("[]", "")
            fname = text(dn)
            if not fname:
                continue
            fields[fname] = ty + " " + stars
            if sizes and all(sizes):
                arrays[fname] = count
            dt = parse_type(ty + stars, d.aliases)
            fsize = int((8 if dt.pointer else dt.size) * count)
            size = max(size, fsize) if node.type == "union_specifier" else size + fsize
    if params:
        d.struct_templates[name] = (params, statics)
    else:
        d.static_members.update(_qualified(name, statics, {}, d))
    if types:
        d.member_types[name] = types
    head = (node.text or b"")[: body.start_byte - node.start_byte].decode("utf-8", "replace")
    aligned = _ALIGNED.search(head)
    if aligned is not None:  # ``struct __align__(16) {uint r, g, b;}``: padded to 16 bytes
        step = int(aligned.group(1))
        size = -(-size // step) * step
    if fields:
        d.structs[name] = fields
        d.struct_sizes[name] = max(size, 1)
        if arrays:
            d.struct_arrays[name] = arrays
        d.aliases[name] = name  # a known struct: keep its name


_ALIGNED = re.compile(r"\b(?:__aligned__|aligned|__align__|alignas)\s*\(\s*(\d+)\s*\)")
_INSTANCE = re.compile(r"\s*([A-Za-z_][\w:]*)\s*(?:<(.*)>)?\s*")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_SIZEOF = re.compile(r"\bsizeof\s*\(\s*([A-Za-z_][\w:\s]*?)\s*\)")


def instance_fields(
    type_text: str, structs: Mapping[str, dict[str, str]], templates: Mapping[str, StructTemplate]
) -> tuple[str, dict[str, str]] | None:
    """A struct template's instantiation (``Param<float, __half>``, a parameter's type):
    its name as written and its fields' types with the template's parameters replaced by
    the arguments (``T1 *src`` -> ``float *``); None for anything else."""
    m = _INSTANCE.fullmatch(re.sub(r"\b(?:const|struct)\b|&", " ", type_text))
    if m is None or m.group(2) is None:
        return None
    base = m.group(1).rsplit("::", 1)[-1]
    fields = structs.get(base)
    if base not in templates or not fields:
        return None
    bound = _bound(templates[base][0], m.group(2))
    return f"{base}<{m.group(2).strip()}>", {f: _renamed(t, bound) for f, t in fields.items()}


def member_aliases(
    owner: str,
    type_text: str,
    templates: Mapping[str, StructTemplate],
    member_types: Mapping[str, dict[str, str]],
) -> dict[str, str]:
    """``owner::Member`` -> the member type's text, for a name ``owner`` that stands for
    the struct ``type_text`` (a template parameter bound to ``Vector<double, int>``, an
    alias): the template's parameters replaced by the arguments (``typename
    VectorType::ScalarType`` is ``double`` when the struct says ``typedef Scalar
    ScalarType``)."""
    named = _named_type(type_text)
    if named is None:
        return {}
    base, args = named
    types = member_types.get(base)
    if not types or (base in templates) != (args is not None):
        return {}
    bound = _bound(templates[base][0], args) if args is not None else {}
    return {f"{owner}::{member}": _renamed(t, bound) for member, t in types.items()}


def _named_type(type_text: str) -> tuple[str, str | None] | None:
    """The struct a type text names, without its scope, and its template arguments' text
    (``const ns::Vector<double, int> &`` -> ``Vector``, ``double, int``); None when it is not
    a plain name."""
    m = _INSTANCE.fullmatch(re.sub(r"\b(?:const|struct|typename)\b|&", " ", type_text))
    return None if m is None else (m.group(1).rsplit("::", 1)[-1], m.group(2))


@dataclass(frozen=True)
class TemplateInstance:
    """What the names of a struct template's instantiation stand for inside its methods
    (``TxN_t<unsigned char, 16>``): its type parameters and member types as type texts
    (``math_t``: ``unsigned char``, ``io_t``: ``uint4``), its numeric parameters and static
    members as value texts (``veclen_``, ``Ratio``: ``16``)."""

    types: Mapping[str, str]
    values: Mapping[str, str]

    def number(self, name: str) -> float | None:
        """The value of numeric parameter or static member ``name`` (None: not one, or not
        a number)."""
        text_ = self.values.get(name)
        return evaluate(text_) if text_ is not None else None


def template_instance(
    type_text: str,
    templates: Mapping[str, StructTemplate],
    member_types: Mapping[str, dict[str, str]],
) -> TemplateInstance | None:
    """The instantiation ``type_text`` of a struct template ``templates`` holds, with its
    parameters bound to the arguments (a value where the argument evaluates to a number,
    else a type) and its member types resolved in order (``typedef typename IOType<math_t,
    veclen_>::Type io_t;`` through the explicit specialization ``IOType<uint8_t, 16>``).
    None: not an instantiation of a known template."""
    named = _named_type(type_text)
    if named is None:
        return None
    base, args = named
    if args is None or base not in templates:
        return None
    params, statics = templates[base]
    bound = _bound(params, args)
    values = {p: a for p, a in bound.items() if evaluate(a) is not None}
    types = {p: a for p, a in bound.items() if p not in values}
    for member, t in member_types.get(base, {}).items():
        types[member] = nested_member_type(_renamed(t, {**types, **values}), member_types)
    for member, v in statics.items():
        values[member] = _renamed(v, values)
    return TemplateInstance(types, values)


_NESTED = re.compile(r"\s*(?:typename\s+)?([A-Za-z_][\w:]*)\s*<(.*)>\s*::\s*([A-Za-z_]\w*)\s*")


def nested_member_type(type_text: str, member_types: Mapping[str, dict[str, str]]) -> str:
    """``typename IOType<unsigned char, 16>::Type``: the member type of the explicit
    specialization whose arguments are the same (``IOType<uint8_t, 16>``: ``uint4``), else
    of the template itself; ``type_text`` unchanged when it names no such member."""
    m = _NESTED.fullmatch(type_text)
    if m is None:
        return type_text
    base, member = m.group(1).rsplit("::", 1)[-1], m.group(3)
    args = split_args(m.group(2), angles=True)
    for key, types in member_types.items():
        km = _INSTANCE.fullmatch(key)
        if km is None or km.group(1) != base or km.group(2) is None or member not in types:
            continue
        kargs = split_args(km.group(2), angles=True)
        if len(kargs) == len(args) and all(map(_same_argument, kargs, args)):
            return types[member]
    return member_types.get(base, {}).get(member, type_text)


def _same_argument(a: str, b: str) -> bool:
    """Two template arguments that name the same type or number (``uint8_t`` and ``unsigned
    char``, ``16`` and ``16``; not ``__half`` and ``__nv_bfloat16``)."""
    return _spelled(a) == _spelled(b)


def _spelled(arg: str) -> str:
    words = " ".join(w for w in arg.split() if w != "const")
    return _SAME_TYPE.get(words, words)


# standard aliases of the fundamental types, as template arguments compare
_SAME_TYPE = {
    "uint8_t": "unsigned char",
    "int8_t": "signed char",
    "uint16_t": "unsigned short",
    "int16_t": "short",
    "unsigned short int": "unsigned short",
    "uint32_t": "unsigned int",
    "unsigned": "unsigned int",
    "int32_t": "int",
    "signed int": "int",
    "uint64_t": "unsigned long",
    "unsigned long int": "unsigned long",
    "int64_t": "long",
    "long int": "long",
    "half": "__half",
    "nv_bfloat16": "__nv_bfloat16",
}


def _bound(params: tuple[str, ...], args: str) -> dict[str, str]:
    """A struct template's parameter names -> the arguments of an instantiation's argument
    list (``double, int`` of ``Vector<double, int>``)."""
    return dict(zip(params, split_args(args, angles=True), strict=False))


def _renamed(type_text: str, names: Mapping[str, str]) -> str:
    """``type_text`` with each word ``names`` holds replaced (``Scalar *`` -> ``double *``)."""
    return _WORD.sub(lambda w: names.get(w.group(0), w.group(0)), type_text)


def _alias_statics(d: Declarations) -> None:
    """The static members of each alias of a struct (``using V = S``) or of a struct
    template's instantiation (``typedef Packed<float> x128``), under the alias's name."""
    for alias, target in d.aliases.items():
        m = _INSTANCE.fullmatch(target)
        if m is None or alias == m.group(1):
            continue
        base = m.group(1).rsplit("::", 1)[-1]
        if base in d.struct_templates and m.group(2) is not None:
            params, statics = d.struct_templates[base]
            d.static_members.update(_qualified(alias, statics, _bound(params, m.group(2)), d))
        else:
            prefix = base + "::"
            for key, v in list(d.static_members.items()):
                if key.startswith(prefix):
                    d.static_members.setdefault(alias + "::" + key[len(prefix) :], v)


def _qualified(
    owner: str, statics: dict[str, str], bound: dict[str, str], d: Declarations
) -> dict[str, str]:
    """``owner::member`` -> its value text, with the template's parameters replaced by
    their arguments (``bound``), the other members named ``owner::other`` and ``sizeof`` of
    known types resolved."""
    names = {**bound, **{m: f"{owner}::{m}" for m in statics}}
    return {
        f"{owner}::{m}": _SIZEOF.sub(
            lambda s: _size_text(s.group(1), d),
            _renamed(v, names),
        )
        for m, v in statics.items()
    }


def _size_text(type_text: str, d: Declarations) -> str:
    """``sizeof(T)`` of a known type as a number; as it was otherwise."""
    dt = parse_type(type_text, d.aliases)
    if dt.kind == "unknown" and dt.name not in d.struct_sizes:
        return f"sizeof({type_text})"
    return str(8 if dt.pointer else d.struct_sizes.get(dt.name, dt.size))


def _global(node: Node, d: Declarations) -> None:
    ty = node.child_by_field_name("type")
    tyt = text(ty)
    named = ty.child_by_field_name("name") if ty is not None else None
    if ty is not None and ty.type in ("struct_specifier", "class_specifier") and named:
        tyt = text(named)  # ``struct Fields { double *x; ... } F;``: a Fields
    head = text(node)[: (ty.start_byte - node.start_byte) if ty is not None else 0]
    if "__constant__" in head:
        space = "constant"
    elif "__shared__" in head:
        space = "shared"
    elif tyt.startswith("texture") or "texture<" in tyt:
        space = "texture"
    else:
        space = "global"
    for decl in node.children_by_field_name("declarator"):
        dn = decl.child_by_field_name("declarator") if decl.type == "init_declarator" else decl
        sizes, levels, dn = _declarator_chain(dn, d) if dn is not None else ([], "", None)
        value_node = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
        if sizes and sizes[-1] is None:
            # ``float w[] = {1, 2, 3}``: the first dimension is the initializer's length
            sizes[-1] = initializer_length(value_node)
        stars = ("[]" if tyt in d.array_aliases else "") + levels
        # a pointer's target is allocated elsewhere: no elements of its own
        count = _count(sizes) if "*" not in levels else None
        elements = d.array_aliases.get(tyt, 1.0) * count if count is not None else None
        if dn is None or dn.type != "identifier":
            continue
        name = text(dn)
        if space == "global" and "__device__" not in head and "__managed__" not in head:
            if not stars and tyt.split()[-1] not in d.structs:
                if re.search(r"\b(?:const|constexpr)\b", head + " " + tyt) and value_node:
                    # ``static constexpr auto N = 8;``: a size the arrays after it may use
                    d.macro_env.setdefault(name, text(value_node))
                continue  # host scalars and constants are handled as values
            space = "host"  # (a host struct: its pointer members point to mapped arrays)
        d.globals[name] = GlobalVar(name, tyt + " " + stars, space, elements)
