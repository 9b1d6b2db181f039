"""The libdevice costs of ``estimate/costs.py`` against what nvcc makes of each function
(the counter's table is what a call costs where the compiler's counts are not at hand: source
mode, OpenMP regions whose math clang only calls, a helper that falls back)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ptx_helpers import NVCC, needs_nvcc

from roofline_lsp.compiler.compile_jobs import compile_ptx
from roofline_lsp.compiler.instruction_mix import LineMix, opcode_mix
from roofline_lsp.compiler.ptx_parser import PtxModule, parse_ptx
from roofline_lsp.estimate.costs import MATH_F32, MATH_F64

# no branch: the compiler's count is the count of every call
STRAIGHT_F64 = ("erf",)
STRAIGHT_F32 = ("exp", "tanh", "exp2", "sinh", "cosh", "acos", "cbrt", "expm1")
# branches on the argument's range or special values: the table is the common path, at most
# every path at once (a slow path for huge arguments, Payne-Hanek reduction, left out)
BRANCHY_F64 = ("exp", "log", "log10", "pow", "sin", "cos", "tanh", "atan2", "exp2", "sinh",
               "cosh", "atan", "acos", "cbrt", "log1p", "expm1")  # fmt: skip
BRANCHY_F32 = ("log", "log10", "pow", "sin", "cos", "erf", "atan2", "atan", "log1p")
TWO_ARGS = ("pow", "atan2")


def _total(module: PtxModule, name: str) -> LineMix:
    f = module.functions[name]
    total = f.total
    for c in f.calls:
        if "slowpath" not in c:
            total = total + _total(module, c)
    return total


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LineMix]:
    """Each function's FLOPs per call, every path (kernel ``k_<name>`` calling it once)."""
    src: list[str] = []
    for names, t, suffix in ((BRANCHY_F64 + STRAIGHT_F64, "double", ""),
                             (BRANCHY_F32 + STRAIGHT_F32, "float", "f")):  # fmt: skip
        for n in dict.fromkeys(names):
            args = "a[i], a[i + 1]" if n in TWO_ARGS else "a[i]"
            src.append(
                f"__global__ void k_{n}{suffix}(const {t} *a, {t} *b) "
                f"{{ int i = threadIdx.x; b[i] = {n}{suffix}({args}); }}"
            )
    path = Path(tmp_path_factory.mktemp("costs")) / "math.cu"
    path.write_text("\n".join(src) + "\n")
    assert NVCC is not None
    res = compile_ptx(str(path), None, NVCC, "sm_86", mode="release")
    assert res.ok, res
    module = parse_ptx(res.ptx)
    out = {}
    for f in module.functions.values():
        if f.is_kernel:
            out[f.base_name.removeprefix("k_")] = _total(module, f.name)
    return out


@needs_nvcc
@pytest.mark.parametrize("name", STRAIGHT_F64 + tuple(n + "f" for n in STRAIGHT_F32))
def test_a_function_without_branches_costs_what_the_compiler_makes_of_it(compiled, name):
    f64 = not name.endswith("f") or name == "erf"
    mix = compiled[name]
    table = MATH_F64[name] if f64 else MATH_F32[name[:-1]]
    assert mix.branches == 0, f"{name} branches now: move it to the BRANCHY lists"
    assert table[0] == (mix.flops_fp64 if f64 else mix.flops_fp32), name


@needs_nvcc
@pytest.mark.parametrize("name", BRANCHY_F64 + tuple(n + "f" for n in BRANCHY_F32))
def test_a_function_with_branches_costs_at_most_every_path(compiled, name):
    f64 = name in BRANCHY_F64 and not (name.endswith("f") and name[:-1] in BRANCHY_F32)
    mix = compiled[name]
    flops = mix.flops_fp64 if f64 else mix.flops_fp32
    table = MATH_F64[name] if f64 else MATH_F32[name[:-1]]
    # the common path is most of it: a table far below every path has missed a part
    assert 0.5 * flops <= table[0] <= flops, (name, flops)


def test_the_table_s_divisions_cost_what_the_compiled_counts_charge() -> None:
    # an IEEE division's integer instructions: the fp64 fast path's range check (1) and the
    # slow path's expected share (fp32 2, fp64 5), the same in source and compiled counts
    assert MATH_F32["div"][1] == opcode_mix("div.rn.f32").int_ops == 2
    assert MATH_F64["div"][1] == opcode_mix("div.rn.f64").int_ops == 6
