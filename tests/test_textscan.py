"""Text-level scanning used where a parse is broken."""

import pytest

from roofline_lsp.detect.textscan import (
    definition_end,
    kernel_ref,
    mask_outside,
    params_end,
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
