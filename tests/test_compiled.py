"""Tests of roofline_lsp.compiled: PTX per-line counts substituted into the estimator's
source-level counts (checked-in PTX of our own fixtures, no compiler needed), the fallbacks
when there is no compiler, and the CLI/eval wiring."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from roofline_lsp.cli.main import EXIT_OK, main
from roofline_lsp.compiler import ptx
from roofline_lsp.compiler.compiled import (
    CompiledCounts,
    compiled_counts_for_file,
    counts_for,
    kernel_ptx,
)
from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.roofline import Inputs, analyze, estimate
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry

FIX = Path(__file__).parent / "fixtures" / "ptx"
GPU = load_registry().get("rtx3080")
NVCC = ptx.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
LAUNCH = Inputs(block=(256, 1, 1), grid=(64, 1, 1))


def kernel_of(name: str, ext: str = ".cu"):
    path = FIX / f"{name}{ext}"
    det = detect(path.read_bytes(), str(path))
    (k,) = det.kernels
    module = ptx.parse_ptx((FIX / f"{name}.ptx").read_text())
    return k, det, module


def both(name: str, inputs: Inputs, ext: str = ".cu"):
    k, det, module = kernel_of(name, ext)
    kp = kernel_ptx(module, k)
    assert kp is not None
    src = analyze(k, det, GPU, inputs)
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    return src, comp


# saxpy.cu, per thread (every line runs once; the bound check passes for all 16384 threads):
#   line 4  (kernel line)   ld.param only                         int 0
#   line 6  i = blockIdx.x * blockDim.x + threadIdx.x: mad.lo     int 1
#   line 7  if (i < n): setp + bra                                int 1
#   line 8  y[i] = a*x[i] + y[i]: 2 address adds (mul.wide fused) int 2, one fma: 2 FP32 FLOP
# -> 2 FP32 FLOP, 4 integer instructions (the source count says 6: it books a 2-instruction
#    prologue on the kernel line that the PTX does not have)
def test_saxpy_substitution():
    src, comp = both("saxpy", LAUNCH)
    assert src.counts.int_ops == 6  # the source model, for contrast
    assert comp.counts.flops == {"fp64": 0.0, "fp32": 2.0, "fp16": 0.0}
    assert comp.counts.int_ops == pytest.approx(4.0)
    assert comp.counts.lines[8] == (0.0, 2.0, 0.0, 2.0)
    # the memory model is the source one
    assert comp.memory.dram_bytes == src.memory.dram_bytes
    assert comp.counts.accesses == src.counts.accesses


# dot_fp64.cu with m = 100 columns, rows = every thread (the early return never taken):
#   line 11 r = ...: mad.lo                                        int 1
#   line 12 if (r >= rows) return: setp                            int 1
#   line 14 for (k...): once: setp (m < 1), mul.lo r*m, add.s64 (mul.wide fused)  int 3
#           per iteration: 2 pointer add.s64, add.s32 k, setp        int 4
#           -> the -O3 build unrolls by 4: 4 x 100 / 4 = 100          int 100 (+3 once)
#           also the mul.f64 of the inlined scaled() after the loop (stale .loc) 1 FP64 FLOP
#   line 15 s += a[..] * w[k]: one fma.rn.f64 per iteration        2 x 100 = 200 FP64 FLOP
#   line 17 out[r] = ... / a[r]: div.rn.f64 (15 FLOP), 2 address adds + 1 int of the div
#           -> 15 FP64 FLOP, int 3
# -> 216 FP64 FLOP, 108 integer instructions
def test_dot_fp64_loop_weights_and_loop_control():
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("m", 100.0),))
    src, comp = both("dot_fp64", inputs)
    assert src.counts.weights[15] == 100.0
    assert comp.counts.flops["fp64"] == pytest.approx(216.0)
    assert comp.counts.int_ops == pytest.approx(108.0)
    assert comp.counts.lines[14] == pytest.approx((1.0, 0.0, 0.0, 103.0))
    assert comp.counts.lines[15] == pytest.approx((200.0, 0.0, 0.0, 0.0))
    assert comp.ai["fp64"] == pytest.approx(comp.totals["fp64"] / comp.memory.dram_bytes)


# int_hash.cu: lines 6-14 once each: 1 + 1 + 1 (ld index) + 2 (shr, xor) + 1 (mul)
#   + 2 + 1 + 2 + 2 (and for % 1024 + the store address) = 13 integer instructions
def test_int_hash_integer_counts():
    src, comp = both("int_hash", LAUNCH)
    assert comp.counts.int_ops == pytest.approx(13.0)
    assert sum(comp.counts.flops.values()) == 0.0
    assert comp.ai["int"] < src.ai["int"]  # 13 < 15 instructions on the same bytes


def test_omp_region_keeps_the_runtime_model_on_the_parallel_loop():
    # omp_saxpy.c: region at line 6, work-shared loop at line 7, body at line 8. The body line
    # gets the PTX counts (fma: 2 FP32 FLOP; 2 address ints), the loop line and the pragma
    # keep the source model (runtime scheduling, calibrated).
    src, comp = both("omp_saxpy", Inputs(), ext=".c")
    assert comp.counts.lines[8] == pytest.approx((0.0, 2.0, 0.0, 2.0))
    assert comp.counts.lines[7] == src.counts.lines[7]
    assert comp.counts.flops["fp32"] == pytest.approx(2.0)


# A kernel calling two .func device functions: one straight-line (its per-call cost is added
# on the call line), one with a loop (line weights unknown: the call line keeps its source
# counts). Hand-written PTX.
CALLS_CU = """\
__device__ float twice(float v) { return v + v; }
__device__ float sum(const float* p, int n) { float s = 0; for (int i = 0; i < n; ++i) s += p[i]; return s; }
__global__ void k(float* x, int n) {
    int i = threadIdx.x;
    x[i] = twice(x[i]);
    x[i] = sum(x, n);
}
"""  # noqa: E501
CALLS_PTX = """\
.version 8.0
.target sm_86
.address_size 64
.func (.param .b32 r) twice(.param .b32 v)
{
    .loc 1 1 0
    add.f32 %f2, %f1, %f1;
    add.s32 %r9, %r9, 1;
    ret;
}
.func (.param .b32 r) sum(.param .b64 p, .param .b32 n)
{
    .loc 1 2 0
$L_loop:
    add.f32 %f3, %f3, %f4;
    add.s32 %r1, %r1, 1;
    setp.lt.s32 %p1, %r1, %r2;
    @%p1 bra $L_loop;
    ret;
}
.visible .entry _Z1kPfi(.param .u64 x, .param .u32 n)
{
    .loc 1 4 5
    mov.u32 %r1, %tid.x;
    .loc 1 5 5
    mul.f32 %f1, %f1, %f1;
    call.uni (retval0), twice, (param0);
    .loc 1 6 5
    call.uni (retval0), sum, (param0, param1);
    ret;
}
.file 1 "calls.cu"
"""


def test_callees_straight_line_added_looping_falls_back(tmp_path):
    path = tmp_path / "calls.cu"
    path.write_text(CALLS_CU)
    det = detect(path.read_bytes(), str(path))
    (k,) = det.kernels
    module = ptx.parse_ptx(CALLS_PTX)
    kp = kernel_ptx(module, k)
    assert kp is not None
    assert kp.fallback == frozenset({6})
    # line 5: its own mul.f32 (1 FLOP) + twice's add.f32 (1) and add.s32 (1 int)
    assert kp.lines[5].flops_fp32 == 2 and kp.lines[5].int_ops == 1
    inputs = Inputs(block=(32, 1, 1), grid=(1, 1, 1), values=(("n", 8.0),))
    src = analyze(k, det, GPU, inputs)
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.lines[6] == src.counts.lines[6]
    assert comp.counts.lines[5] == pytest.approx((0.0, 2.0, 0.0, 1.0))


def test_explanation_names_the_source_of_the_counts():
    k, det, module = kernel_of("saxpy")
    v = estimate(k, det, GPU, LAUNCH, compiled=CompiledCounts(kernel_ptx(module, k)))
    assert v.explanation.endswith("counts: PTX")
    v = estimate(k, det, GPU, LAUNCH, compiled=CompiledCounts(reason="nvcc: not found"))
    assert "counts: source (nvcc: not found)" in v.explanation
    assert v.counts is not None and v.counts.int_ops == 6  # the source counts


def test_missing_kernel_and_failed_compile_give_reasons():
    k, _, module = kernel_of("saxpy")
    other, _, _ = kernel_of("int_hash")
    cf = ptx.CompiledFile(str(FIX / "saxpy.cu"), None, module=module)
    assert counts_for(cf, k).ok
    assert counts_for(cf, other).reason.startswith("nvcc: kernel not in the PTX")
    failed = ptx.CompiledFile(str(FIX / "saxpy.cu"), None, reason="error: boom")
    assert counts_for(failed, k).note == "counts: source (nvcc: error: boom)"


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


def run(*argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    err = io.StringIO()
    old = sys.stderr
    sys.stderr = err
    try:
        code = main(list(argv), out=out)
    finally:
        sys.stderr = old
    return code, out.getvalue(), err.getvalue()


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


# nvcc prints inline-asm scopes (warp shuffles of cub, cvta of shared addresses) on one line:
# "{ .reg ...; shfl...; @p add...; mov...;}". Their statements count, and the closing brace
# must not be lost (everything after it, the .file table included, was swallowed before).
ASM_PTX = """\
.version 8.0
.target sm_86
.address_size 64
.visible .entry _Z1kPfi(.param .u64 x, .param .u32 n)
{
    .loc 1 4 5
    { .reg .b64 %tmp;
      cvta.shared.u64 %rd1, %tmp; }
    .loc 1 5 5
    {  .reg .f32 r0;  .reg .pred p;  shfl.sync.down.b32 r0|p, %f1, %r1, %r2, %r3;  @p add.f32 r0, r0, %f1;  mov.f32 %f2, r0;}
    .loc 1 6 5
    add.s32 %r4, %r4, 1;
    ret;
}
.file 1 "calls.cu"
"""  # noqa: E501


def test_one_line_inline_asm_scopes_are_parsed():
    module = ptx.parse_ptx(ASM_PTX)
    assert module.files == {1: "calls.cu"}
    f = module.functions["_Z1kPfi"]
    assert f.lines[("calls.cu", 5)].flops_fp32 == 1 and f.lines[("calls.cu", 5)].warp_ops == 1
    assert f.lines[("calls.cu", 6)].int_ops == 1
