"""Compiler-assisted counts in the estimator (``estimate/ptx_substitution.py`` over
``compiler/kernel_ptx.py``): PTX per-line counts substituted into the estimator's source-level
counts, from checked-in PTX of our own fixtures (no compiler needed)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from counting_helpers import detected
from ptx_helpers import FIX, OMP_CLANG, kernel_of

from roofline_lsp.compiler.compile_jobs import PtxResult, compile_omp_ptx
from roofline_lsp.compiler.instruction_mix import LineMix
from roofline_lsp.compiler.kernel_ptx import CompiledCounts, KernelPtx, kernel_ptx
from roofline_lsp.compiler.ptx_parser import parse_ptx
from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.ptx_substitution import pick_instantiation, release_copies, substitute
from roofline_lsp.estimate.roofline import Inputs, analyze, estimate
from roofline_lsp.estimate.thread_counts import ThreadCounts
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.present.explanations import explanation

GPU = load_registry().get("rtx3080")
LAUNCH = Inputs(block=(256, 1, 1), grid=(64, 1, 1))

GPU = load_registry().get("rtx3080")
LAUNCH = Inputs(block=(256, 1, 1), grid=(64, 1, 1))


def hand_written(tmp_path, source: str, name: str, ptx: str):  # type: ignore[no-untyped-def]
    """The one kernel of ``source`` (written as ``name``), its detection and its counts from
    the hand-written ``ptx``."""
    det = detected(tmp_path, source, name)
    (k,) = det.kernels
    return k, det, kernel_ptx(parse_ptx(ptx), k)


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
    # the memory model is the source one, plus the kernel's code
    assert comp.memory.dram_bytes == src.memory.dram_bytes + comp.memory.code_bytes
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
#           and its slow path's expected 5 -> 15 FP64 FLOP, int 8
# -> 216 FP64 FLOP, 113 integer instructions
def test_dot_fp64_loop_weights_and_loop_control():
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("m", 100.0),))
    src, comp = both("dot_fp64", inputs)
    assert src.counts.weights[15] == 100.0
    assert comp.counts.flops["fp64"] == pytest.approx(216.0)
    assert comp.counts.int_ops == pytest.approx(113.0)
    assert comp.counts.lines[14] == pytest.approx((1.0, 0.0, 0.0, 103.0))
    assert comp.counts.lines[15] == pytest.approx((200.0, 0.0, 0.0, 0.0))
    assert comp.ai["fp64"] == pytest.approx(comp.totals["fp64"] / comp.memory.dram_bytes)


# dot_fp64.cu's loop (line 14) with m a run-time value the -O3 build unrolls by 4: its 4
# per-iteration control instructions run once per group of 4 and on every trip of the
# remainder, which the build runs in a rolled loop of its own; 3 run once:
#   m = 100: 25 groups                  3 + 4 x 25      = 103
#   m = 6:   1 group + 2 remainder trips 3 + 4 x (1 + 2) = 15  (not 3 + 4 x 6 / 4 = 9)
#   m = 2:   2 remainder trips           3 + 4 x 2       = 11  (not 3 + 4 x 2 / 4 = 5)
@pytest.mark.parametrize(("m", "ints"), [(100.0, 103.0), (6.0, 15.0), (2.0, 11.0)])
def test_the_remainder_of_an_unrolled_loop_runs_its_control_every_trip(m, ints) -> None:
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("m", m),))
    _, comp = both("dot_fp64", inputs)
    assert comp.counts.lines[14][3] == pytest.approx(ints)


# int_hash.cu: lines 6-14 once each: 1 + 1 + 1 (ld index) + 2 (shr, xor) + 1 (mul)
#   + 2 + 1 + 1 (line 13's xor merges with line 14's and: one LOP3)
#   + 2 (and for % 1024 + the store address) = 12 integer instructions
def test_int_hash_integer_counts():
    src, comp = both("int_hash", LAUNCH)
    assert comp.counts.int_ops == pytest.approx(12.0)
    assert sum(comp.counts.flops.values()) == 0.0
    assert comp.ai["int"] < src.ai["int"]  # 12 < 15 instructions on the same bytes


def test_omp_region_keeps_the_runtime_model_on_the_parallel_loop():
    # omp_saxpy.c: region at line 6, work-shared loop at line 7, body at line 8. The body line
    # gets the PTX counts (fma: 2 FP32 FLOP; 2 address ints), the loop line and the pragma
    # keep the source model (runtime scheduling, calibrated).
    src, comp = both("omp_saxpy", Inputs(), ext=".c")
    assert comp.counts.lines[8] == pytest.approx((0.0, 2.0, 0.0, 2.0))
    assert comp.counts.lines[7] == src.counts.lines[7]
    assert comp.counts.flops["fp32"] == pytest.approx(2.0)


def test_auto_takes_only_the_flops_of_an_openmp_region():
    # counts=auto for OpenMP: the FLOPs of the body line from the PTX (one fma: 2 FP32
    # FLOP), every line's integer instructions from the source counter, which books the
    # runtime's worksharing per thread and per iteration
    k, det, module = kernel_of("omp_saxpy", ".c")
    kp = kernel_ptx(module, k)
    assert kp is not None
    src = analyze(k, det, GPU, Inputs())
    comp = analyze(k, det, GPU, Inputs(), compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp32"] == pytest.approx(2.0)
    assert comp.counts.int_ops == src.counts.int_ops
    assert comp.counts.lines[8] == pytest.approx((0.0, 2.0, 0.0, src.counts.lines[8][3]))
    assert CompiledCounts(kp, flops_only=True).note == "counts: PTX FLOPs, source integer ops"


# omp_team_sum.c, a generic-mode region (line 9): clang emits the parallel body (lines 13-18)
# twice, as __omp_outlined__1 and inlined into its worker entry __omp_outlined__1_wrapper; a
# thread runs one of them. Per thread:
#   line 15 v = x[t] * 2.0f: x + x, one add.rn.f32                        1 FP32 FLOP
#   line 17 part += v (omp atomic, team-local part): atom.add.f32 on a generic address, a
#           compare-and-swap loop around one FADD in the SM                1 FP32 FLOP
# -> 2 FP32 FLOP (4 with both copies counted, 2 with both copies and no atomic FLOP)
def test_an_openmp_parallel_body_and_its_worker_wrapper_count_once():
    k, det, module = kernel_of("omp_team_sum", ".c")
    kp = kernel_ptx(module, k)
    assert kp is not None
    assert kp.lines[15].flops_fp32 == 1 and kp.lines[17].flops_fp32 == 1
    comp = analyze(k, det, GPU, Inputs(), compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp32"] == pytest.approx(2.0)


# omp_helpers.ptx was compiled with inlining (the counting compile now passes -fno-inline; an
# always_inline helper is still inlined): clang 16 inlines cube() (line 4) into apply_cube's
# loop body (line 18) without recording the call line: its two mul.rn.f32 sit between line
# 18's instructions in program order and are booked there: v * v * v (2 FLOP) + 1.0f (1 FLOP)
# = 3 FP32 FLOP per iteration, as the source counter books the call. series() keeps its own
# loop (back edge on line 9): that code runs an unknown number of times per call, so
# apply_series gets no PTX counts (source counts, with the reason).
def test_code_inlined_without_a_call_line_is_booked_on_the_line_it_was_inlined_at():
    path = FIX / "omp_helpers.c"
    det = detect(path.read_bytes(), str(path))
    cube, series, _ = det.kernels
    module = parse_ptx((FIX / "omp_helpers.ptx").read_text())
    kp = kernel_ptx(module, cube)
    assert kp is not None
    assert kp.lines[18].flops_fp32 == 3 and 4 not in kp.lines
    src = analyze(cube, det, GPU, Inputs())
    comp = analyze(cube, det, GPU, Inputs(), compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp32"] == pytest.approx(3.0) == src.counts.flops["fp32"]
    assert kernel_ptx(module, series) is None


def _compiled_now(path, text=None):
    """``path`` (written with ``text`` first) compiled by clang now, as the counting compile
    does: its detection and parsed PTX."""
    assert OMP_CLANG is not None
    if text is not None:
        path.write_text(text)
    det = detect(path.read_bytes(), str(path))
    res = compile_omp_ptx(str(path), None, OMP_CLANG, "sm_86", cache=None)
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    return det, parse_ptx(res.ptx)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_helpers_the_counting_compile_keeps_as_calls_cost_on_their_call_line(tmp_path):
    # compiled now (-fno-inline): cube() and series() are .func calls on lines 18 and 25.
    # cube has no loop: its per-call cost (2 FP32 FLOP) joins line 18's add, 3 per
    # iteration. series has a loop of its own: line 25 keeps its source count, 4 trips (the
    # default 16 damped by 4 inside the parallel loop of unknown bound) x one fma = 8 FLOP;
    # the region gets PTX counts for its other lines instead of none.
    det, module = _compiled_now(FIX / "omp_helpers.c")
    cube, series, _ = det.kernels
    kp = kernel_ptx(module, cube)
    assert kp is not None and kp.lines[18].flops_fp32 == 3 and not kp.fallback
    kp = kernel_ptx(module, series)
    assert kp is not None and kp.fallback == {25}
    comp = analyze(series, det, GPU, Inputs(), compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp32"] == pytest.approx(8.0)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_a_math_call_in_a_region_costs_what_the_function_costs(tmp_path):
    # clang 16 calls libdevice's __nv_exp (linked later: no body in the PTX) from the line of
    # its wrapper in __clang_cuda_math.h, not from line 5: the call was dropped and exp cost
    # nothing. Booked on line 5, the call makes the line keep its source count: exp's
    # libdevice cost (30 FP64 FLOP, estimate/costs.py) + the multiply = 31 per iteration.
    det, module = _compiled_now(
        tmp_path / "expo.cpp",
        "#include <math.h>\n"
        "void expo(const double *x, double *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(to: x[0:n]) map(from: y[0:n])\n"
        "  for (int i = 0; i < n; i++)\n"
        "    y[i] = exp(x[i]) * 2.0;\n"
        "}\n",
    )
    kp = kernel_ptx(module, det.kernels[0])
    assert kp is not None and kp.fallback == {5}
    comp = analyze(det.kernels[0], det, GPU, Inputs(), compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp64"] == pytest.approx(31.0)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_an_fma_merged_from_both_arms_is_booked_where_clang_scatters_the_loop(tmp_path):
    # both arms of the inner `if` (lines 15 and 17) accumulate s += x * w[j]: clang merges
    # them into one fma.rn.f32 with no line, at the end of the j loop's body, followed by the
    # loop's exit (line 20). It was booked only when the kernel lines before and after it sat
    # in the same (text-span) loop: 0 FLOP. Now on the line before it (15), in the same
    # natural loops of the control-flow graph.
    det, module = _compiled_now(
        tmp_path / "arms.cpp",
        "#include <omp.h>\n"
        "void arms(const float *in, const float *w, float *out, int n, int m) {\n"
        "  #pragma omp target teams num_teams(n / 256) thread_limit(256)\n"
        "  {\n"
        "    float tile[256];\n"
        "    #pragma omp parallel\n"
        "    {\n"
        "      int lid = omp_get_thread_num(), i = omp_get_team_num() * 256 + lid;\n"
        "      tile[lid] = in[i];\n"
        "      #pragma omp barrier\n"
        "      float s = 0;\n"
        "      for (int j = 0; j < m; j++) {\n"
        "        int k = i + j;\n"
        "        if (k < n) {\n"
        "          if (lid + j < 256) s += tile[lid + j] * w[j];\n"
        "          else\n"
        "            s += in[k] * w[j];\n"
        "        }\n"
        "      }\n"
        "      out[i] = s;\n"
        "    }\n"
        "  }\n"
        "}\n",
    )
    kp = kernel_ptx(module, det.kernels[0])
    assert kp is not None
    assert kp.lines[15].flops_fp32 == 2  # the merged fma, on the line before it
    # line 15 runs 16 default trips x 0.5 (k < n unknown) = 8 times: 16 FP32 FLOP, as the
    # source counter books the two arms
    comp = analyze(det.kernels[0], det, GPU, Inputs(), compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp32"] == pytest.approx(16.0)


# select_sum (omp_helpers.c line 30): clang merges both arms of the `if` (lines 37 and 39)
# into one fma.rn.f32 with no line (.loc line 0), inside the j loop between instructions of
# line 37: it is booked there, 2 FP32 FLOP per pass (the region counted none before).
# cube()'s multiplies stay on line 18 of apply_cube; nothing else in the file is on line 0.
def test_floating_point_work_on_no_line_is_booked_on_the_line_around_it():
    path = FIX / "omp_helpers.c"
    det = detect(path.read_bytes(), str(path))
    module = parse_ptx((FIX / "omp_helpers.ptx").read_text())
    kp = kernel_ptx(module, det.kernels[2])
    assert kp is not None
    assert {ln: m.flops_fp32 for ln, m in kp.lines.items() if m.flops_fp32} == {37: 2}


# hoisted.cu with n = 100, per thread:
#   line 7  the fma of a * a + 1 (stale .loc of line 7, before the loop)     2 FP32 FLOP once
#   line 10 sqrtf (sqrt.rn.f32, 6) + add.f32 (1) + div.rn.f32 (10): loop-invariant, hoisted
#           before the loop: 17 FP32 FLOP once (the source line runs 100 times: 1700 if
#           booked per iteration)
#   line 11 fma.rn.f32 per iteration                                          2 x 100 = 200
# -> 219 FP32 FLOP (1902 before)
def test_work_hoisted_out_of_a_loop_runs_once_per_entry():
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("n", 100.0),))
    src, comp = both("hoisted", inputs)
    assert src.counts.weights[10] == 100.0
    assert comp.counts.lines[10][1] == pytest.approx(17.0)
    assert comp.counts.lines[11][1] == pytest.approx(200.0)
    assert comp.counts.flops["fp32"] == pytest.approx(219.0)


# omp_hoisted.c: a collapse(2) region (line 5) over (n - 2) x (m - 2) iterations. Its body
# (line 8) costs 3 FP64 FLOP per iteration in the PTX (sub, fma); clang hoists the invariant
# nu / (dx * dx) (DMUL + the division's 15 FP64 FLOP and its FFMA range check, 2 FP32 FLOP)
# out of each thread's chunk, onto line 10. It runs once per thread: on 256 x 64 = 16384
# threads, 1024 x 1024 iterations take 1/64 of it each (3 + 16/64 FP64, 2/64 FP32); with
# 64 x 64 iterations, fewer than the threads, every iteration runs it (3 + 16, 2).
@pytest.mark.parametrize(("size", "fp64", "fp32"), [(1026.0, 3.25, 2 / 64), (66.0, 19.0, 2.0)])
def test_work_hoisted_out_of_a_threads_chunk_runs_once_per_thread(size, fp64, fp32):
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("n", size), ("m", size)))
    _src, comp = both("omp_hoisted", inputs, ext=".c")
    assert comp.counts.flops["fp64"] == pytest.approx(fp64)
    assert comp.counts.flops["fp32"] == pytest.approx(fp32)


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
    k, det, kp = hand_written(tmp_path, CALLS_CU, "calls.cu", CALLS_PTX)
    assert kp is not None
    assert kp.fallback == frozenset({6})
    # line 5: its own mul.f32 (1 FLOP) + twice's add.f32 (1) and add.s32 (1 int)
    assert kp.lines[5].flops_fp32 == 2 and kp.lines[5].int_ops == 1
    inputs = Inputs(block=(32, 1, 1), grid=(1, 1, 1), values=(("n", 8.0),))
    src = analyze(k, det, GPU, inputs)
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.lines[6] == src.counts.lines[6]
    assert comp.counts.lines[5] == pytest.approx((0.0, 2.0, 0.0, 1.0))


def test_explanation_and_counts_name_the_source_of_the_counts():
    k, det, module = kernel_of("saxpy")
    v = estimate(k, det, GPU, LAUNCH, compiled=CompiledCounts(kernel_ptx(module, k)))
    assert explanation(v).endswith("counts: PTX")
    assert v.counts is not None and v.counts.counts_from == "ptx"  # data, not the words
    v = estimate(k, det, GPU, LAUNCH, compiled=CompiledCounts(reason="nvcc: not found"))
    assert "counts: source (nvcc: not found)" in explanation(v)
    assert v.counts is not None and v.counts.int_ops == 6  # the source counts
    assert v.counts.counts_from == "source"


# call_loop.cu with n = 100 (examples/nbody.cu's shape): the inner one-line loop of line 15
# calls step() (a .func in the counting compile: sub 1 + mul 1 + fma 2 = 4 FP32 FLOP) and
# adds its result (add.f32: 1 FLOP) on every one of its 64 trips, inside the 100-trip loop of
# line 13:
#   line 15 FP32: (4 + 1) x 64 x 100 = 32000 FLOP (before: the call counted once per entry of
#           the inner loop, 1 x 6400 + 4 x 100 = 6800)
#   line 15 int: the loop control add.s32 + setp (2) once per group of 4 (64 trips, not fully
#           unrolled: more than 32) -> 2 x 16 x 100 = 3200; the cvt is a conversion, the call
#           body has no integer work
def test_a_call_in_a_one_line_inner_loop_runs_every_iteration():
    k, det, module = kernel_of("call_loop")
    kp = kernel_ptx(module, k)
    assert kp is not None
    assert kp.per_iteration_body[15] == (0, 4, 0, 0)
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("n", 100.0),))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.lines[15] == pytest.approx((0.0, 32000.0, 0.0, 3200.0))
    src = analyze(k, det, GPU, inputs)
    # the source count agrees within the difference of the int->float conversion
    assert src.counts.flops["fp32"] == pytest.approx(comp.counts.flops["fp32"], rel=0.25)


# A 4-trip loop under `#pragma unroll` that the counting build still unrolled (clang and
# NVVM honour the pragma): its body line holds one copy per trip, four fma here, inside the
# loop over j the PTX keeps (its test and increment on line 4). Hand-written PTX.
UNROLLED_CU = """\
__global__ void k(float *x, int n) {
    int i = threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < n; j++) {
        #pragma unroll
        for (int m = 0; m < 4; m++)
            s += x[j * 4 + m] * 1.5f;
    }
    x[i] = s;
}
"""
UNROLLED_PTX = """\
.version 8.0
.target sm_86
.address_size 64
.visible .entry _Z1kPfi(.param .u64 x, .param .u32 n)
{
    .loc 1 2 5
    mov.u32 %r1, %tid.x;
$L_outer:
    .loc 1 7 5
    fma.rn.f32 %f1, %f2, %f3, %f1;
    fma.rn.f32 %f1, %f4, %f3, %f1;
    fma.rn.f32 %f1, %f5, %f3, %f1;
    fma.rn.f32 %f1, %f6, %f3, %f1;
    .loc 1 4 5
    add.s32 %r2, %r2, 1;
    setp.lt.s32 %p1, %r2, %r3;
    @%p1 bra $L_outer;
    .loc 1 9 5
    st.global.f32 [%rd1], %f1;
    ret;
}
.file 1 "unrolled.cu"
"""


def test_a_loop_the_compiler_unrolled_fully_counts_each_copy_once(tmp_path):
    # line 7 runs 100 x 4 times a thread, one fma (2 FLOP) each: 800 FP32 FLOP, as the
    # source count says; the four copies in the PTX are the four trips, not four fma a trip
    k, det, kp = hand_written(tmp_path, UNROLLED_CU, "unrolled.cu", UNROLLED_PTX)
    assert kp is not None and kp.lines[7].flops_fp32 == 8
    inputs = Inputs(block=(32, 1, 1), grid=(1, 1, 1), values=(("n", 100.0),))
    src = analyze(k, det, GPU, inputs)
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert src.counts.lines[7][1] == pytest.approx(800.0)
    assert comp.counts.lines[7][1] == pytest.approx(800.0)


def test_a_helper_s_guarded_tree_sum_runs_at_its_branch_shares() -> None:
    # guarded_helper.cu, 1024 x 128 threads, n = 2^17: the grid-stride loop runs once, one
    # fma on line 6 and an add on line 7 (3 FP32 FLOP). reduce2 (guarded_helper.h, inlined
    # on line 11) adds 2 FLOP at step i for the threads below i: sum over i = 64 ... 1 of
    # i / 128 x 2 = 127 / 64 FLOP. Its PTX branches on ``lid < i`` inside the inlined code,
    # so line 11 keeps the counter's weights (the PTX count, 2 FLOP a step for every
    # thread, is an upper bound). Its loop is on line 6 of the header: not line 6 of the
    # kernel, which is no 7-trip loop
    k, det, module = kernel_of("guarded_helper")
    kp = kernel_ptx(module, k)
    assert kp is not None and kp.fallback == {11}
    inputs = Inputs(block=(128, 1, 1), grid=(1024, 1, 1), values=(("n", 2.0**17),))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    fp32 = {ln: row[1] for ln, row in comp.counts.lines.items()}
    assert (fp32[6], fp32[7]) == (pytest.approx(2.0, rel=1e-4), pytest.approx(1.0, rel=1e-4))
    assert fp32[11] == pytest.approx(127 / 64, rel=1e-4)


def test_the_grid_stride_loop_control_runs_per_iteration_in_a_clang_build() -> None:
    # guarded_helper.cu's grid-stride loop (line 5), n = 2^20 over 1024 x 128 threads: 8
    # trips. Its PTX line holds 5 integer instructions, 2 of them the per-iteration control
    # (the add of i and the compare; 3 run once). nvcc's -O3 build unrolls the loop by 4:
    # 3 + 2 x 8 / 4 = 7; clang's leaves a loop with a run-time step rolled: 3 + 2 x 8 = 19
    k, det, module = kernel_of("guarded_helper")
    kp = kernel_ptx(module, k)
    assert kp is not None and kp.per_iteration[5] == (0, 0, 0, 2) and kp.lines[5].int_ops == 5
    inputs = Inputs(block=(128, 1, 1), grid=(1024, 1, 1), values=(("n", 2.0**20),))
    ints = {
        c: analyze(
            k, det, GPU, inputs, Config(build_compiler=c), compiled=CompiledCounts(kp)
        ).counts.lines[5][3]
        for c in ("nvcc", "clang")
    }
    assert ints == {"nvcc": pytest.approx(7.0, rel=1e-4), "clang": pytest.approx(19.0, rel=1e-4)}


@pytest.mark.parametrize(
    ("header", "fallback"),
    [
        ("/usr/local/cuda/targets/x86_64-linux/include/crt/guarded_helper.h", frozenset()),
        ("/opt/cuda/include/guarded_helper.h", frozenset()),
        ("/usr/lib/llvm-16/lib/clang/16/include/guarded_helper.h", frozenset()),
        ("/usr/include/guarded_helper.h", frozenset()),
        ("/home/me/project/include/guarded_helper.h", frozenset({11})),
    ],
)
def test_branches_in_code_inlined_from_the_toolkit_keep_the_ptx_count(header, fallback) -> None:
    # the same PTX with the helper's file moved: in an include folder of the toolkit or the
    # compiler (a math function there branches on special inputs, which the counter's
    # weights do not know), line 11 keeps its PTX count; in the program's own include
    # folder it is the counter's
    k, det, module = kernel_of("guarded_helper")
    steered = {site[1]: files for site, files in module.functions["_Z1kPKfPfi"].steered.items()}
    assert steered == {11: frozenset({"guarded_helper.h"})}
    text = (FIX / "guarded_helper.ptx").read_text()
    moved = parse_ptx(text.replace('"guarded_helper.h"', f'"{header}"'))
    kp = kernel_ptx(moved, k)
    assert kp is not None and kp.fallback == fallback


def test_a_branch_the_arguments_rule_out_costs_nothing_where_the_compiler_branches() -> None:
    # dead_branch.cu with mode = 0, 8192 threads: ``mode > 0`` and ``mode > 1`` are false.
    # Line 6's load and fma sit on the arm nvcc branches around (a load may fault): they
    # run for no thread, 0 FLOP (the walk leaves the line without a weight; it used to
    # take the weight of the line above, 2 FLOP). Line 9's multiply is computed on both
    # paths and selected (``selp``): it runs for every thread, 1 FLOP. Line 11: x * 2 is
    # one add, 1 FLOP. 2 FP32 FLOP a thread; with mode = 2 every line runs: 2 + 1 + 1 = 4
    k, det, module = kernel_of("dead_branch")
    kp = kernel_ptx(module, k)
    assert kp is not None and 5 in kp.skipped_by[6] and 8 not in kp.skipped_by.get(9, ())

    def fp32(mode: float) -> float:
        inputs = Inputs(block=(128, 1, 1), grid=(64, 1, 1), values=(("n", 8192.0), ("mode", mode)))
        comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
        return comp.counts.flops["fp32"]

    assert fp32(0.0) == pytest.approx(2.0)
    assert fp32(2.0) == pytest.approx(4.0)


def test_a_call_with_a_loop_on_a_continued_line_keeps_its_statement_s_count() -> None:
    # continued_call.cu, m = 100: series() keeps its loop as a .func call (the counting
    # compile), called on line 10, the second line of the statement on line 9; the counter
    # books the whole statement on line 9: a[i] * 2 + ... (2 FLOP) and 100 trips of one
    # fma (200 FLOP). Line 9 keeps that count for the statement's lines: 202 FP32 FLOP a
    # thread (the PTX alone has the fma of line 9, 2 FLOP, and line 10's fallback had
    # nothing booked on it)
    k, det, module = kernel_of("continued_call")
    kp = kernel_ptx(module, k)
    assert kp is not None and kp.fallback == {10}
    inputs = Inputs(block=(128, 1, 1), grid=(64, 1, 1), values=(("n", 8192.0), ("m", 100.0)))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.flops["fp32"] == pytest.approx(202.0)


# A loop whose back edge the compiler put on its body's line (as clang does), with the
# reciprocal of m hoisted before it onto the loop's own line. Hand-written PTX.
HOISTED_ON_LOOP_LINE_CU = """\
__global__ void k(float *x, int n, float m) {
  int i = threadIdx.x;
  for (int c = 0; c < n; c++) {
    x[i] = x[i] / m;
  }
}
"""
HOISTED_ON_LOOP_LINE_PTX = """\
.version 8.0
.target sm_86
.address_size 64
.visible .entry _Z1kPfif(.param .u64 x, .param .u32 n, .param .f32 m)
{
    .loc 1 2 3
    mov.u32 %r1, %tid.x;
    .loc 1 3 3
    rcp.rn.f32 %f9, %f8;
    mov.u32 %r2, 0;
$L_loop:
    .loc 1 4 5
    mul.f32 %f2, %f1, %f9;
    add.s32 %r2, %r2, 1;
    setp.lt.s32 %p1, %r2, %r3;
    @%p1 bra $L_loop;
    .loc 1 6 1
    ret;
}
.file 1 "hoisted_line.cu"
"""


def test_work_hoisted_onto_a_loop_s_line_runs_once_per_entry(tmp_path):
    # n = 100: line 4's multiply runs every trip (1 FP32 FLOP x 100); the reciprocal on line
    # 3 (rcp.rn.f32, two FFMA: 4 FLOP) sits before the PTX loop, so it runs once, not 100
    # times, though line 3 is the loop's statement and PTX has no loop control on it
    k, det, kp = hand_written(
        tmp_path, HOISTED_ON_LOOP_LINE_CU, "hoisted_line.cu", HOISTED_ON_LOOP_LINE_PTX
    )
    assert kp is not None and 3 not in kp.per_iteration
    inputs = Inputs(block=(32, 1, 1), grid=(1, 1, 1), values=(("n", 100.0),))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.lines[3][1] == pytest.approx(4.0)
    assert comp.counts.lines[4][1] == pytest.approx(100.0)


def test_the_instance_meant_is_picked_by_its_mangled_template_arguments() -> None:
    # histogram's run_gmem_atomics<3, 256, PixelType> region, compiled for three pixel types:
    # the uchar1 and uchar4 instances decode bytes (no FLOP), the float4 one multiplies (3
    # FP32 FLOP on line 83). The profile names <3, 256, float4>: its symbol spells the
    # arguments Li3E, Li256E, 6float4. Without the arguments, the first instance whose
    # precision is the source's (FP32) is taken, the same one here; with arguments that no
    # symbol spells (or none), the instances are told apart by precision alone.
    def inst(symbol: str, fp32: int) -> KernelPtx:
        return KernelPtx(kernel=symbol, lines={83: LineMix(flops_fp32=fp32)})

    base = "__omp_offloading_10309_2f26b3d__Z16run_gmem_atomicsILi{}ELi256E{}EdPT1_iiPjb_l55"
    uchar1 = inst(base.format(1, "6uchar1"), 0)
    uchar4 = inst(base.format(3, "6uchar4"), 0)
    float4 = inst(base.format(3, "6float4"), 3)
    ptx = replace(uchar1, others=(uchar4, float4))
    fp32_source = counts_with(fp32=128.0)
    assert pick_instantiation(fp32_source, ptx, ("3", "256", "float4")) is float4
    assert pick_instantiation(fp32_source, ptx, ("3", "256", "uchar4")) is uchar4
    no_flop_source = counts_with(fp32=0.0)
    assert pick_instantiation(no_flop_source, ptx, ("1", "256", "uchar1")).kernel == uchar1.kernel
    # a CUDA kernel's builtin type: testKernel<unsigned char> is _Z10testKernelIhEvPT_PKS0_i
    u8 = inst("_Z10testKernelIhEvPT_PKS0_i", 0)
    f32 = inst("_Z10testKernelIfEvPT_PKS0_i", 0)
    assert pick_instantiation(no_flop_source, replace(f32, others=(u8,)), ("unsigned char",)) is u8
    assert pick_instantiation(fp32_source, ptx, ("3", "256", "Vector<double>")) is float4
    # a bool argument is an integer literal: update_lattice<true> is ...ILb1EE...
    on = inst("_Z14update_latticeILb1EEvPaPKfS2_ll", 0)
    off = inst("_Z14update_latticeILb0EEvPaPKfS2_ll", 0)
    assert pick_instantiation(no_flop_source, replace(off, others=(on,)), ("true",)) is on


def counts_with(fp32: float) -> ThreadCounts:
    return ThreadCounts(
        flops={"fp64": 0.0, "fp32": fp32, "fp16": 0.0},
        int_ops=0.0,
        accesses=(),
        loops=(),
        lines={},
        weights={},
        threads=1.0,
        dims={},
        followed=(),
    )


# saxpy.ptx holds 20 instructions on the kernel's lines: line 4 four ld.param; line 6 three
# mov, the mad and two cvta; line 7 setp and bra; line 8 mul.wide, two add, two ld, fma and
# st; line 10 ret. At 16 bytes per SASS instruction that is 320 bytes of code, which a launch
# after ncu's cache flush reads from DRAM once: loaded on top of the source model's bytes.
def test_the_kernel_code_is_read_from_dram_once():
    src, comp = both("saxpy", LAUNCH)
    k, _, module = kernel_of("saxpy")
    kp = kernel_ptx(module, k)
    assert kp is not None and kp.code_bytes == 20 * 16
    assert comp.memory.code_bytes == 320
    assert comp.memory.bytes_loaded == pytest.approx(src.memory.bytes_loaded + 320)
    assert comp.memory.bytes_stored == src.memory.bytes_stored
    assert src.memory.code_bytes == 0


# continued_call.ptx: the kernel's lines hold 23 instructions; series() keeps its loop as a
# .func of 13 instructions, whose cost its call line does not carry (the line keeps the
# source count). Its code runs all the same: (23 + 13) x 16 = 576 bytes read from DRAM once.
def test_the_code_of_a_helper_left_a_call_is_read_too():
    k, _, module = kernel_of("continued_call")
    kp = kernel_ptx(module, k)
    assert kp is not None and 10 in kp.fallback
    assert kp.code_bytes == (23 + 13) * 16


def test_a_call_with_a_loop_whose_arguments_continue_keeps_its_statement_s_count() -> None:
    # call_with_continued_args.cu, m = 100: series() (a .func with a loop) is called on line
    # 9, the statement's first line, and its result is used on line 10 (`* 3.0f + a[i] *
    # a[i]`: an FMUL and an FFMA, 3 FLOP in the PTX of line 10). Line 9 falls back to the
    # counter, which booked the whole statement there: 100 trips of one fma (200 FLOP) and
    # the 3 FLOP of line 10: 203 FP32 FLOP a thread. Line 10's PTX is part of that
    # statement and is not added again (206 before)
    k, det, module = kernel_of("call_with_continued_args")
    kp = kernel_ptx(module, k)
    assert kp is not None and kp.fallback == {9} and kp.lines[10].flops_fp32 == 3
    inputs = Inputs(block=(128, 1, 1), grid=(64, 1, 1), values=(("n", 8192.0), ("m", 100.0)))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.flops["fp32"] == pytest.approx(203.0)


# unrolled_rows.cu (16 x 4 blocks, pitch 3072): integer instructions of one thread, PTX counts.
# The counting build keeps the `#pragma unroll` loops that the release build unrolls
# completely; a complete unroll leaves no counter and makes every address `[base + imm]`
# (tests/test_ptx_parser.py: what it folds line by line).
#   line 14, the load loop's body (8 trips):  8 a trip in the counting PTX -> 0
#   line 22, the store `dst[i * 16]` (8 trips): 4 a trip -> 0
#   lines 8, 9 (x, y: a shift by a constant feeding an add, one LEA each): 1 + 1; line 10 (the
#   offset): 3; line 17 before its loop: 1; line 20, the tap loop's start address on its
#   line, 1 per entry (a shift and an add, one LEA) x 8 entries: 8; line 25, the loop of no
#   pragma, its start address: 3 (its control folds: 3 trips, unrolled); line 27 the store: 1
# -> 18 a thread (the release build's SASS holds 6: ptxas also shares the start addresses).
# Without the pragmas the loops are unrolled for their small counts alone, which the release
# build need not do: their counters fold (line 14 keeps 5 of its 8, line 22 3 of its 4),
# their address arithmetic stays: 18 + 5 x 8 + 3 x 8 = 82.
def test_a_forced_unroll_folds_the_address_arithmetic_a_small_count_keeps_it() -> None:
    k, det, module = kernel_of("unrolled_rows")
    kp = kernel_ptx(module, k)
    assert kp is not None
    inputs = Inputs(block=(16, 4, 1), grid=(24, 768, 1), values=(("pitch", 3072.0),))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.lines[14][3] == 0 and comp.counts.lines[22][3] == 0
    assert comp.counts.int_ops == pytest.approx(18.0)
    src = analyze(k, det, GPU, inputs).counts
    unforced = replace(src, loops=tuple(replace(lp, forced=False) for lp in src.loops))
    counts = substitute(unforced, k, kp)
    assert counts.lines[14][3] == pytest.approx(5 * 8)
    assert counts.lines[22][3] == pytest.approx(3 * 8)
    assert counts.int_ops == pytest.approx(82.0)


# tree_sum.cu (16 x 32 threads a block), integer instructions of one thread, PTX counts:
#   line 8, the load and the shared store: 6 (of the 9 PTX integer instructions, three
#     shifts by a constant each feed an add: one LEA a pair)
#   line 11, 5 trips of `ty % s` and its test: a signed remainder by a run-time value is 17,
#     by the constant each copy of the complete unroll divides by 4, + the test 1 -> 5 x 5 = 25
#     (by the counting build's run-time divisor it would be 18 x 5 = 90)
#   line 12, the partner's row address, 1 a trip on every other thread: 5 x 1/2 = 2.5
#   line 10: the doubling and the exit test fold; line 15, `ty == 0`: 1;
#   line 16, the store's address of the one row in 32 that stores: 3 / 32 = 0.09375 (a
#     shift and an add, one LEA)
# -> 34.59375 (the release build's SASS: 5 on line 8, 25 on line 11's 5 unrolled tests)
def test_a_division_by_a_doubling_stride_costs_a_division_by_a_constant() -> None:
    k, det, module = kernel_of("tree_sum")
    kp = kernel_ptx(module, k)
    assert kp is not None
    inputs = Inputs(block=(16, 32, 1), grid=(1024, 1, 1))
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp))
    assert comp.counts.lines[11][3] == pytest.approx(25.0)
    assert comp.counts.lines[10][3] == 0
    assert comp.counts.int_ops == pytest.approx(34.59375)


# strided_columns.cu (n = 4096), integer instructions of one thread, PTX counts. The counting
# build keeps the loop (line 9): its counter, its test and the bump of `values` by 4 B fold in
# the release build's complete unroll; the bump of the column pointer by n * 4 B, a run-time
# stride, does not: each copy computes its address (1 a trip).
#   line 8, i: mad = 1
#   line 9: the start address before the loop (mul.wide, add.s64: one IMAD.WIDE) 1, and
#     5 trips x 1 = 5 (n * 4, a mul.wide feeding the bump, is the bump's IMAD.WIDE): 6
# -> 7 (the release build's SASS: 9, IMAD, 5 IMAD.WIDE, SHF, LEA, IADD3); before, the whole
# loop line folded: 2
def test_a_complete_unroll_keeps_a_pointer_bump_by_a_run_time_stride() -> None:
    inputs = Inputs(block=(192, 1, 1), grid=(64, 1, 1), values=(("n", 4096.0),))
    _, comp = both("strided_columns", inputs)
    assert comp.counts.lines[9][3] == pytest.approx(6.0)
    assert comp.counts.int_ops == pytest.approx(7.0)


# bit_count.cu, integer instructions of one thread, PTX counts, the loop's 16 assumed trips:
#   line 5, i: 1; line 6, the bound check: 1; line 7, the load's index and address: 2
#   line 9, `while (x)`: the entry test 1, and each trip's and, add, shift and exit test:
#     4 x 16 = 64. A loop with no counter is not unrolled (nvdisasm: LOP3, SHF, IADD,
#     ISETP every trip), so its test and shift run every trip: 65 (17 when they ran once
#     per group of 4, as in a counted loop)
#   line 10, the store's address: 2
# -> 71 (the release build's SASS: 7 + 4 x 16 = 71)
def test_a_loop_without_a_counter_runs_its_control_every_trip() -> None:
    inputs = Inputs(block=(256, 1, 1), grid=(64, 1, 1), values=(("n", 16384.0),))
    _, comp = both("bit_count", inputs)
    (loop,) = comp.counts.loops
    assert (loop.var, loop.trips, loop.source) == (None, 16.0, "default")
    assert comp.counts.lines[9][3] == pytest.approx(65.0)
    assert comp.counts.int_ops == pytest.approx(71.0)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_a_line_a_macro_expands_to_a_loop_on_keeps_its_source_count(tmp_path):
    # BODY(16) on line 7 is a 16-trip loop of two FMAs, unrolled by its _Pragma: clang puts
    # the 32 FMAs on line 7, which no one weight multiplies (the statement's once per trip
    # of r, the loop's 16 times). The source count stands: 64 FP32 FLOP a trip of r, 100
    # trips, and the add on line 8 (before: 4 FLOP a trip of r)
    det, module = _compiled_now(FIX.parent / "estimator" / "pragma_macro_loop.cpp")
    kp = kernel_ptx(module, det.kernels[0])
    assert kp is not None
    inputs = Inputs(args="n=1024 iters=100")
    comp = analyze(det.kernels[0], det, GPU, inputs, compiled=CompiledCounts(kp, flops_only=True))
    assert comp.counts.flops["fp32"] == pytest.approx(64 * 100 + 1)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_a_loop_the_release_build_unrolls_less_runs_its_control_more(tmp_path):
    # release_unroll.cpp, m = 64 trips each. LLVM's budget, 73 / (body operations + 1): a
    # load and an FMA, 73 / 3 -> 16 copies; 20 FMAs (1 each) -> 73 / 21 -> 2; 40 FMAs -> 1;
    # the loop around another -> 1 (clang 16's release PTX: 8, 2, 1, 1).
    det, module = _compiled_now(FIX.parent / "estimator" / "release_unroll.cpp")
    (k,) = det.kernels
    kp = kernel_ptx(module, k)
    assert kp is not None
    inputs = Inputs(args="n=1024 m=64")
    comp = analyze(k, det, GPU, inputs, compiled=CompiledCounts(kp, flops_only=True))
    src = analyze(k, det, GPU, inputs)
    copies = {lp.line: release_copies(lp, comp.counts.loops, kp) for lp in comp.counts.loops}
    assert {ln: copies[ln] for ln in (7, 10, 13, 16)} == {7: 16.0, 10: 2.0, 13: 1.0, 16: 1.0}
    # the counter's control on a loop line: a test and an increment per group of 4 trips,
    # 2 x 64 / 4 = 32, and the remainder loop's set-up, 8: 40. Unrolled twice, 2 x 64 / 2
    # + 8 = 72; rolled, 2 x 64 = 128 and no remainder. The 8-copy loops keep the counter's.
    ints = {ln: comp.counts.lines[ln][3] for ln in (7, 10, 13, 16)}
    assert ints == {7: 40.0, 10: 72.0, 13: 128.0, 16: 128.0}
    assert all(src.counts.lines[ln][3] == 40.0 for ln in (7, 10, 13, 16))
    # what the release build adds is counted, and kept off the threads' latency chain
    assert comp.counts.release_control_ints == pytest.approx(32 + 88 + 88)
    assert comp.counts.int_ops - src.counts.int_ops == pytest.approx(32 + 88 + 88, abs=1.0)
