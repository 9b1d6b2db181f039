"""Counting rules of ``walk_statements.py`` (early exits, OpenMP regions) on small sources
(expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, buffer_of, count, detected

from roofline_lsp.estimate.roofline import Inputs, analyze, estimate
from roofline_lsp.model.terms import AssumptionTerm
from roofline_lsp.present.explanations import explanation


def test_early_return_scales_the_rest(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # n = 1000 elements over 1024 x 256 threads: 1000 / 262144 of the threads continue
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  x[i] = x[i] * 3.0f + 1.0f;\n"
        "}\n"
        "int main() { float *x; k<<<1024, 256>>>(x, 1000); }\n",
    )
    assert a.counts.flops["fp32"] == pytest.approx(2 * 1000 / 262144)
    assert a.counts.weights[4] == pytest.approx(1000 / 262144)


def test_openmp_teams_parallel_region(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # SPMD style: teams x threads, each thread one element
    src = (
        "void f(const float *x, float *y) {\n"
        "  #pragma omp target teams num_teams(512) thread_limit(128)\n"
        "  {\n"
        "    #pragma omp parallel\n"
        "    {\n"
        "      int t = omp_get_thread_num();\n"
        "      int g = omp_get_team_num();\n"
        "      int i = g * 128 + t;\n"
        "      y[i] = x[i] * 2.0f + 1.0f;\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="spmd.cpp")
    assert a.threads == 512 * 128
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    x = buffer_of(a, "x")
    assert x.footprint == pytest.approx(512 * 128 * 4)


@pytest.mark.parametrize(
    "outer, inner",
    [
        ("private(tmp)", ""),
        ("firstprivate(tmp)", ""),
        ("reduction(+: tmp[0:64])", ""),
        ("", "    #pragma omp parallel for private(tmp)\n"),
    ],
)
def test_a_private_host_array_is_each_thread_s_own(
    gpu, tmp_path: Path, outer: str, inner: str
) -> None:  # type: ignore[no-untyped-def]
    # `float tmp[64]` declared in the host function and named in a private clause: each
    # thread fills its own 256-byte copy and reads it at an index loaded from memory, so the
    # copy is in local memory ("local:tmp", 64 x 4 B), not one 256-byte array in global
    # memory that all 4096 threads share (the working set of a and b alone: 2 x 16 KiB + j);
    # an array reduced over the loop is such a copy too, combined by the runtime at the end
    body = "    for (int k = 0; k < 64; k++) tmp[k] = a[i] * k;\n    b[i] = tmp[j[i] & 63];\n"
    src = (
        "void f(const float *a, const int *j, float *b) {\n"
        "  float tmp[64];\n"
        + (
            f"  #pragma omp target teams distribute parallel for {outer}\n"
            if not inner
            else "  #pragma omp target teams\n  {\n" + inner
        )
        + "  for (int i = 0; i < 4096; i++) {\n"
        + body
        + "  }\n"
        + ("  }\n" if inner else "")
        + "}\n"
    )
    a = count(gpu, tmp_path, src, name="priv.cpp")
    assert a.counts.local_bytes == {"local:tmp": 64 * 4}
    assert all(x.buffer != "tmp" for x in a.counts.accesses)
    assert {x.buffer for x in a.counts.accesses if x.space == "localmem"} == {"local:tmp"}
    shared_copy = count(
        gpu, tmp_path, src.replace(outer, "").replace(" private(tmp)", ""), name="shared.cpp"
    )
    assert any(x.buffer == "tmp" and x.space == "global" for x in shared_copy.counts.accesses)


def test_a_firstprivate_array_the_region_only_reads_keeps_the_host_s_values(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # cfg is copied in and never written: its elements are the host's (4096 and 8), so
    # both loops have known counts, 4096 x 8 elements of a read once (128 KiB)
    src = (
        "void f(const float *a, float *b) {\n"
        "  int cfg[2] = {4096, 8};\n"
        "  #pragma omp target teams distribute parallel for firstprivate(cfg)\n"
        "  for (int i = 0; i < cfg[0]; i++) {\n"
        "    float s = 0.f;\n"
        "    for (int k = 0; k < cfg[1]; k++) s += a[i * 8 + k];\n"
        "    b[i] = s;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="cfg.cpp")
    assert [(lp.var, lp.trips) for lp in a.counts.loops] == [("i", 4096), ("k", 8)]
    assert a.counts.local_bytes == {}
    x = buffer_of(a, "a")
    assert x.footprint == pytest.approx(4096 * 8 * 4)


@pytest.mark.parametrize(
    "region",
    [
        "  #pragma omp target parallel\n  {\n  #pragma omp for\n{loop}  }\n",
        "  #pragma omp target teams num_teams(1)\n  #pragma omp parallel\n  {\n"
        "  #pragma omp for\n{loop}  }\n",
        "  #pragma omp target parallel for\n{loop}",
    ],
)
def test_a_work_shared_loop_in_a_parallel_region_is_shared_by_its_threads(
    gpu, tmp_path: Path, region: str
) -> None:  # type: ignore[no-untyped-def]
    # the parallel region's threads divide the `omp for` loop's 4096 iterations among them:
    # 4096 x (4-byte load + 4-byte store) referenced, 1 FLOP each, not that times the
    # threads of the region (before: every thread ran every iteration)
    loop = "  for (int i = 0; i < 4096; i++) b[i] = 2.f * a[i];\n"
    src = "void f(const float *a, float *b) {\n" + region.replace("{loop}", loop) + "}\n"
    a = count(gpu, tmp_path, src, name="tp.cpp")
    assert a.threads == 4096
    assert a.memory.references == pytest.approx(4096 * 8)
    assert a.counts.flops["fp32"] * a.threads == pytest.approx(4096)


def test_a_per_thread_array_varies_with_what_it_holds(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # s is refilled from x on every trip of the j loop: s[0] * s[1] varies with j although
    # its index does not, so it stays in the loop: 64 x (FMUL + FADD) = 128 FP32 (not one
    # hoisted multiply plus 64 adds)
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float acc = 0.f;\n"
        "  for (int j = 0; j < 64; j++) {\n"
        "    float s[2] = {x[i + j], x[i + j + 1]};\n"
        "    acc += s[0] * s[1];\n"
        "  }\n"
        "  y[i] = acc;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(128.0)


def test_an_if_whose_statement_starts_with_a_pragma_guards_that_statement(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # `if (t < n)` then `#pragma unroll` then the loop: tree-sitter ends the if at the
    # pragma line. Half the 512 threads pass (n = 256) and run the 4 FMAs: 4 FP32 FLOP per
    # thread on average, and the loop once, inside the if (before: 8, the loop unguarded)
    src = (
        "__global__ void k(const float *a, float *b, int n) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  if (t < n)\n"
        "    #pragma unroll\n"
        "    for (int j = 0; j < 4; j++) s += a[t * 4 + j] * 2.f;\n"
        "  b[t] = s;\n"
        "}\n"
        "int main() { float *a, *b; k<<<2, 256>>>(a, b, 256); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert a.counts.flops["fp32"] == pytest.approx(4)
    assert len(a.counts.loops) == 1


def test_a_local_never_read_costs_nothing(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `double t = a[i] * 3.3;` never read: nvcc and clang remove it (no mul.f64 in the PTX);
    # `float u = a[i] * 2.f` is stored: 1 FP32 FLOP. A local read only through a macro
    # (`#define OUT(i) b[i] = v`) is used: its multiply counts (1 FP32 FLOP).
    a = count(
        gpu,
        tmp_path,
        "#define OUT(i) b[i] = v\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = threadIdx.x;\n"
        "  double t = a[i] * 3.3;\n"
        "  float u = a[i] * 2.f;\n"
        "  b[i] = u;\n"
        "  float v = a[i] * 4.f;\n"
        "  OUT(i + 1);\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp64"] == 0
    assert a.counts.flops["fp32"] == pytest.approx(2)


def test_an_openmp_atomic_update_of_memory_is_no_flop(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # clang-16 -fopenmp --offload-arch=sm_86 -S: "#pragma omp atomic" on h[..] += v is one
    # atom.add.f64 (f32) in L2, no add of the SM (Nsight Compute counts no FLOP); the value
    # added is computed as usual: x[i] * 2.0 is one add.rn.f64 (x + x). A plain update is
    # counted: y[i] += x[i] is one add.f32. An atomic h[..]++ is one atom.add.f64 too.
    src = (
        "void f(const double *x, double *h, float *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: h[0:128])\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    #pragma omp atomic update\n"
        "    h[i % 64] += x[i] * 2.0;\n"
        "    #pragma omp atomic\n"
        "    y[i % 64] += 1.5f;\n"
        "    #pragma omp atomic\n"
        "    h[64 + i % 64]++;\n"
        "    y[i] += (float)x[i];\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="atomic.cpp")
    assert a.counts.flops["fp64"] == pytest.approx(1.0)
    assert a.counts.flops["fp32"] == pytest.approx(1.0)
    # each atomic update is one read-modify-write of its address, the plain update a load
    # and a store
    kinds = sorted((x.line, x.kind) for x in a.counts.accesses if x.buffer in ("h", "y"))
    assert kinds == [(5, "atomic"), (7, "atomic"), (9, "atomic"), (10, "load"), (10, "store")]


def test_atomics_under_a_test_on_loaded_data_are_a_guess(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # memtest's error count: the share of threads that find a mismatch is a guess (the model
    # takes half), so the updates it makes of `errors` are marked guessed
    # (``Access.guessed``); the update every thread makes of `seen` is not
    src = (
        "__global__ void k(const unsigned *p, unsigned *errors, unsigned *seen, unsigned v) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (p[i] != v) atomicAdd(errors, 1u);\n"
        "  atomicInc(seen, 1000u);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    by = {x.buffer: x for x in a.counts.accesses if x.kind == "atomic"}
    assert by["errors"].weight > 0 and by["errors"].guessed == pytest.approx(by["errors"].weight)
    assert by["seen"].guessed == 0 and by["seen"].weight == pytest.approx(1.0)
    # an integer add of one address is combined per warp; an increment (wrapping) is not
    assert by["errors"].combined and not by["seen"].combined


def test_a_face_pinning_the_lane_index_moves_sectors(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a 640^3 grid of doubles; iz moves across the lanes. The ix == 0 face is written by
    # whole warps: 640 x 640 elements, 3,276,800 B. The iz == 0 face (ix != 0: 639 x 640
    # elements) is written by one lane per row, 5,120 B apart: a 32 B sector each,
    # 13,086,720 B. Both faces (6.5 MB) overflow L2, so every written byte is DRAM traffic:
    # 16,363,520 B, where coalesced stores on both faces would be 6,548,480 B
    src = (
        "#define N 640\n"
        "__global__ void faces(double u[][N][N]) {\n"
        "  unsigned iz = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  unsigned iy = blockIdx.y * blockDim.y + threadIdx.y;\n"
        "  unsigned ix = blockIdx.z * blockDim.z + threadIdx.z;\n"
        "  if (ix == 0) u[ix][iy][iz] = -1.0;\n"
        "  else if (iz == 0) u[ix][iy][iz] = -1.0;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(8, 8, 4), grid=(80, 80, 160))
    assert a.memory.bytes_stored == pytest.approx(16_363_520, rel=0.01)


@pytest.mark.parametrize(
    "branch",
    ["if (a[i] < 0.0) x = a[i] * 3.0;\n  else x = 2.0;", "if (a[i] < 0.0) x = a[i] * 3.0;"],
)
def test_a_value_one_path_does_not_know_is_unknown_after_the_if(
    gpu, tmp_path: Path, branch: str
) -> None:  # type: ignore[no-untyped-def]
    # x = 2.0 before the test; one arm sets x = a[i] * 3.0 (1 FP64 at the default share 0.5),
    # the other path leaves (or sets) the constant 2.0: after the if x is not known, so
    # sqrt(x) runs: 14 FP64. (Walking the else arm last used to leave x = 2.0 and fold the
    # sqrt away.) 0.5 + 14 = 14.5
    src = (
        "__global__ void k(double *a, double *b) {\n"
        "  int i = threadIdx.x;\n"
        "  double x = 2.0;\n"
        f"  {branch}\n"
        "  b[i] = sqrt(x);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    assert a.counts.flops["fp64"] == pytest.approx(0.5 + 14)


def test_a_clamp_at_the_edge_leaves_the_index_the_threads_own(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a 3-tap stencil over 2^20 floats with its index clamped at the edges: the clamps run for
    # 1 and 2 of the 2^20 threads, so k stays the thread's own index, and a warp's 32 loads
    # of x[k] read consecutive floats. The 3 x 2^20 loads touch the 2^20 + 2 elements of
    # the index's range (not the few the clamped values take, as when the join took the
    # clamp's description): x's footprint is its 4 MiB
    src = (
        "__global__ void k(const float *x, float *y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.0f;\n"
        "  for (int d = -1; d <= 1; d++) {\n"
        "    int k = i + d;\n"
        "    if (k < 0) k = 0;\n"
        "    if (k > n - 1) k = n - 1;\n"
        "    s += x[k];\n"
        "  }\n"
        "  y[i] = s;\n"
        "}\n"
        "int main() { float *x, *y; k<<<4096, 256>>>(x, y, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    (load,) = (r for r in a.counts.accesses if r.buffer == "x")
    assert load.lane_stride == 1.0
    assert load.distinct == pytest.approx(2**20, rel=0.01)
    assert buffer_of(a, "x").footprint == pytest.approx(4 * 2**20, rel=0.01)


def test_a_shared_value_one_thread_sets_is_every_threads(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # thread 0 sets the __shared__ k = 8; after the barrier every thread reads it: the loop
    # runs 8 trips of one FP32 add for every thread (not a trip count made unknown because
    # the other threads skip the branch)
    src = (
        "__global__ void k(const float *a, float *b) {\n"
        "  __shared__ int k;\n"
        "  if (threadIdx.x == 0) k = 8;\n"
        "  __syncthreads();\n"
        "  float s = 0.0f;\n"
        "  for (int j = 0; j < k; j++) s += a[j];\n"
        "  b[threadIdx.x] = s;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    assert a.counts.flops["fp32"] == pytest.approx(8)


def test_a_kernel_too_long_to_walk_says_where_counting_stopped(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 700 statements `s = TERM(s)`, each a macro of 100 products and 99 sums (99 FMAs and a
    # multiply: 199 FP32 FLOP), walk over 250k syntax nodes: the walk stops at some line,
    # every statement before it costs its 199 FLOP, the ones after it (and the stores of b
    # and c at the end) nothing, and the verdict says from which line
    term = " + ".join(f"(x) * {j}.0f" for j in range(1, 101))
    body = "".join("  s = TERM(s);\n" for _ in range(700))
    src = (
        f"#define TERM(x) {term}\n"
        "__global__ void k(const float *a, float *b, float *c) {\n"
        "  int i = threadIdx.x;\n"
        "  float s = a[i];\n" + body + "  b[i] = s;\n  c[i] = 1.0f;\n}\n"
    )
    det = detected(tmp_path, src)
    v = estimate(det.kernels[0], det, gpu, Inputs(**LAUNCH))
    (cut,) = [t for t in v.terms if isinstance(t, AssumptionTerm) and t.kind == "rest"]
    assert 5 < cut.line < 705  # the statements are on lines 5-704
    assert v.counts is not None
    assert v.counts.flops["fp32"] == pytest.approx(199 * (cut.line - 5))
    assert f"statements from line {cut.line} on not counted" in explanation(v)
    assert not [x for x in analyze(det.kernels[0], det, gpu, Inputs(**LAUNCH)).counts.accesses
                if x.kind == "store"]  # fmt: skip


def test_a_conditional_in_a_kernel_takes_the_branch_its_macros_give(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `#define DIAG_ONLY 0`: `#if DIAG_ONLY` keeps its #else, the full 8 x 8 product (64
    # FMAs, 128 FP32 FLOP per thread), not the diagonal's 8 (16 FLOP). `#ifdef EXTRA`
    # names a macro nothing here defines (a build's -D flag may): its branch is counted,
    # one more multiply, as the first branch of a condition that cannot be decided.
    # Per thread: 128 + 1 = 129 FP32 FLOP.
    a = count(
        gpu,
        tmp_path,
        "#define DIAG_ONLY 0\n"
        "__global__ void k(const float *x, float *y) {\n"
        "  int t = threadIdx.x;\n"
        "  float s = 0.0f;\n"
        "#if DIAG_ONLY\n"
        "  for (int i = 0; i < 8; i++) s += x[i] * x[i];\n"
        "#else\n"
        "  for (int i = 0; i < 8; i++)\n"
        "    for (int j = 0; j < 8; j++) s += x[i] * x[j];\n"
        "#endif\n"
        "#ifdef EXTRA\n"
        "  s = s * x[t];\n"
        "#endif\n"
        "  y[t] = s;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(129)


def test_a_callee_summary_keeps_what_was_guessed(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # bump() is walked in full at its first 8 calls (``Settings.inline_full_calls``), then
    # replayed from its summary, whose access is booked with the last full walk's (line 11):
    # the half a thread the update under the test on loaded data adds there is a guess, the
    # unconditional updates are not
    calls = "".join("  bump(errors);\n" for _ in range(8))
    src = (
        "__device__ void bump(unsigned *c) { atomicAdd(c, 1u); }\n"
        "__global__ void k(const unsigned *p, unsigned *errors, unsigned v) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"{calls}"
        "  if (p[i] != v) bump(errors);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    by_line = {x.line: x for x in a.counts.accesses if x.buffer == "errors"}
    assert all(by_line[n].weight == 1 and by_line[n].guessed == 0 for n in range(4, 11))
    assert (by_line[11].weight, by_line[11].guessed) == pytest.approx((1.5, 0.5))


def test_a_local_alias_of_a_member_type_is_that_member(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # T = __half: Conv<__half> is the primary template, whose Type is half2 (4 B), not the
    # __nv_bfloat16 specialization (same size, another type); each thread loads and stores
    # one T2
    a = count(
        gpu,
        tmp_path,
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
        "template <typename T> struct Conv { using Type = half2; };\n"
        "template <> struct Conv<__nv_bfloat16> { using Type = __nv_bfloat162; };\n"
        "template <typename T>\n"
        "__global__ void k(T *out, const T *in) {\n"
        "  using T2 = typename Conv<T>::Type;\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  ((T2 *)out)[i] = ((const T2 *)in)[i];\n"
        "}\n"
        "int main() { __half *a, *b; k<__half><<<1024, 256>>>(a, b); }\n",
    )
    assert {(x.buffer, x.kind, x.elem) for x in a.counts.accesses} == {
        ("in", "load", 4),
        ("out", "store", 4),
    }
