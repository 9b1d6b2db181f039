"""Macro expansion of ``macro_expansion.py`` (a loop header hidden in a macro) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import count, detected, loop_trips

from roofline_lsp.estimate.macro_expansion import expand_text
from roofline_lsp.syntax.cexpr import split_args
from roofline_lsp.syntax.macro_substitution import substitute_macro


def test_openmp_loop_macro(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a loop header hidden in a macro (no semicolon): the region is still the loop
    src = (
        "#define LOOP(i, n) for (int i = 0; i < (n); i++)\n"
        "void f(float *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  LOOP(i, 4096) {\n"
        "    y[i] = y[i] + 1.0f;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="m.cpp")
    assert a.threads == 4096
    assert a.counts.flops["fp32"] == pytest.approx(1.0)


CAFFE_LOOP = (
    "#define CUDA_KERNEL_LOOP(i, n) \\\n"
    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)\n"
    "#define FOR_ALL(i, n) for (int i = 0; i < (n); i++)\n"
)


def test_a_loop_macro_called_with_names_is_a_loop(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # CUDA_KERNEL_LOOP(index, n) { ... }: with names for arguments the parser reads a
    # function definition nested in the kernel (before: nothing counted in it, 0 B moved).
    # 2^24 elements over 1024 x 256 threads: 64 grid-stride trips, each reading in[index]
    # and writing out[index] (8 B); 134 MB, every byte once
    src = CAFFE_LOOP + (
        "__global__ void scale(int n, const float *in, float *out) {\n"
        "  CUDA_KERNEL_LOOP(index, n) {\n"
        "    out[index] = in[index] * 2.0f;\n"
        "  }\n"
        "}\n"
        "int main() { float *a, *b; scale<<<1024, 256>>>(1 << 24, a, b); }\n"
    )
    det = detected(tmp_path, src, "k.cu")
    assert "CUDA_KERNEL_LOOP" not in det.functions  # (the parser's nested definition)
    a = count(gpu, tmp_path, src)
    ((var, (trips, source)),) = loop_trips(a).items()
    assert (var, trips, source) == ("index", pytest.approx(64.0), "grid-stride")
    assert a.counts.flops["fp32"] == pytest.approx(64.0)
    assert a.memory.footprint == pytest.approx(8.0 * (1 << 24))


@pytest.mark.parametrize(
    "region",
    [
        # names for arguments (a nested function definition to the parser), a one-statement
        # inner loop (one broken statement: header and body)
        "FOR_ALL(i, n) {\n    float s = 0.f;\n    FOR_ALL(j, m) s += in[i * m + j];\n"
        "    out[i] = s;\n  }\n",
        # ... and the inner loop in braces
        "FOR_ALL(i, n) {\n    float s = 0.f;\n    FOR_ALL(j, m) { s += in[i * m + j]; }\n"
        "    out[i] = s;\n  }\n",
        # two loop macros, one statement (the inner one's body written out by the sum)
        "FOR_ALL(i, n) FOR_ALL(j, m) out[i] += in[i * m + j];\n",
    ],
)
def test_an_offload_region_of_loop_macros(gpu, tmp_path: Path, region: str) -> None:  # type: ignore[no-untyped-def]
    # 4096 iterations of a 4096-trip row sum: 4096 FP32 FLOP each, the 64 MiB matrix read
    # once (before: the region was 0 B and compute-bound, or ended at the first `;`)
    src = CAFFE_LOOP + (
        "void rows(int n, int m, const float *in, float *out) {\n"
        "  #pragma omp target teams distribute parallel for"
        " map(to: in[0:n*m]) map(from: out[0:n])\n"
        f"  {region}"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="m.cpp", args="n=4096 m=4096")
    assert a.threads == 4096
    assert loop_trips(a)["j"] == (4096.0, "argument")
    assert a.counts.flops["fp32"] == pytest.approx(4096.0)
    assert a.memory.footprint == pytest.approx(4.0 * 4096 * 4096 + 4.0 * 4096)


def test_a_subscript_argument_loses_its_parentheses(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # LERP(a[k], a[i], 0.3f) -> ((a[k]) + 0.3f * ((a[i]) - (a[k]))): there `(a[i]) - (a[k])`
    # parses as a cast of -(a[k]) to an array type `a[i]`, and the subtraction was lost.
    # A name followed by subscripts and members goes in bare (nothing binds tighter).
    body = "((a) + (t) * ((b) - (a)))"
    expanded = substitute_macro(body, ("a", "b", "t"), ["a[k]", "p[i].x", "0.3f"])
    assert expanded.split() == ["(", "a[k]", "+", "0.3f", "*", "(", "p[i].x", "-", "a[k]", "))"]
    assert substitute_macro("((x) * 2)", ("x",), ["a[k] + 1"]) == "((a[k] + 1) * 2)"
    # nvcc -ptx: per trip a sub, an fma and the add to s: 4 FP32 FLOP, 64 trips (was 128)
    a = count(
        gpu,
        tmp_path,
        "#define LERP(a, b, t) ((a) + (t) * ((b) - (a)))\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int k = 0; k < 64; k++) s += LERP(a[k], a[i], 0.3f);\n"
        "  b[i] = s;\n"
        "}\n",
        block=(256, 1, 1),
        grid=(4096, 1, 1),
    )
    assert a.counts.flops["fp32"] == pytest.approx(256)


def test_a_statement_expression_macro_gives_its_last_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # PPCG's ppcg_min is a GNU statement expression with __typeof__ locals. Block b0 of 12
    # runs c1 = 0, 32, ... <= min(368, 32 * b0 + 30): b0 + 1 trips for b0 <= 10, 12 for
    # b0 = 11, so (66 + 12) / 12 = 6.5 on average (before: the 16-trip default)
    src = (
        "#define ppcg_min(x,y) ({ __typeof__(x) _x = (x); __typeof__(y) _y = (y); "
        "_x < _y ? _x : _y; })\n"
        "__global__ void k(float *y, const float *a) {\n"
        "  int b0 = blockIdx.x, t0 = threadIdx.x;\n"
        "  for (int c1 = 0; c1 <= ppcg_min(368, 32 * b0 + 30); c1 += 32)\n"
        "    y[32 * b0 + t0] += a[c1];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(32, 1, 1), grid=(12, 1, 1))
    (loop,) = a.counts.loops
    assert (loop.trips, loop.source) == (pytest.approx(6.5, rel=0.01), "argument")


PRAGMA_MACRO_LOOP = Path(__file__).parent / "fixtures" / "estimator" / "pragma_macro_loop.cpp"
STATEMENT_MACROS = (
    "#define REP2(S) S S\n"
    "#define REP4(S) REP2(S) REP2(S)\n"
    "#define REP16(S) REP4(S) REP4(S) REP4(S) REP4(S)\n"
    "#define MAD x = x * y + z; y = y * x + z;\n"
    "#define MAD4 MAD MAD MAD MAD\n"
    "#define FMA_OP(a, b, c) a = a * b + c;\n"
)


@pytest.mark.parametrize(
    "body",
    [
        "REP16(x = x * y + z; y = y * x + z;)",  # statements as the argument
        "REP16(FMA_OP(x, y, z) FMA_OP(y, x, z))",  # a statement macro in the argument
        "MAD4; MAD4; MAD4; MAD4;",  # object-like macros standing for statements
        "MAD4; MAD4; MAD4; MAD4",  # ... the last before the `}` (parsed as a type name)
        "REP4(MAD4)",
    ],
)
def test_statement_macros_expand_in_full(gpu, tmp_path: Path, body: str) -> None:  # type: ignore[no-untyped-def]
    # each body is 16 copies of two FMAs: 64 FP32 FLOP a trip, 5000 trips. The parser ends
    # REP16(x = ...; ...) at its first ``;`` and sees MAD4 as a name: before, 4 FLOP a trip
    # (one copy) or none. The assignments inside make x and y loop-carried: the FMAs run
    # every trip (not hoisted out of the loop as invariant)
    src = STATEMENT_MACROS + (
        "void f(float *a, int n, int iters) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    float x = a[i], y = 0.5f, z = 1.0f;\n"
        "    for (int r = 0; r < iters; r++) {\n"
        f"      {body}\n"
        "    }\n"
        "    a[i] = x + y;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="m.cpp", args="n=1024 iters=5000")
    assert a.totals["fp32"] == pytest.approx(1024 * (64 * 5000 + 1))


def test_expand_text_rescans_and_stops_at_its_limit() -> None:
    macros = {
        "REP2": (("S",), "S S"),
        "REP4": (("S",), "REP2(S) REP2(S)"),
        "MAD": (None, "x += y;"),
        "N": (None, "64"),
        "SELF": (("a",), "SELF(a) + 1"),
    }
    assert expand_text("REP4(MAD)", macros).split() == ["x", "+=", "y;"] * 4  # type: ignore[union-attr]
    assert expand_text("a[N] = SELF(b);", macros) == "a[N] =  SELF(b) + 1 ;"  # N: a value
    assert expand_text("REP2(x", macros) is None  # not closed
    assert split_args("a = f(1, 2); b = c[3, 4], {5, 6}") == [
        "a = f(1, 2); b = c[3, 4]",
        "{5, 6}",
    ]
    deep = {"R": (("S",), "S"), **{f"A{i}": (None, f"A{i + 1}") for i in range(5000)}}
    assert expand_text("R(" * 5000 + "x" + ")" * 5000, deep) is None  # nested too deep
    assert expand_text("A0", deep) == "A0"  # a chain of 5,000 names, no statement: left
    huge = {"R": (("S",), "S S S S S S S S S S")}
    assert expand_text("R(R(R(R(R(R(x = 1;))))))", huge) is None  # 10^6 copies


def test_a_statement_macro_s_loop_is_on_the_line_of_its_use(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # BODY(16): _Pragma("unroll") and a 16-trip loop of two FMAs, 64 FP32 FLOP a trip of r
    # (before: the _Pragma did not parse and nothing was counted); the loop is reported on
    # line 7, where BODY is used (not on line 1 of the expansion's own parse)
    src = PRAGMA_MACRO_LOOP.read_text()
    a = count(gpu, tmp_path, src, name="m.cpp", args="n=1024 iters=100")
    assert a.totals["fp32"] == pytest.approx(1024 * (64 * 100 + 1))
    assert {(lp.var, lp.line, lp.trips) for lp in a.counts.loops if lp.var == "k"} == {("k", 7, 16)}


PRAGMA_MACROS = (
    "#define PRAGMA(x) _Pragma(#x)\n"
    '#define UNROLL _Pragma("unroll")\n'
    '#define OMP_FOR _Pragma("omp parallel for")\n'
    "#define OMP_PARALLEL_FOR PRAGMA(omp parallel for)\n"
)


def test_pragma_operators_in_a_kernel_are_directives(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # UNROLL before a loop (an object-like macro: the parser takes it and the loop's head
    # for a declaration), PRAGMA(unroll 4) and _Pragma("unroll") before two more: per
    # thread 8 FADDs + 8 FMAs (16 FLOP) + 8 FMULs = 32 FP32 FLOP (before: the first loop
    # was lost, 25), each loop 8 trips
    src = PRAGMA_MACROS + (
        "__global__ void k(const float *in, float *out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float acc = 0.f;\n"
        "  UNROLL\n"
        "  for (int a = 0; a < 8; a++)\n"
        "    acc += in[8 * i + a];\n"
        "  PRAGMA(unroll 4)\n"
        "  for (int b = 0; b < 8; b++)\n"
        "    acc += in[8 * i + b] * 2.0f;\n"
        '  _Pragma("unroll")\n'
        "  for (int c = 0; c < 8; c++)\n"
        "    acc *= in[8 * i + c];\n"
        "  out[i] = acc;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    assert a.counts.flops["fp32"] == pytest.approx(32.0)
    assert {v: t for v, (t, _src) in loop_trips(a).items()} == {"a": 8.0, "b": 8.0, "c": 8.0}
    assert [lp.line for lp in a.counts.loops] == [9, 12, 15]  # (the source's rows)


@pytest.mark.parametrize(
    "inner",
    ["#pragma omp parallel for", "OMP_FOR", "OMP_PARALLEL_FOR", '_Pragma("omp parallel for")'],
)
def test_a_nested_pragma_operator_shares_its_loop(gpu, tmp_path: Path, inner: str) -> None:  # type: ignore[no-untyped-def]
    # a teams region over rows whose inner loop an `omp parallel for` shares: written as a
    # `#pragma` line, an object-like macro's operator (directly or through PRAGMA) or the
    # operator itself, the same
    # iterations and counts (before: the operators left the inner loop to each team's
    # first thread)
    src = PRAGMA_MACROS + (
        "void rows(int n, int m, const float *in, float *out) {\n"
        "  #pragma omp target teams distribute map(to: in[0:n*m]) map(from: out[0:n*m])\n"
        "  for (int i = 0; i < n; i++) {\n"
        f"    {inner}\n"
        "    for (int j = 0; j < m; j++)\n"
        "      out[i * m + j] = 2.0f * in[i * m + j];\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="m.cpp", args="n=1024 m=1024")
    base = count(
        gpu, tmp_path, src.replace(f"    {inner}\n", "    #pragma omp parallel for\n"),
        name="b.cpp", args="n=1024 m=1024",
    )  # fmt: skip
    assert (a.threads, a.counts.flops["fp32"]) == (base.threads, base.counts.flops["fp32"])
    assert a.threads == 1024 * 1024 and a.counts.flops["fp32"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("region", "pragmas"),
    [
        ("combined", "#pragma acc parallel loop gang vector copyin(x[0:n]) copy(y[0:n])"),
        ("combined", "PRAGMA(acc parallel loop gang vector copyin(x[0:n]) copy(y[0:n]))"),
        ("stacked", "#pragma acc parallel copyin(x[0:n]) copy(y[0:n])\n  #pragma acc loop gang"),
        (
            "stacked",
            '_Pragma("acc parallel copyin(x[0:n]) copy(y[0:n])")\n  _Pragma("acc loop gang")',
        ),
    ],
)
def test_an_openacc_region_of_pragma_operators_shares_its_loop(  # type: ignore[no-untyped-def]
    gpu, tmp_path: Path, region: str, pragmas: str
) -> None:
    # y[i] += 2 * x[i] over n = 2^24: one iteration each (2 FP32 FLOP), the loop shared by
    # the gangs whether the directives are lines or operators, combined or stacked (before:
    # the stacked operators' region ran gang-redundant, 4096 gangs each the whole loop)
    src = PRAGMA_MACROS + (
        "void saxpy(int n, float *restrict y, const float *restrict x) {\n"
        f"  {pragmas}\n"
        "  for (int i = 0; i < n; i++) y[i] += 2.0f * x[i];\n"
        "}\n"
        "int main() { int n = 1 << 24; float *x, *y; saxpy(n, y, x); }\n"
    )
    a = count(gpu, tmp_path, src, name=f"{region}.c")
    assert a.threads == 2**24
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
