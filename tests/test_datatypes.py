"""C type parsing (``datatypes.py``)."""

from __future__ import annotations

import pytest

from roofline_lsp.syntax.datatypes import (
    COMPLEX,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    DataType,
    named_like,
    overload_key,
    parse_type,
    promote,
    spellings,
    type_name,
)


@pytest.mark.parametrize(
    ("text", "kind", "size", "pointer"),
    [
        ("float", "f32", 4, 0),
        ("const double * __restrict__", "f64", 8, 1),
        ("unsigned char *", "int", 1, 1),
        ("unsigned long long", "int", 8, 0),
        ("unsigned", "int", 4, 0),
        ("short", "int", 2, 0),
        ("size_t", "int", 8, 0),
        ("float4 *", "f32", 16, 1),
        ("double2", "f64", 16, 0),
        ("__half", "f16", 2, 0),
        ("std::complex<double>", "f64", 16, 0),
        ("int **", "int", 4, 2),
    ],
)
def test_parse_type(text: str, kind: str, size: int, pointer: int) -> None:
    t = parse_type(text)
    assert (t.kind, t.size, t.pointer) == (kind, size, pointer)


def test_aliases_and_unknown_structs() -> None:
    aliases = {"real": "double", "T": "float", "Vec": "float3"}
    assert parse_type("real *", aliases).kind == "f64"
    assert parse_type("const T", aliases) == FLOAT
    assert parse_type("Vec", aliases).lanes == 3
    s = parse_type("Particle *")
    assert s.kind == "unknown" and s.name == "Particle" and s.pointer == 1


def test_promotion() -> None:
    assert promote(FLOAT, DOUBLE) == DOUBLE
    assert promote(INT, FLOAT) == FLOAT
    assert promote(INT, parse_type("long")).size == 8


def test_type_name_drops_qualifiers_and_counts_pointer_levels() -> None:
    assert type_name("const T *__restrict__") == ("T", 1)
    assert type_name("static unsigned int") == ("unsigned int", 0)
    assert type_name("volatile float **") == ("float", 2)
    assert type_name("double []") == ("double", 1)


def test_overloads_are_keyed_by_their_parameter_types() -> None:
    assert overload_key("operator+", ["const float3 &", "float3"]) == "operator+(float3,float3)"
    assert overload_key("operator*", ["float", "struct V3"]) == "operator*(float,V3)"
    # what a value of each type may be declared as: a vector, a struct, a scalar (an integer
    # converts to a floating-point parameter: ``2 * v`` calls ``operator*(float, V3)``)
    assert spellings(parse_type("float4")) == ("float4",)
    assert "uint4" in spellings(parse_type("uint4"))
    assert spellings(parse_type("V3")) == ("V3",)
    assert "float" in spellings(INT)
    assert spellings(parse_type("float *")) == ()
    # std::complex is a pair that multiplies as complex, cuFloatComplex (a float2) is not
    assert parse_type("std::complex<double>").name == COMPLEX
    assert parse_type("cuFloatComplex").name == ""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dfloat", FLOAT),  # libParanumal's -Ddfloat=float
        ("float_t", FLOAT),
        ("Double", DOUBLE),
        ("real", None),  # float or double: no guess
        ("FloatPair", None),
        ("float", None),  # a type the parser knows is not a guess
        ("dlong", LONG),  # and its -Ddlong=...
        ("int_t", INT),
        ("point", None),  # a prefix before "int" would make too many words look like it
        ("hint", None),
    ],
)
def test_an_undeclared_type_is_taken_by_its_name_only_when_it_says_what_it_is(
    name: str, expected: object
) -> None:
    assert named_like(name, {}) == expected
    if isinstance(expected, DataType):
        assert parse_type(name + " *", {}) == expected.pointer_to()
    assert named_like(name, {name: name}) is None  # the program declares it (a struct)
