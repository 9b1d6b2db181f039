"""``#if``/``#ifdef`` branches of ``#define`` (``syntax/conditionals.py``) on a hand-written
fixture and on small sources."""

from pathlib import Path

from roofline_lsp.detect.kernels import detect
from roofline_lsp.syntax.conditionals import active_text, branch_taken, defined_before, file_defined
from roofline_lsp.syntax.parsing import parse

FIXTURES = Path(__file__).parent / "fixtures" / "detect"


def test_definitions_come_from_the_branch_the_preprocessor_takes() -> None:
    path = FIXTURES / "branch_defs.cpp"
    det = detect(path.read_bytes(), str(path))
    body = {name: m.body for name, m in det.macros.items()}
    assert body["FP"] == "float"  # DOUBLE_PRECISION is defined nowhere: the #else
    assert body["WIDE"] == "long"  # USE_WIDE comes from the included header
    assert body["Real"] == "float"  # PRECISION == 1 from the #ifndef default above
    assert body["THREADS"] == "128"  # neither WG_SIZE_0 nor WG_SIZE: the last #else
    assert det.constants["THREADS"] == "128"
    # the compiler's own __CUDACC__ is unknown: the first definition, as before
    assert body["DEV"] == "__device__"
    # a name defined only on a skipped branch keeps that definition
    assert det.macros["TRACE"].params == ("x",)


def _defines(src: bytes) -> list[tuple[str, bool | None]]:
    root = parse(src).root_node
    nodes = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "preproc_def":
            nodes.append(n)
        stack.extend(reversed(n.named_children))
    starts: dict[str, list[int]] = {}
    values: dict[str, str] = {}
    for n in nodes:
        name = n.child_by_field_name("name")
        value = n.child_by_field_name("value")
        assert name is not None and name.text is not None
        starts.setdefault(name.text.decode(), []).append(n.start_byte)
        if value is not None and value.text is not None:
            values.setdefault(name.text.decode(), value.text.decode().strip())
    defined = defined_before(starts, set())
    out = []
    for n in nodes:
        value = n.child_by_field_name("value")
        body = value.text.decode().strip() if value is not None and value.text else ""
        out.append((body, branch_taken(n, defined, values)))
    return out


def test_nested_and_elif_branches() -> None:
    src = b"""#define A 2
#if A > 1
#  if defined(B) || A == 2
#    define X one
#  else
#    define X two
#  endif
#elif A == 0
#  define X three
#endif
"""
    assert _defines(src) == [("2", True), ("one", True), ("two", False), ("three", False)]


def test_a_guard_defined_after_its_test_and_unknown_conditions() -> None:
    src = b"""#ifndef GUARD_H
#define GUARD_H 1
#endif
#if N_FROM_BUILD > SIZE_FROM_HEADER(3)
#define Y big
#endif
#if defined(__CUDA_ARCH__)
#define Z device
#endif
"""
    # N_FROM_BUILD is 0 (defined nowhere) but the function-like call cannot be evaluated;
    # __CUDA_ARCH__ is the compiler's: both undecided
    assert _defines(src) == [("1", True), ("big", None), ("device", None)]


def test_enumerators_and_constants_come_from_the_branch_taken_too(tmp_path: Path) -> None:
    # minisweep's `#ifdef NU_VALUE enum { NU = NU_VALUE }; #else enum { NU = 4 }; #endif`:
    # NU_VALUE is defined nowhere, so NU is 4 (it was the unevaluable first one)
    path = tmp_path / "k.cu"
    # (a file-scope constant inside the branches was not read at all: NE = 16)
    path.write_bytes(
        b"#ifdef NU_VALUE\nenum { NU = NU_VALUE };\nconst int NE = NU_VALUE * 2;\n"
        b"#else\nenum { NU = 4 };\nconst int NE = 16;\n#endif\n"
        b"void host() {\n#ifdef SMALL\n  const int local = 2;\n#endif\n}\n"
        b"__global__ void k(float *x) { x[threadIdx.x] = NU + NE; }\n"
    )
    det = detect(path.read_bytes(), str(path))
    assert (det.constants["NU"], det.constants["NE"]) == ("4", "16")
    assert "local" not in det.constants  # a function's locals are read per launch site


def test_active_text_is_what_the_compiler_reads() -> None:
    # DEBUG is defined in the file (its #else goes), VERIFY nowhere (a -D flag may define
    # it: both branches stay), ``#if 0`` goes; directive lines become blanks, newlines stay
    src = (
        b"#define DEBUG 1\n"
        b"void f(int *n) {\n"
        b"#ifdef DEBUG\n  n[0] = 1;\n#else\n  n[0] = 2;\n#endif\n"
        b"#ifdef VERIFY\n  n[1] = 3;\n#else\n  n[1] = 4;\n#endif\n"
        b"#if 0\n  n[2] = 5;\n#endif\n"
        b"}\n"
    )
    fn = next(n for n in parse(src).root_node.named_children if n.type == "function_definition")
    got = active_text(fn, file_defined(fn))
    assert got.count("\n") == fn.text.count(b"\n")  # lines keep their numbers
    assert got.split() == ["void", "f(int", "*n)", "{", "n[0]", "=", "1;"] + [
        "n[1]",
        "=",
        "3;",
        "n[1]",
        "=",
        "4;",
        "}",
    ]
