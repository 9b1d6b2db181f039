"""Text-level scanning used where a parse is broken."""

import pytest

from roofline_lsp.detect.textscan import (
    definition_end,
    function_block,
    kernel_ref,
    mask_outside,
    params_end,
    repaired,
    statement_end,
    strip_comments,
)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("k", "k"),
        ("(void*)k", "k"),
        ("&ns::k", "k"),
        ("k<T, 4>", "k"),
        ("HIP_KERNEL_NAME(k<float>)", "k"),
    ],
)
def test_kernel_ref(text: str, name: str) -> None:
    assert kernel_ref(text) == name


def test_definition_and_parameter_ends() -> None:
    src = b"__global__ void __launch_bounds__(256) k(int n) { if (n) { n++; } } int x;"
    start = len(b"__global__")
    end = definition_end(src, start)
    assert end is not None and src[:end].endswith(b"} }")
    close = params_end(src, start, src.find(b"{"))
    assert close is not None and src[: close + 1].endswith(b"(int n)")
    assert definition_end(b"__global__ void k(int n);", start) is None


def test_statement_end_and_mask() -> None:
    src = b"for (i = 0; i < n; i++) { a[i] = 0; } rest;"
    end = statement_end(src, 0)
    assert end is not None and src[:end].endswith(b"}")
    masked = mask_outside(b"ab\ncd\nef", 3, 5)
    assert masked == b"  \ncd\n  "


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4096       // accumulation count", "4096"),
        ("(1 << 20) /* elements */", "(1 << 20)"),
        ('"a//b" // c', '"a//b"'),
        ("x / 2", "x / 2"),
    ],
)
def test_strip_comments(text: str, value: str) -> None:
    # a `#define N 4096 // comment` value is the number, not the comment
    assert strip_comments(text) == value


def test_a_repaired_copy_keeps_one_branch_of_each_conditional_and_drops_empty_macros() -> None:
    # braces split across #ifdef branches: of each #if, the branch holding the offset to
    # keep (else the first) stays; `DEV`, defined empty, is blanked where used but not in
    # its #define; every line and offset is unchanged
    src = (
        b"#define DEV\n"
        b"DEV static int f(int n) {\n"
        b"#ifdef FAST\n"
        b"  if (n > 0) {\n"
        b"#else\n"
        b"  if (n > 1) {\n"
        b"#endif\n"
        b"    n++;\n"
        b"  }\n"
        b"  return n;\n"
        b"}\n"
    )
    keep_else = src.find(b"n > 1")
    out = repaired(src, keep_else, ["DEV"])
    assert len(out) == len(src) and out.count(b"\n") == src.count(b"\n")
    lines = out.decode().split("\n")
    assert lines[0] == "#define DEV" and lines[1].startswith("    static int f")
    assert [ln.strip() for ln in lines[2:7]] == ["", "", "", "if (n > 1) {", ""]
    first = repaired(src, 0, ()).decode().split("\n")
    assert [ln.strip() for ln in first[2:7]] == ["", "if (n > 0) {", "", "", ""]


def test_the_function_around_an_offset_is_found_by_its_braces() -> None:
    # through a namespace, past a struct, with braces in a comment, a string, a character
    # literal and a multi-line macro; an offset at file scope has none
    src = (
        b"#define M(a) \\\n  { a }\n"
        b"namespace ns {\n"
        b"struct S { int x; };\n"
        b"EXPORT static int f(int n) // {\n"
        b"{\n"
        b"  for (int i = 0; i < n; i++) {\n"
        b"    x = \"}\"; c = '{'; /* { */\n"
        b"  }\n"
        b"}\n"
        b"}\n"
    )
    block = function_block(src, src.find(b"x = "))
    assert block is not None
    head, brace, end = block
    assert src[head:brace].strip().startswith(b"EXPORT static int f(int n)")
    assert src[brace:end].startswith(b"{") and src[:end].endswith(b"  }\n}")
    assert function_block(src, src.find(b"int x")) is None
    # `class` in a template header and `struct` in a parameter list are a function's
    templated = (
        b"template <class T>\n"
        b"void scale(struct Box *b, T *a, int n)\n"
        b"{\n"
        b"  for (int i = 0; i < n; i++) a[i] *= 2;\n"
        b"}\n"
    )
    block = function_block(templated, templated.find(b"for"))
    assert block is not None and block[0] == 0 and block[2] == len(templated) - 1
