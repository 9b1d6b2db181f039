"""Normalised kernel text (what cache keys and few-shot retrieval compare)."""

from __future__ import annotations

from roofline_lsp.llm.kernel_source import normalise_kernel_source


def test_normalise_removes_comments_and_whitespace_only():
    a = 'int x = 1; // one\n/* block\n comment */ float  y=x+ 2;\nconst char *s = "a // b";\n'
    b = 'int x=1;float y = x + 2;\n\n   const char*s="a // b";'
    assert normalise_kernel_source(a) == normalise_kernel_source(b)
    assert "a // b" in normalise_kernel_source(a)
    assert normalise_kernel_source("a + +b") != normalise_kernel_source("a ++b")
    assert normalise_kernel_source("unsigned int x") != normalise_kernel_source("unsignedint x")
    assert normalise_kernel_source("#define N 4 \\\n + 1\n") == "#define N 4+1"
    assert normalise_kernel_source("c = '/'; // x") == "c='/';"
