"""Tests of roofline_lsp.compiler.demangle: base names of mangled symbols."""

from __future__ import annotations

import pytest

from roofline_lsp.compiler.demangle import ptx_base_name


@pytest.mark.parametrize(
    ("symbol", "base"),
    [
        ("_Z5saxpyifPKfPf", "saxpy"),
        ("_ZN2ns6kernelIfEEvPT_i", "ns::kernel"),
        ("_ZN3foo3barIiE3bazEv", "foo::bar::baz"),
        ("_Z6kernelILi128EEvPfi", "kernel"),
        ("_Z4gemmIN3cub4PairIfiEELi16ES0_EvPT_", "gemm"),
        ("_ZL7staticKPf", "staticK"),
        ("_ZNSt6vectorIiE4sizeEv", "std::vector::size"),
        ("_ZNK3Foo3getEv", "Foo::get"),
        ("__omp_offloading_fe00_1a2b_main_l12", "__omp_offloading_fe00_1a2b_main_l12"),
        ("_Zbogus", "_Zbogus"),
    ],
)
def test_demangle_base(symbol: str, base: str) -> None:
    assert ptx_base_name(symbol) == base
