"""C/C++/CUDA data types as the estimator sees them: which roofline precision an arithmetic
value belongs to and how many bytes an element occupies in memory.

``parse_type("const float * __restrict__")`` -> a pointer to a 4-byte fp32 element. Unknown
type names (structs, template parameters) resolve through an alias table (``typedef``,
``using``, ``#define REAL double``, template arguments) or stay ``unknown`` with a size guess.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass

# kinds: "f64" "f32" "f16" "int" "bool" "void" "struct" "unknown"
COMPLEX = "complex"  # the name of a C++ complex type (its product is not lane by lane)
FLOAT_KINDS = ("f64", "f32", "f16")
PRECISION_OF_KIND = {"f64": "fp64", "f32": "fp32", "f16": "fp16"}


def exact_in_float(v: float) -> bool:
    """Whether a float holds ``v`` exactly (2.0, 0.5, 1e4: yes; 0.1: no)."""
    try:
        as_float: float = struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return False
    return as_float == v


@dataclass(frozen=True)
class DataType:
    kind: str
    size: int  # bytes of one element (the pointee for pointers / arrays)
    pointer: int = 0  # levels of pointer / array indirection
    lanes: int = 1  # vector types: float4 -> 4
    name: str = ""  # struct name, for field look-up

    @property
    def is_float(self) -> bool:
        return self.kind in FLOAT_KINDS

    @property
    def is_pointer(self) -> bool:
        return self.pointer > 0

    def deref(self, levels: int = 1) -> DataType:
        """The type ``levels`` pointer (or array) levels down; a non-pointer stays itself."""
        if self.pointer == 0 or levels <= 0:
            return self
        pointer = max(self.pointer - levels, 0)
        return DataType(self.kind, self.size, pointer, self.lanes, self.name)

    def pointer_to(self) -> DataType:
        return DataType(self.kind, self.size, self.pointer + 1, self.lanes, self.name)

    def lane(self) -> DataType:
        """One component of a vector type (``float4`` -> ``float``)."""
        if self.lanes == 1:
            return self
        return DataType(self.kind, self.size // self.lanes, self.pointer, 1, "")


INT = DataType("int", 4)
LONG = DataType("int", 8)
SHORT = DataType("int", 2)
BOOL = DataType("bool", 1)
FLOAT = DataType("f32", 4)
DOUBLE = DataType("f64", 8)
HALF = DataType("f16", 2)
VOID = DataType("void", 1)
UNKNOWN = DataType("unknown", 4)

_BASE: dict[str, DataType] = {
    "double": DOUBLE,
    "float": FLOAT,
    "half": HALF,
    "__half": HALF,
    "__nv_bfloat16": HALF,
    "nv_bfloat16": HALF,
    "bfloat16": HALF,
    "sycl::half": HALF,
    "_Float16": HALF,
    "bool": BOOL,
    "_Bool": BOOL,
    "char": DataType("int", 1),
    "int8_t": DataType("int", 1),
    "uint8_t": DataType("int", 1),
    "uchar": DataType("int", 1),
    "u8": DataType("int", 1),
    "short": SHORT,
    "int16_t": DataType("int", 2),
    "uint16_t": DataType("int", 2),
    "ushort": DataType("int", 2),
    "int": INT,
    "unsigned": INT,
    "signed": INT,
    "uint": INT,
    "int32_t": INT,
    "uint32_t": INT,
    "u32": INT,
    "long": LONG,
    "size_t": LONG,
    "ssize_t": LONG,
    "ptrdiff_t": LONG,
    "int64_t": LONG,
    "uint64_t": LONG,
    "u64": LONG,
    "intptr_t": LONG,
    "uintptr_t": LONG,
    "longlong": LONG,
    "ulong": LONG,
    "void": VOID,
    "half2": DataType("f16", 4, lanes=2),
    "__half2": DataType("f16", 4, lanes=2),
    "__nv_bfloat162": DataType("f16", 4, lanes=2),
    "cuComplex": DataType("f32", 8, lanes=2),
    "cuFloatComplex": DataType("f32", 8, lanes=2),
    "cuDoubleComplex": DataType("f64", 16, lanes=2),
}
_VECTOR = re.compile(r"(u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])")
_SCALAR_OF_VECTOR = {
    "char": DataType("int", 1),
    "uchar": DataType("int", 1),
    "short": DataType("int", 2),
    "ushort": DataType("int", 2),
    "int": INT,
    "uint": INT,
    "long": LONG,
    "ulong": LONG,
    "longlong": LONG,
    "ulonglong": LONG,
    "float": FLOAT,
    "double": DOUBLE,
}
_IGNORED_WORDS = frozenset(
    [
        "const",
        "volatile",
        "static",
        "extern",
        "inline",
        "register",
        "restrict",
        "__restrict__",
        "__restrict",
        "__shared__",
        "__device__",
        "__constant__",
        "__managed__",
        "__global__",
        "__host__",
        "__forceinline__",
        "struct",
        "class",
        "typename",
        "enum",
        "constexpr",
        "mutable",
        "__align__",
        "auto",
        "thread_local",
    ]
)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_][A-Za-z_0-9]*)*|\*|&|\[|<|>|,")


def type_name(text: str) -> tuple[str, int]:
    """A declared type's words without qualifiers and storage words, and its pointer levels:
    ``const T *__restrict__`` -> ``("T", 1)``, ``unsigned int`` -> ``("unsigned int", 0)``."""
    stars = text.count("*") + text.count("[]")
    words = re.sub(r"[*&]|\[\]", " ", text).split()
    return " ".join(w for w in words if w not in _IGNORED_WORDS), stars


def parse_type(text: str, aliases: Mapping[str, str] | None = None, _depth: int = 0) -> DataType:
    """The :class:`DataType` of a declaration's type text (declarator stars included)."""
    pointer = text.count("*") + text.count("[")
    # template arguments: `std::complex<double>` -> look inside; `vector<float>` -> float
    words: list[str] = []
    depth = 0
    for tok in _TOKEN.findall(text):
        if tok == "<":
            depth += 1
            continue
        if tok == ">":
            depth -= 1
            continue
        if tok in ("*", "&", "[", ","):
            continue
        words.append(tok)
    base: DataType | None = None
    unsigned_long = 0
    signed_only = False
    for w in words:
        if w in _IGNORED_WORDS:
            continue
        short = w.rsplit("::", 1)[-1]
        if short == "complex" and base is None:
            continue
        if short == "long":
            unsigned_long += 1
            base = LONG
            signed_only = False
            continue
        if short in ("unsigned", "signed"):
            if base is None:
                base = INT  # `unsigned` alone; a following char/short/long refines it
                signed_only = True
            continue
        if short == "short" and base is not None and not signed_only:
            continue
        if short == "int" and base is not None and base.kind == "int":
            continue  # `long int`, `unsigned int`
        found = _base(w, aliases, _depth)
        if found is not None:
            if base is not None and base.kind not in ("unknown", "int", "bool"):
                continue  # the first meaningful type wins (`float` in `vector<float>`)
            if base is not None and base.kind == "int" and found.kind == "int":
                if signed_only:
                    base, signed_only = found, False
                continue
            base = found if base is None or base.kind in ("unknown", "int", "bool") else base
            if found.pointer:
                pointer += found.pointer
        elif base is None:
            base = named_like(short, aliases) or DataType("unknown", 4, name=short)
    if base is None:
        base = UNKNOWN
    if "complex" in text and base.kind in FLOAT_KINDS and base.lanes == 1:
        # std::complex<double>, thrust::complex<float>: a pair that multiplies as complex
        base = DataType(base.kind, base.size * 2, lanes=2, name=COMPLEX)
    if pointer:
        return DataType(base.kind, base.size, base.pointer + pointer, base.lanes, base.name)
    return base


# ``dfloat``, ``float_t``, ``Double``, ``dlong``, ``int_t`` (not ``point``: a short prefix
# before ``int`` or ``short`` makes too many other words)
_SCALAR_NAMED = re.compile(
    r"(?i)^(?:[a-z]{0,2}_?(float|double|long)(?:_t|_type)?|(int|short)(?:_t|_type))$"
)
_NAMED_AS = {"float": FLOAT, "double": DOUBLE, "long": LONG, "int": INT, "short": SHORT}


def named_like(name: str, aliases: Mapping[str, str] | None) -> DataType | None:
    """A type no declaration in view defines whose name says what it is: ``dfloat``,
    ``float_t``, ``Double``, ``dlong`` (a build flag's ``-Ddfloat=float`` the tool cannot
    see). A name the program declares (a struct) is not taken for a scalar."""
    if aliases is not None and name in aliases or _BASE.get(name) is not None:
        return None
    m = _SCALAR_NAMED.fullmatch(name)
    if m is None:
        return None
    return _NAMED_AS[(m.group(1) or m.group(2)).lower()]


def scalar_name(t: DataType) -> str:
    """The C name of a scalar type :func:`named_like` gives (``float``, ``long`` ...)."""
    return next(word for word, named in _NAMED_AS.items() if named == t)


def _base(word: str, aliases: Mapping[str, str] | None, depth: int) -> DataType | None:
    short = word.rsplit("::", 1)[-1]
    t = _BASE.get(word) or _BASE.get(short)
    if t is not None:
        return t
    m = _VECTOR.fullmatch(short)
    if m:
        scalar = _SCALAR_OF_VECTOR[m.group(1)]
        lanes = int(m.group(2))
        # float3 is 12 bytes, loads as 3 scalars
        return DataType(scalar.kind, scalar.size * lanes, lanes=lanes)
    if aliases is not None and depth < 6:
        target = aliases.get(word) or aliases.get(short)
        if target is not None and target != word:
            return parse_type(target, aliases, depth + 1)
    return None


# how C++ spells an element type, for picking an operator overload by its parameter types
_SPELLINGS: dict[tuple[str, int], tuple[str, ...]] = {
    ("f32", 4): ("float",),
    ("f64", 8): ("double",),
    ("f16", 2): ("half", "__half"),
    ("int", 1): ("char", "uchar", "unsigned char"),
    ("int", 2): ("short", "ushort", "unsigned short"),
    ("int", 4): ("int", "uint", "unsigned int", "unsigned"),
    ("int", 8): ("long", "ulong", "longlong", "ulonglong", "size_t"),
}


def overload_key(name: str, param_types: list[str]) -> str:
    """The key of one overload of operator ``name`` by its parameters' type texts:
    ``overload_key("operator+", ["const float3 &", "float3"])`` -> ``operator+(float3,float3)``."""
    parts = []
    for t in param_types:
        words, stars = type_name(t)
        parts.append(words + "*" * stars)
    return f"{name}({','.join(parts)})"


def spellings(t: DataType) -> tuple[str, ...]:
    """The type names a value of type ``t`` may be declared with (a struct's name, a vector
    type's ``float3``, a scalar's ``float``): the parameter types of the overloads it
    matches. An integer scalar converts to a floating-point parameter too (``2 * v``)."""
    if t.pointer:
        return ()
    if t.name:
        return (t.name,)
    scalar = _SPELLINGS.get((t.kind, t.size // t.lanes), ())
    if t.lanes > 1:
        if t.kind == "f16" and t.lanes == 2:
            return ("half2", "__half2")
        return tuple(f"{s}{t.lanes}" for s in scalar if " " not in s and s != "size_t")
    if t.kind == "int":
        return (*scalar, "float", "double")
    return scalar


def promote(a: DataType, b: DataType) -> DataType:
    """The usual arithmetic conversions, for the precision an operation runs in."""
    if a.pointer or b.pointer:
        return a if a.pointer else b
    order = {"f64": 5, "f32": 4, "f16": 3, "int": 2, "bool": 1, "unknown": 0, "void": 0}
    ka, kb = order.get(a.kind, 0), order.get(b.kind, 0)
    if ka == kb == 2:
        return a if a.size >= b.size else b
    if ka == kb and a.lanes >= b.lanes:
        return a
    if ka == kb:
        return b
    if ka > kb:
        return a
    return b
