"""Labelled dataset rows (``evaluation/dataset.py``): what of a row reaches the estimator."""

from __future__ import annotations

from roofline_lsp.evaluation.dataset import Row, instantiation


def test_the_instance_s_template_arguments_come_from_the_demangled_signature():
    assert instantiation("void conv1d<double>(double const*, double*, int)", "conv1d") == (
        "double",
    )
    assert instantiation("void post<__half, 1>(T1 *, const T1 *, float, int)", "post") == (
        "__half",
        "1",
    )
    assert instantiation(
        "void resize<unsigned char, 8ul>(unsigned char const*, float*)", "resize"
    ) == ("unsigned char", "8ul")
    # nested template arguments stay whole; a parameter's template is not the kernel's
    assert instantiation("void k<Pair<int, float>, 4>(int)", "k") == ("Pair<int, float>", "4")
    assert instantiation("k(Param<__nv_fp8_e4m3, __nv_bfloat16>)", "k") == ()
    assert instantiation("void knock<float>(int)", "k") == ()  # the name, not a prefix
    assert instantiation("void miniFE::dot<double>(int)", "miniFE::dot") == ("double",)
    assert instantiation("", "k") == ()


def test_a_row_passes_its_launch_and_instance_to_the_estimator():
    row = Row(
        {
            "file": "p/main.cpp",
            "line": 9,
            "kernel": "scale",
            "signature": "void scale<double>(int, double const*, double*)",
            "block": [256, 1, 1],
            "grid": [64, 1, 1],
            "exe_args": "100",
            "label": "bandwidth",
        }
    )
    inputs = row.inputs()
    assert inputs.instantiation == ("double",)
    assert (inputs.block, inputs.grid, inputs.args) == ((256, 1, 1), (64, 1, 1), "100")
