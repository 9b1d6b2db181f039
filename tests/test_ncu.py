"""Measured verdicts from hand-written Nsight Compute CSV exports (tests/fixtures/ncu)."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from roofline_lsp.cli.main import main
from roofline_lsp.detect.kernels import detect
from roofline_lsp.measured.ncu import ProfileError, base_name, load_profile, ncu_base_name
from roofline_lsp.model.gpus import load_registry

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
RAW = FIXTURES / "profile_raw.csv"


@pytest.fixture(scope="module")
def registry():
    return load_registry()


def kernels(name: str):
    path = FIXTURES / name
    return {k.name: k for k in detect(path.read_bytes(), str(path)).kernels}


def test_raw_export_parses_every_launch():
    p = load_profile(str(RAW))
    assert [x.base for x in p.launches] == [
        "saxpy",
        "saxpy",
        "poly_eval",
        "dp_update",
        "relax",
        "relax",
    ]
    saxpy = p.launches[1]
    assert saxpy.id == "1" and saxpy.block == "(256, 1, 1)" and saxpy.grid == "(65536, 1, 1)"
    assert saxpy.time_ns == 265_216 and saxpy.device == "NVIDIA GeForce RTX 3080"
    assert saxpy.bytes_read == 134_217_728 and saxpy.bytes_written == 67_108_864
    # FLOPs = add + mul + 2 * fma
    assert saxpy.ops == {"fp64": 0.0, "fp32": 2 * 16_777_216, "fp16": None, "int": 150_994_944}
    assert p.launches[4].offload_line == 4


def test_verdicts_from_the_fastest_launch(registry):
    p = load_profile(str(RAW))
    rtx = registry.get("rtx3080")
    ks = kernels("kernels.cu")
    v = p.verdict_for(ks["saxpy"], rtx)
    assert v is not None
    assert (v.source, v.confidence, v.bound, v.kernel, v.gpu) == (
        "profile",
        1.0,
        "bandwidth",
        "saxpy",
        rtx.name,
    )
    assert v.extra["measured"]["launch_id"] == "1"  # 265 us beats the first launch's 292 us
    assert v.ai["fp32"] == pytest.approx(33_554_432 / 201_326_592)
    assert v.ai["int"] == pytest.approx(150_994_944 / 201_326_592)
    assert v.ai["fp16"] is None
    assert v.ridge == rtx.ridges()
    assert "fastest of 2 launches" in v.rationale and "Nsight Compute" in v.rationale

    poly = p.verdict_for(ks["poly_eval"], rtx)  # `void poly_eval<float>(const T1 *, ...)`
    assert poly is not None and poly.bound == "compute" and poly.deciding == "fp32"
    assert poly.ai["fp32"] == pytest.approx(805_306_368 / 8_388_608)
    assert p.verdict_for(ks["not_profiled"], rtx) is None


def test_the_target_gpu_decides(registry):
    """The same measurement is compute-bound where FP64 is scarce, bandwidth-bound where not."""
    p = load_profile(str(RAW))
    k = kernels("kernels.cu")["dp_update"]
    on_rtx = p.verdict_for(k, registry.get("rtx3080"))
    on_h100 = p.verdict_for(k, registry.get("h100"))
    assert on_rtx is not None and on_h100 is not None
    assert (on_rtx.bound, on_rtx.deciding) == ("compute", "fp64")
    assert on_h100.bound == "bandwidth"
    assert on_rtx.ai["fp64"] == pytest.approx(67_108_864 / 70_778_880)


def test_openmp_regions_match_by_function_and_pragma_line(registry):
    p = load_profile(str(RAW))
    ks = kernels("relax.cpp")
    v = p.verdict_for(ks["relax"], registry.get("rtx3080"))
    assert v is not None and v.bound == "bandwidth"
    assert v.ai["fp32"] == pytest.approx(83_886_070 / 201_326_592)
    assert p.verdict_for(ks["other"], registry.get("rtx3080")) is None
    # a CUDA kernel never matches an OpenMP symbol of the same function name
    cuda_named_relax = detect(b"__global__ void relax(float *u) { u[0] = 1; }\n", "r.cu")
    assert p.verdict_for(cuda_named_relax.kernels[0], registry.get("rtx3080")) is None


def test_scaled_units_and_mangled_names(registry):
    p = load_profile(str(FIXTURES / "profile_scaled_units.csv"))
    (launch,) = p.launches
    assert launch.base == "saxpy"
    assert launch.dram_bytes == pytest.approx(134_220_000 + 65_536_000)
    assert launch.time_ns == pytest.approx(270_000)
    assert launch.ops["fp32"] == pytest.approx(33_554_432)
    assert launch.ops["int"] == pytest.approx(150_994_944)
    v = p.verdict_for(kernels("kernels.cu")["saxpy"], registry.get("h100"))
    assert v is not None and v.bound == "bandwidth"


def test_roofline_set_rates(registry):
    """``--set roofline`` exports per-cycle rates; counts are rate x clock x duration."""
    p = load_profile(str(FIXTURES / "profile_roofline_set.csv"))
    (launch,) = p.launches
    assert launch.dram_bytes == pytest.approx(1e6)  # 10 GB/s for 100 us
    assert launch.ops["fp32"] == pytest.approx((400 + 200) * 1.5e9 * 1e-4)
    assert launch.ops["fp64"] == pytest.approx(0.0)
    assert launch.ops["int"] == pytest.approx(5e6)
    v = p.verdict_for(kernels("kernels.cu")["poly_eval"], registry.get("rtx3080"))
    assert v is not None and v.bound == "compute" and v.ai["fp32"] == pytest.approx(90.0)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("saxpy(int, float, const float *, float *)", ("saxpy", None)),
        ("void saxpy<float>(int, float, float *)", ("saxpy", None)),
        ("saxpy", ("saxpy", None)),
        ("void ns::inner::scale<float, 4>(T1 *, int)", ("scale", None)),
        ("(anonymous namespace)::hidden(int)", ("hidden", None)),
        ("void reduce<(int)256, std::less<int>>(int *)", ("reduce", None)),
        ("_Z5saxpyifPKfPf", ("saxpy", None)),
        ("_ZN2ns5scaleIfEEvPT_i", ("scale", None)),
        ("__omp_offloading_10302_4a1b2c_relax_l4", ("relax", 4)),
        ("__omp_offloading_10309_2f04138_my_func_name_l123", ("my_func_name", 123)),
        ("__omp_offloading_fd02_1c2e3__ZN11GSimulation5StartEv_l162", ("Start", 162)),
        ("main_57_gpu", ("main", 57)),
        ("nvkernel_compute_F1L88_2", ("compute", 88)),
        ("__omp_offloading_1_2__Z9allenCahnPA400_A400_dS1_dd_l160", ("allenCahn", 160)),
        ("__omp_offloading_1_2__ZN2ns6MatvecINS_3MatIdEEEclERS2__l52", ("operator()", 52)),
    ],
)
def test_kernel_names(name, expected):
    assert base_name(name) == expected


def test_demangle_base_rejects_non_mangled():
    assert ncu_base_name("saxpy") is None
    assert ncu_base_name("_Z") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "not an Nsight Compute CSV"),
        ("just,some,csv\n1,2,3\n", "not an Nsight Compute CSV"),
        (
            '"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","k","SOL","DRAM Throughput","%","12"\n',
            "'details' page",
        ),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"0","k","12"\n', "no DRAM traffic column"),
        (
            '"ID","Kernel Name","dram__bytes.sum"\n"","","byte"\n"0","k","12"\n',
            "no instruction counts",
        ),
        (
            '"ID","Kernel Name","dram__bytes.sum",'
            '"smsp__sass_thread_inst_executed_op_integer_pred_on.sum"\n'
            '"","","byte","inst"\n"0","k","lots","3"\n',
            ":3: dram__bytes.sum: not a number ('lots')",
        ),
        (
            '"ID","Kernel Name","dram__bytes.sum",'
            '"smsp__sass_thread_inst_executed_op_integer_pred_on.sum"\n"0","k"\n',
            ":2: 2 columns where the header has 4",
        ),
        (
            '"ID","Kernel Name","dram__bytes.sum",'
            '"smsp__sass_thread_inst_executed_op_integer_pred_on.sum"\n"","","byte","inst"\n',
            "no kernel launches",
        ),
    ],
)
def test_malformed_exports_give_one_line_errors(tmp_path, content, message):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    with pytest.raises(ProfileError) as err:
        load_profile(str(f))
    text = str(err.value)
    assert message in text and "\n" not in text and text.startswith(str(f))


def test_missing_file(tmp_path):
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(str(tmp_path / "none.csv"))


def test_check_with_profile_prints_measured_verdicts():
    out, err = io.StringIO(), io.StringIO()
    files = [str(FIXTURES / "kernels.cu"), str(FIXTURES / "relax.cpp")]
    with redirect_stderr(err):
        rc = main(["check", *files, "--gpu", "rtx3080", "--profile", str(RAW)], out=out)
    assert rc == 0, err.getvalue()
    lines = {
        line.split(": ", 1)[1].split(" [")[0]: line
        for line in out.getvalue().splitlines()
        if ": note: [RL" not in line  # the advice under each kernel
    }
    assert lines["saxpy"].endswith("[profile]") and "bandwidth-bound" in lines["saxpy"]
    assert lines["poly_eval"].endswith("[profile]") and "compute-bound" in lines["poly_eval"]
    assert lines["dp_update"].endswith("[profile]") and "compute-bound" in lines["dp_update"]
    assert lines["relax"].endswith("[profile]")
    static = re.compile(r"\[static(, PTX counts)?\]$")  # PTX counts when nvcc compiled it
    assert static.search(lines["not_profiled"]) and static.search(lines["other"])


def test_check_with_a_bad_profile_is_a_usage_error(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("nothing here\n")
    err = io.StringIO()
    with redirect_stderr(err):
        rc = main(["check", str(FIXTURES / "kernels.cu"), "--profile", str(bad)], out=io.StringIO())
    assert rc == 2
    assert err.getvalue().count("\n") == 1 and "not an Nsight Compute CSV" in err.getvalue()
