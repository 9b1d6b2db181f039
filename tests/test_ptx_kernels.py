"""Tests of roofline_lsp.compiler.ptx_kernels: looking kernels up in a parsed module."""

from __future__ import annotations

from ptx_helpers import load

from roofline_lsp.compiler.ptx_kernels import counts_for_kernel, find_kernels


def test_kernel_lookup_by_mangled_and_base_name() -> None:
    m = load("saxpy.ptx")
    assert find_kernels(m, "_Z5saxpyifPKfPf") == find_kernels(m, "saxpy")
    assert counts_for_kernel(m, "not_there") is None


# A hand-written PTX module in nvcc's format: a kernel calling a .func (not inlined), an
# inlined helper with a two-level inlined_at chain, a vector load, f16x2 and special functions,
