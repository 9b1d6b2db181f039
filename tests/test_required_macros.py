"""Configurations a source demands from its build (``syntax/required_macros.py``)."""

from __future__ import annotations

from roofline_lsp.syntax.required_macros import (
    RequiredChoice,
    guarding_names,
    required_choices,
    required_macros,
)

CHAIN = b"""#ifndef INT_H
#define INT_H
#if defined SHORT
typedef short int_t;
#elif defined(INT)
typedef int int_t;
#elif defined LONG  // the widest
typedef long int_t;
#else
#error Must define one of SHORT, INT, or LONG
#endif
#endif
"""


def test_a_chain_ending_in_an_error_names_its_alternatives() -> None:
    assert required_choices("int.h", CHAIN) == [
        RequiredChoice("int.h", 10, ("SHORT", "INT", "LONG"))
    ]
    for second in (b"#elifdef DOUBLE", b"#elif defined DOUBLE"):
        text = b"#ifdef FLOAT\n#define real float\n" + second + b"\n#else\n#error pick\n#endif\n"
        assert required_choices("r.h", text) == [RequiredChoice("r.h", 5, ("FLOAT", "DOUBLE"))]


def test_only_chains_of_alternatives_that_stop_the_build() -> None:
    # no #error; a lone required name (its value is what matters); a condition on values;
    # an #error nested in another branch; a single alternative
    for text in (
        b"#if defined A\nint a;\n#elif defined B\nint b;\n#else\nint c;\n#endif\n",
        b"#ifndef N\n#error N must be defined\n#endif\n",
        b"#if N > 4\nint a;\n#elif defined B\nint b;\n#else\n#error no\n#endif\n",
        b"#if defined A\n#else\n#error need A\n#endif\n",
        b"#if defined A\n#elif defined B\n#else\n#if X\n#error x\n#endif\n#endif\n",
    ):
        assert required_choices("f.h", text) == [], text


def test_the_first_alternative_unless_the_build_or_the_source_defines_one() -> None:
    texts = [("main.cu", b'#include "int.h"\n'), ("int.h", CHAIN)]
    ((name, choice),) = required_macros(texts, ["-I", "/x"])
    assert name == "SHORT" and choice.names == ("SHORT", "INT", "LONG")
    assert required_macros(texts, ["-DINT"]) == ()
    assert required_macros(texts, ["-D", "LONG=1"]) == ()
    assert required_macros([("main.cu", b"#define INT\n"), ("int.h", CHAIN)], []) == ()


def test_the_names_whose_ifdef_keeps_a_region_out_of_the_file_as_it_is() -> None:
    # line 3 is compiled only with -DOMP_TARGET (and -DUSE_GPU around it); line 5 sits on
    # an #else branch, line 9 under a name the file defines itself, line 12 outside any
    src = (
        b"#ifdef USE_GPU\n"
        b"#if defined(OMP_TARGET)\n"
        b"#pragma omp target teams distribute parallel for\n"
        b"#else\n"
        b"#pragma omp parallel for\n"
        b"#endif\n"
        b"#define HAVE_X\n#ifdef HAVE_X\n"
        b"#pragma omp target\n"
        b"#endif\n#endif\n"
        b"#pragma omp target\n"
    )
    assert guarding_names(src, [3]) == ("USE_GPU", "OMP_TARGET")
    assert guarding_names(src, [5]) == ("USE_GPU",)
    assert guarding_names(src, [9, 12]) == ("USE_GPU",)
    assert guarding_names(src, [12]) == ()
