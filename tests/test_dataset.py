"""Dataset rows: the launch inputs a row gives its kernel."""

from __future__ import annotations

import pytest

from roofline_lsp.evaluation.dataset import Row, instantiation


@pytest.mark.parametrize(
    ("signature", "name", "args"),
    [
        ("double dot<double>(double const*, double const*)", "dot", ("double",)),
        ("void conv<double, 2>(double const*, int)", "conv", ("double", "2")),
        ("void resize<unsigned char, 8ul>(int)", "resize", ("unsigned char", "8ul")),
        ("void scale(float*, int)", "scale", ()),
        ("main", "main", ()),
        # a template class's member: the function itself is no template
        ("ns::Op<int>::operator()(int)", "ns::Op<int>::operator()", ()),
    ],
)
def test_instantiation_from_the_signature(signature: str, name: str, args: tuple[str, ...]) -> None:
    assert instantiation(signature, name) == args


def test_row_inputs_carry_the_instantiation() -> None:
    row = Row(
        {
            "file": "a.cpp",
            "line": 3,
            "kernel": "dot",
            "signature": "double dot<double>(double const*, double const*)",
            "block": [256, 1, 1],
            "grid": [80, 1, 1],
        }
    )
    inputs = row.inputs()
    assert inputs.template_args == ("double",)
    assert inputs.block == (256, 1, 1) and inputs.grid == (80, 1, 1)
