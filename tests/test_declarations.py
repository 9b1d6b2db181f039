"""Type aliases of ``syntax/declarations.py`` on small sources: the branch the preprocessor
keeps declares them."""

from pathlib import Path

from roofline_lsp.detect.kernels import detect
from roofline_lsp.syntax.declarations import declarations, nested_member_type, template_instance
from roofline_lsp.syntax.parsing import parse


def test_an_alias_comes_from_the_branch_the_preprocessor_takes() -> None:
    # what nvcc compiles with no -D flag: PRECISION is 1, USE_FLOAT is defined nowhere, so
    # real and T2 are floats and FP a double; __CUDA_ARCH__ (the compiler's own) decides
    # nothing: both of its aliases are read and the last one holds, as before
    src = b"""#define PRECISION 1
#if PRECISION == 2
typedef double real;
#elif PRECISION == 1
typedef float real;
#else
typedef int real;
#endif
#ifdef USE_FLOAT
typedef float FP;
#else
typedef double FP;
#endif
#ifndef USE_FLOAT
using T2 = float;
#else
using T2 = double;
#endif
#ifdef __CUDA_ARCH__
typedef float D;
#else
typedef double D;
#endif
"""
    det = detect(src, "k.cu")
    aliases = declarations(parse(src).root_node, det.macros).aliases
    assert aliases["real"] == "float"
    assert aliases["FP"] == "double"
    assert aliases["T2"] == "float"
    assert aliases["D"] == "double"


def test_an_include_guard_keeps_the_header_s_aliases() -> None:
    # #ifndef H_ / #define H_ around the header: the file is read on its first inclusion
    src = b"""#ifndef DIV_HPP_
#define DIV_HPP_
using real = double;
#ifdef H_SINGLE
typedef float half_t;
#else
typedef double half_t;
#endif
#endif
"""
    det = detect(src, "div.hpp")
    aliases = declarations(parse(src).root_node, det.macros).aliases
    assert aliases["real"] == "double"
    assert aliases["half_t"] == "double"


def test_a_device_table_sized_by_a_constexpr_knows_its_elements() -> None:
    # perlin's ``__device__ const float gradientX[N_GRADIENTS]`` with ``static constexpr auto
    # N_GRADIENTS = 8``: 8 elements (a gather into it touches at most those 32 bytes); a
    # table sized by a variable the host may change is not known
    src = (
        b"static constexpr auto N_GRADIENTS = 8;\n"
        b"const int ROWS = 2 * N_GRADIENTS;\n"
        b"int n = 64;\n"
        b"__device__ const float gradientX[N_GRADIENTS] = {1.f, 0.f};\n"
        b"__device__ float table[ROWS][4];\n"
        b"__device__ float other[n];\n"
    )
    g = declarations(parse(src).root_node).globals
    assert g["gradientX"].elements == 8
    assert g["table"].elements == 64
    assert g["other"].elements is None


_VECTORS = (Path(__file__).parent / "fixtures" / "estimator" / "vector_io.cu").read_bytes()


def test_an_instance_binds_its_parameters_member_types_and_statics() -> None:
    d = declarations(parse(_VECTORS).root_node, detect(_VECTORS, "k.cu").macros)
    inst = template_instance("TxN_t<unsigned char, 16>", d.struct_templates, d.member_types)
    assert inst is not None
    # uint8_t is unsigned char: the explicit specialization gives io_t
    assert dict(inst.types) == {
        "math_": "unsigned char",
        "math_t": "unsigned char",
        "io_t": "uint4",
    }
    assert dict(inst.values) == {"veclen_": "16", "Ratio": "16"}
    assert template_instance("float", d.struct_templates, d.member_types) is None


def test_a_nested_member_type_takes_the_matching_specialization_only() -> None:
    d = declarations(parse(_VECTORS).root_node, detect(_VECTORS, "k.cu").macros)
    types = d.member_types
    assert nested_member_type("typename IOType<__nv_bfloat16, 2>::Type", types) == "__nv_bfloat162"
    # __half has bfloat16's size but is another type: the primary template's member
    assert nested_member_type("typename IOType<__half, 2>::Type", types) == "T"
    assert nested_member_type("float *", types) == "float *"
