"""What values are across the lanes of a warp (advice/lanes.py), in CUDA and in offloaded
loop nests."""

from __future__ import annotations

from roofline_lsp.advice.lanes import LaneAnalysis
from roofline_lsp.advice.nodes import walk
from roofline_lsp.detect.kernels import detect
from roofline_lsp.syntax.expr import text


def _lanes(src: str, path: str = "k.cu"):  # type: ignore[no-untyped-def]
    det = detect(src.encode(), path)
    return [LaneAnalysis(k) for k in det.kernels]


def _expr(an: LaneAnalysis, code: str) -> str:
    assert an.kernel.body is not None
    node = next(n for n in walk(an.kernel.body) if text(n) == code)
    lane = an.of(node)
    return lane.kind if lane.kind != "lane" else f"lane {lane.stride}"


def test_cuda_thread_index_arithmetic() -> None:
    [an] = _lanes(
        "__global__ void k(int N, float *x) {\n"
        "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int warp = threadIdx.x / 32; int row = idx / N; int col = idx % N;\n"
        "  float v = x[idx];\n"
        "  x[idx * N] = x[row * N + col] + x[warp] + x[threadIdx.y] + v;\n}\n"
    )
    assert _expr(an, "idx") == "lane 1"
    assert _expr(an, "threadIdx.x / 32") == "slow"
    assert _expr(an, "idx / N") == "slow"
    assert _expr(an, "row * N + col") == "lane 1"
    assert _expr(an, "idx * N") == "lane N"
    assert _expr(an, "blockIdx.x * blockDim.x") == "uniform"
    assert an.env["v"].kind == "varying"


def test_bounds_checks_do_not_make_inner_loop_counters_vary() -> None:
    [an] = _lanes(
        "__global__ void k(int n, float *a) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) { for (int k = 0; k < n; k++) a[i] += a[k]; }\n}\n"
    )
    assert an.env["k"].kind == "uniform"


def test_offload_loop_hierarchy() -> None:
    teams, combined, acc = _lanes(
        "void f(int B, int T, float *o) {\n"
        "  #pragma omp target teams distribute map(tofrom: o[0:B*T])\n"
        "  for (int b = 0; b < B; b++) {\n"
        "    #pragma omp parallel for\n"
        "    for (int t = 0; t < T; t++) o[b * T + t] = 0;\n  }\n}\n"
        "void g(int n, float *o) {\n"
        "  #pragma omp target teams distribute parallel for collapse(2) map(tofrom: o[0:n*n])\n"
        "  for (int i = 0; i < n; i++)\n    for (int j = 0; j < n; j++) o[j * n + i] = 0;\n}\n"
        "void h(int n, float *o) {\n"
        "  #pragma acc parallel loop gang copy(o[0:n*n])\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    #pragma acc loop vector\n"
        "    for (int j = 0; j < n; j++) o[i * n + j] = 0;\n  }\n}\n",
        "f.cpp",
    )
    assert (teams.env["b"].kind, teams.env["t"].kind) == ("uniform", "lane")
    assert _expr(teams, "b * T + t") == "lane 1"
    assert (combined.env["i"].kind, combined.env["j"].kind) == ("slow", "lane")
    assert _expr(combined, "j * n + i") == "lane n"
    assert (acc.env["i"].kind, acc.env["j"].kind) == ("uniform", "lane")


def test_early_hip_index_built_ins_are_the_cuda_ones() -> None:
    """``hipThreadIdx_x`` and its kin (hip_runtime.h defines them as threadIdx.x...)."""
    [an] = _lanes(
        "#include <hip/hip_runtime.h>\n"
        "__global__ void k(int N, float *x) {\n"
        "  int idx = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;\n"
        "  x[idx * N] = x[hipThreadIdx_y];\n}\n",
        "k.hip",
    )
    assert _expr(an, "idx") == "lane 1"
    assert _expr(an, "hipBlockIdx_x * hipBlockDim_x") == "uniform"
    assert _expr(an, "idx * N") == "lane N"
    assert _expr(an, "hipThreadIdx_y") == "slow"
