"""Compiling for counts (``compiler/compiled.py``): each kernel's counts from its file's
compile outcome, the reasons when there are none, and the ``check``/``eval`` wiring."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from cli_helpers import run
from ptx_helpers import kernel_of

from roofline_lsp.cli.main import EXIT_OK
from roofline_lsp.compiler.compiled import (
    compiled_counts_for_file,
    counts_for,
)
from roofline_lsp.compiler.compiled_file import CompiledFile
from roofline_lsp.compiler.toolchain import find_nvcc
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.syntax.required_macros import RequiredChoice

FIX = Path(__file__).parent / "fixtures" / "ptx"
GPU = load_registry().get("rtx3080")
NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
LAUNCH = Inputs(block=(256, 1, 1), grid=(64, 1, 1))


def test_missing_kernel_and_failed_compile_give_reasons():
    k, _, module = kernel_of("saxpy")
    other, _, _ = kernel_of("int_hash")
    cf = CompiledFile(str(FIX / "saxpy.cu"), None, module=module)
    assert counts_for(cf, k).ok
    assert counts_for(cf, other).reason.startswith("nvcc: kernel not in the PTX")
    failed = CompiledFile(str(FIX / "saxpy.cu"), None, reason="error: boom")
    assert counts_for(failed, k).note == "counts: source (nvcc: error: boom)"


def test_the_counts_name_the_configuration_the_build_was_given():
    k, _, module = kernel_of("saxpy")
    choice = RequiredChoice("/src/int.h", 38, ("SHORT", "INT", "LONG"))
    cf = CompiledFile(str(FIX / "saxpy.cu"), None, module=module, required=(("SHORT", choice),))
    assert counts_for(cf, k).note == (
        "counts: PTX (built with -DSHORT: int.h line 38 needs one of SHORT, INT, LONG)"
    )


def test_auto_takes_the_flops_of_an_openmp_region_and_compiler_everything():
    k, _, module = kernel_of("omp_saxpy", ".c")
    cf = CompiledFile(str(FIX / "omp_saxpy.c"), None, module=module)
    assert counts_for(cf, k, "auto").flops_only
    assert counts_for(cf, k, "compiler").ok and not counts_for(cf, k, "compiler").flops_only
    assert counts_for(cf, k, "source").reason == "clang: compiler counts off (counts=source)"
    cuda, _, cuda_module = kernel_of("saxpy")
    cuda_cf = CompiledFile(str(FIX / "saxpy.cu"), None, module=cuda_module)
    assert counts_for(cuda_cf, cuda, "auto").ok and not counts_for(cuda_cf, cuda, "auto").flops_only


def test_compiled_counts_for_file_reasons():
    import asyncio

    k, det, _ = kernel_of("saxpy")
    res = asyncio.run(
        compiled_counts_for_file(str(FIX / "saxpy.cu"), None, det, GPU, Config(counts="source"))
    )
    assert isinstance(res, str) and "source" in res
    res = asyncio.run(
        compiled_counts_for_file(
            str(FIX / "saxpy.cu"), None, det, GPU, Config(counts="auto", nvcc="/no/such/nvcc")
        )
    )
    assert isinstance(res, dict) and not res[k.line].ok
    assert "nvcc" in res[k.line].reason


# --- CLI --------------------------------------------------------------------------------------


def test_check_auto_without_nvcc_uses_source_counts_and_says_why(tmp_path):
    shutil.copy(FIX / "saxpy.cu", tmp_path / "saxpy.cu")
    code, out, _ = run(
        "check",
        str(tmp_path / "saxpy.cu"),
        "--gpu",
        "rtx3080",
        "--counts",
        "auto",
        "--nvcc",
        str(tmp_path / "nvcc"),  # not there
        "--cache-dir",
        str(tmp_path / "cache"),
        "--format",
        "json",
    )
    assert code == EXIT_OK
    (k,) = json.loads(out)
    v = k["verdicts"][0]
    assert v["bound"] in ("compute", "bandwidth")
    assert "counts: source (nvcc: nvcc setting" in v["explanation"]


def test_check_source_mode_never_compiles(tmp_path):
    shutil.copy(FIX / "saxpy.cu", tmp_path / "saxpy.cu")
    code, out, _ = run(
        "check", str(tmp_path), "--counts", "source", "--nvcc", "/bogus", "--format", "json"
    )
    assert code == EXIT_OK
    (k,) = json.loads(out)
    assert "counts:" not in k["verdicts"][0]["explanation"]


def tiny_dataset(tmp_path: Path) -> Path:
    (tmp_path / "sources" / "p").mkdir(parents=True)
    shutil.copy(FIX / "saxpy.cu", tmp_path / "sources" / "p" / "a.cu")
    row = {
        "id": "p/saxpy",
        "language": "cuda",
        "kernel": "saxpy",
        "file": "p/a.cu",
        "line": 4,
        "block": [256, 1, 1],
        "grid": [64, 1, 1],
        "label": "bandwidth",
    }
    (tmp_path / "kernels.jsonl").write_text(json.dumps(row) + "\n")
    return tmp_path


def test_eval_reports_where_counts_came_from_without_nvcc(tmp_path):
    ds = tiny_dataset(tmp_path / "ds")
    out_json = tmp_path / "r.json"
    code, _, _ = run(
        "eval", "--dataset", str(ds), "--counts", "compiler", "--nvcc", "/bogus/nvcc",
        "--cache-dir", str(tmp_path / "cache"), "--json", str(out_json),
    )  # fmt: skip
    assert code == EXIT_OK
    res = json.loads(out_json.read_text())
    assert res["counts"] == {"mode": "compiler", "ptx": 0, "source": 1}
    assert res["predictions"][0]["counts_from"] == "source"
    assert res["predictions"][0]["predicted"] == "bandwidth"


@needs_nvcc
def test_eval_with_nvcc_uses_ptx_counts(tmp_path):
    ds = tiny_dataset(tmp_path / "ds")
    out_json = tmp_path / "r.json"
    code, _, _ = run(
        "eval", "--dataset", str(ds), "--counts", "auto",
        "--cache-dir", str(tmp_path / "cache"), "--json", str(out_json),
    )  # fmt: skip
    assert code == EXIT_OK
    res = json.loads(out_json.read_text())
    assert res["counts"]["ptx"] == 1
    assert res["predictions"][0]["counts_from"] == "ptx"
    assert res["predictions"][0]["explanation"].endswith("counts: PTX")
    assert "4 integer ops" in res["predictions"][0]["explanation"]


def test_the_cache_directory_setting_moves_the_compile_cache(tmp_path):
    from dataclasses import replace

    from roofline_lsp.compiler.compiled import default_cache
    from roofline_lsp.model.config import Config
    from roofline_lsp.store.cache import default_cache_dir

    cfg = Config()
    assert default_cache(cfg).directory == default_cache_dir()
    moved = replace(cfg, llm=replace(cfg.llm, cache_dir=str(tmp_path)))
    cache = default_cache(moved)
    assert cache.directory == str(tmp_path) and cache.namespace == "ptx"


DISTANCE = """\
__global__ void dist(const float *x, const float *y, float *d, float *e, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    d[i] = sqrtf(x[i] * x[i] + y[i] * y[i]);
    e[i] = __fsqrt_rn(x[i]);
  }
}
"""


@needs_nvcc
@pytest.mark.parametrize(("build", "fp32"), [("nvcc", 3 + 6 + 6), ("clang", 3 + 0 + 6)])
def test_sqrtf_is_counted_as_the_build_compiler_builds_it(tmp_path, build, fp32):
    # x*x + y*y: FMUL + FFMA (3 FLOP). nvcc's sqrtf is sqrt.rn.f32 (MUFU.RSQ, 2 FMUL + 2 FFMA:
    # 6 FLOP); clang's (libdevice without __CUDA_PREC_SQRT) is sqrt.approx.f32, one MUFU.SQRT
    # (0), which nvcc -prec-sqrt=false reproduces. __fsqrt_rn is IEEE-rounded in both (6).
    import asyncio

    from roofline_lsp.detect.kernels import detect
    from roofline_lsp.estimate.roofline import analyze

    src = tmp_path / "dist.cu"
    src.write_text(DISTANCE)
    det = detect(src.read_bytes(), str(src))
    cfg = Config(counts="compiler", build_compiler=build, nvcc=NVCC)
    cfg = replace(cfg, llm=replace(cfg.llm, cache_dir=str(tmp_path / "cache")))
    res = asyncio.run(compiled_counts_for_file(str(src), None, det, GPU, cfg))
    assert isinstance(res, dict)
    k = det.kernels[0]
    assert res[k.line].ok, res[k.line].reason
    launch = Inputs(block=(256, 1, 1), grid=(4, 1, 1), values=(("n", 1024.0),))
    a = analyze(k, det, GPU, launch, cfg, compiled=res[k.line])
    assert a.counts.flops["fp32"] == pytest.approx(fp32)
