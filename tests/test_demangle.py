"""Tests of roofline_lsp.compiler.demangle: base names of mangled symbols."""

from __future__ import annotations

import pytest

from roofline_lsp.compiler.demangle import ptx_base_name, spells_template_args


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


@pytest.mark.parametrize(
    ("symbol", "args", "spelled"),
    [
        ("_Z10testKernelIhEvPT_PKS0_i", ("unsigned char",), True),
        ("_Z10testKernelIhEvPT_PKS0_i", ("float",), False),
        ("_ZN2ns3runIfEEvv", ("const float",), True),  # a nested name's last component
        ("_Z14update_latticeILb1EEvPaPKfS2_ll", ("true",), True),  # bool: Lb1E
        ("_Z14update_latticeILb1EEvPaPKfS2_ll", ("false",), False),
        # an OpenMP entry: its enclosing function's arguments, in order, all of them
        (
            "__omp_offloading_10309_2f26b3d__Z16run_gmem_atomicsILi3ELi256E6float4EdPT1_iiPjb_l55",
            ("3", "256", "float4"),
            True,
        ),
        (
            "__omp_offloading_10309_2f26b3d__Z16run_gmem_atomicsILi3ELi256E6float4EdPT1_iiPjb_l55",
            ("3", "256"),
            False,
        ),
        ("_Z3foov", ("float",), False),  # no template arguments
        ("_Z10testKernelIhEvPT_PKS0_i", ("Vector<double>",), False),  # not spelled here
    ],
)
def test_spells_template_args(symbol: str, args: tuple[str, ...], spelled: bool) -> None:
    assert spells_template_args(symbol, args) is spelled
