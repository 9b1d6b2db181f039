"""Counting rules of ``walk_loops.py`` (trip counts, unrolling) on small sources (expected
values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import LAUNCH, buffer_of, count, detected, loop_trips

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate import costs
from roofline_lsp.estimate.roofline import Inputs, analyze
from roofline_lsp.model.config import Config


def test_loop_trip_counts(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "#define N 100\n"
        "__global__ void k(float *x, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int a = 0; a < N; a += 2) s += x[a];\n"  # 50, constant
        "  for (int b = 0; b <= m; b++) s += x[b];\n"  # m + 1 from the launch argument
        "  for (int c = 1; c < 1024; c *= 2) s += x[c];\n"  # 10 (1, 2, ..., 512)
        "  for (int d = i; d < 1 << 20; d += blockDim.x * gridDim.x) s += x[d];\n"
        "  for (int e = 0; e < *x; e++) s += 1.0f;\n"  # data-dependent: default 16
        "  x[i] = s;\n"
        "}\n"
        "int main() { float *x; k<<<1024, 256>>>(x, 9); }\n"
    )
    a = count(gpu, tmp_path, src)
    trips = loop_trips(a)
    assert trips["a"] == (50, "constant")
    assert trips["b"] == (10, "argument")
    assert trips["c"] == (10, "constant")
    # grid-stride over 2^20 elements with 2^18 threads: 4 per thread on average
    assert trips["d"] == (pytest.approx(4.0), "grid-stride")
    assert trips["e"] == (16, "default")


def test_nested_unknown_loops_are_damped(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, int *n) {\n"
        "  for (int i = 0; i < n[0]; i++)\n"
        "    for (int j = 0; j < n[1]; j++)\n"
        "      x[j] += 1.0f;\n"
        "}\n",
        **LAUNCH,
    )
    # 16 outer trips (default_trips), 16 / 4 inner ones (nested_default): 64 FADD, not 256
    assert [lp.trips for lp in a.counts.loops] == [16, 4]
    assert a.counts.flops["fp32"] == pytest.approx(64)


@pytest.mark.parametrize(("n", "passes"), [(64, 16), (6, 3), (2, 2)])
def test_pragma_unroll_removes_loop_control_a_remainder_runs_it_every_trip(  # type: ignore[no-untyped-def]
    gpu, tmp_path: Path, n: int, passes: int
) -> None:
    # nvcc unrolls the run-time-count loop by 4 and runs what is left in a rolled loop: its
    # control (j < n, j++: 2 integer instructions) runs once per group of 4 and on every
    # remainder trip: 64 -> 16 groups; 6 -> 1 group + 2 trips; 2 -> 2 trips (not 2 / 4).
    # Under `#pragma unroll` (fully unrolled) it never runs.
    body = (
        "__global__ void k(float *x, int n) {\n"
        "  float s = 0.f;\n"
        "  {P}\n"
        "  for (int j = 0; j < n; j++) s += 1.0f;\n"
        "  x[threadIdx.x] = s;\n"
        "}\n"
        f"int main() {{ float *x; k<<<1, 256>>>(x, {n}); }}\n"
    )
    plain = count(gpu, tmp_path, body.replace("{P}", ""), name="a.cu")
    unrolled = count(gpu, tmp_path, body.replace("{P}", "#pragma unroll"), name="b.cu")
    assert plain.counts.int_ops - unrolled.counts.int_ops == pytest.approx(2 * passes)


def _assigned_reference(body):  # type: ignore[no-untyped-def]
    """Every identifier assigned in ``body``, walked naively (the definition)."""
    out = set()
    stack = [body]
    while stack:
        n = stack.pop()
        field = {"assignment_expression": "left", "update_expression": "argument"}.get(n.type)
        target = n.child_by_field_name(field) if field else None
        if target is not None and target.type == "identifier":
            out.add(target.text.decode())
        stack.extend(n.named_children)
    return out


def test_assigned_names_of_nested_loops_match_a_naive_walk() -> None:
    """Inner loops' bodies are computed once and reused by the enclosing loops: each loop's
    names are still exactly those assigned anywhere in its body, header updates included."""
    from roofline_lsp.estimate.walk_loops import assigned_names
    from roofline_lsp.syntax.parsing import parse

    src = (
        b"void f(float *a, int n) { int s = 0, t = 0, u = 0;\n"
        b"  for (int i = 0; i < n; ++i) { s += i;\n"
        b"    while (t < n) { t = t + 1; do { u++; } while (u < t); }\n"
        b"    for (int j = i; j < n; j += 2) for (int k = 0; k < j; k++) a[k] = s;\n"
        b"    for (float x : a) { s = x; }\n"
        b"  }\n"
        b"}\n"
    )
    loops = []
    stack = [parse(src).root_node]
    while stack:
        n = stack.pop()
        if n.type in ("for_statement", "while_statement", "do_statement", "for_range_loop"):
            loops.append(n.child_by_field_name("body"))
        stack.extend(n.named_children)
    assert len(loops) == 6
    for body in loops:  # outermost first, as the walker asks
        assert assigned_names(body) == _assigned_reference(body)


def test_thousands_of_nested_loops_give_a_verdict_not_a_crash(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Deeper than the estimator can walk: the kernel is reported too deeply nested (no
    RecursionError escapes); a nest it can walk is counted."""
    from hostile_files import nested_loops

    from roofline_lsp.detect.kernels import detect
    from roofline_lsp.estimate.roofline import estimate

    for depth, walked in ((3000, False), (100, True)):
        path = tmp_path / f"nest{depth}.cpp"
        path.write_text(nested_loops(depth))
        det = detect(path.read_bytes(), str(path))
        (kernel,) = det.kernels
        v = estimate(kernel, det, gpu)
        assert (v.bound != "unknown") == walked, v.rationale
        assert (v.rationale == "kernel too deeply nested to analyse") != walked


def test_a_binary_search_halves_its_interval(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "__global__ void k(const float *a, const float *z, int *r, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float v = z[i];\n"
        "  int low = 0, high = n;\n"
        "  while (high - low > 1) {\n"
        "    int mid = low + (high - low) / 2;\n"
        "    if (v < a[mid]) high = mid; else low = mid;\n"
        "  }\n"
        "  int lo = 0, hi = n - 1;\n"
        "  while (lo <= hi) {\n"
        "    int m = (lo + hi) >> 1;\n"
        "    if (a[m] < v) lo = m + 1; else hi = m - 1;\n"
        "  }\n"
        "  int u = 0, w = n;\n"
        "  while (u < w) { u++; }\n"  # not a bisection: the default
        "  r[i] = low + lo + u;\n"
        "}\n"
        "int main() { float *a, *z; int *r; k<<<4096, 256>>>(a, z, r, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    trips = {lp.line: (lp.trips, lp.source) for lp in a.counts.loops}
    # [0, 2^20): log2(2^20) + 1 = 21 halvings; [0, 2^20 - 1]: floor(log2(2^20 - 1)) + 1 = 20
    assert trips[5] == (21.0, "bisection")
    assert trips[10] == (20.0, "bisection")
    assert trips[15][1] != "bisection"
    # the probes a[mid] and a[m] are those of searches over 2^20 and 2^20 - 1 elements
    searched = {(x.buffer, x.line): x.searched for x in a.counts.accesses}
    assert searched[("a", 7)] == (2.0**20, 21.0)
    assert searched[("a", 12)] == (2.0**20 - 1, 20.0)
    assert searched[("z", 3)] is None and searched[("r", 16)] is None


def test_a_search_by_halving_steps_is_one(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # k = 2^19 on entry, halved before each test: 19 trips probing idx | k over [0, 2^20);
    # the for loop steps k from n / 2 = 2^19 down to 1: 20 trips over 2 x 2^19 elements. A
    # tree sum halves its step too, but sets no variable on what it reads: not a search
    src = (
        "__global__ void k(const float *a, float *s, int *r, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float z = a[i];\n"
        "  int k = 1 << 19, idx = 0, j = 0;\n"
        "  while (k >>= 1) {\n"
        "    int p = idx | k;\n"
        "    if (z >= a[p]) idx = p;\n"
        "  }\n"
        "  for (int h = n / 2; h > 0; h >>= 1) {\n"
        "    j = (a[j + h] <= z) ? j + h : j;\n"
        "  }\n"
        "  for (int h = n / 2; h > 0; h >>= 1)\n"
        "    if (i < h) s[i] += s[i + h];\n"
        "  r[i] = idx + j;\n"
        "}\n"
        "int main() { float *a, *s; int *r; k<<<4096, 256>>>(a, s, r, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    trips = {lp.line: lp.trips for lp in a.counts.loops}
    assert (trips[5], trips[9], trips[12]) == (19.0, 20.0, 20.0)
    searched = {(x.buffer, x.line, x.kind): x.searched for x in a.counts.accesses}
    assert searched[("a", 7, "load")] == (2.0**20, 19.0)
    assert searched[("a", 10, "load")] == (2.0**20, 20.0)
    assert searched[("s", 13, "load")] is None and searched[("a", 3, "load")] is None


def test_a_merge_path_search_s_interval_varies_by_thread(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # diag = 2 tx in [0, 126]: begin = max(0, diag - 64) in [0, 62], end = min(diag, 64) in
    # [0, 64]. No thread's interval is wider than 64: at most floor(log2(64)) + 1 = 7
    # halvings, not the 16-trip default of a loop with no counted bound
    src = (
        "__global__ void k(const int *a, const int *b, int *out) {\n"
        "  int diag = threadIdx.x * 2;\n"
        "  int begin = max(0, diag - 64);\n"
        "  int end = min(diag, 64);\n"
        "  while (begin < end) {\n"
        "    int mid = (begin + end) >> 1;\n"
        "    if (a[mid] <= b[diag - 1 - mid]) begin = mid + 1; else end = mid;\n"
        "  }\n"
        "  out[blockIdx.x * blockDim.x + threadIdx.x] = begin;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(64, 1, 1), grid=(1024, 1, 1))
    assert {lp.line: (lp.trips, lp.source) for lp in a.counts.loops} == {5: (7.0, "bisection")}


def test_work_of_an_unrolled_loop_copy_leaves_the_loops_around_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the c loop (3 trips) is unrolled: each copy's v * c depends on nothing the r loop
    # changes, so it is computed 3 times, not 64 x 3; the running sum stays: 3 + 192 FP32
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *x, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float v = x[i], acc = 0.f;\n"
        "  for (int r = 0; r < 64; r++) {\n"
        "    for (int c = 0; c < 3; c++) {\n"
        "      float t = v * (float)c;\n"
        "      acc += t;\n"
        "    }\n"
        "  }\n"
        "  y[i] = acc;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(3.0 + 192.0)


def test_an_offload_reduction_folds_each_iteration_over_the_warp(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a dot product with reduction(+: sum, n): each iteration does its FMUL + FADD and the
    # runtime folds the float sum over a warp (5 shuffle-add steps: 5 FP32) and the int
    # count likewise (5 int); each step of either tree also takes 4 integer instructions
    # (lane offset, participation test, shuffle operands): 2 x 5 x 4 = 40 more; without the
    # clause only the 2 FLOP remain
    def run(clause: str) -> tuple[float, float]:
        src = (
            "float dot(const float *a, const float *b, int m) {\n"
            "  float sum = 0.f;\n"
            "  int n = 0;\n"
            f"  #pragma omp target teams distribute parallel for {clause}\n"
            "  for (int i = 0; i < 1048576; i++) { sum += a[i] * b[i]; n++; }\n"
            "  return sum + n;\n"
            "}\n"
        )
        c = count(gpu, tmp_path, src, name="dot.cpp").counts
        return c.flops["fp32"], c.int_ops

    (f0, i0), (f1, i1) = run(""), run("reduction(+: sum, n)")
    assert f0 == pytest.approx(2.0)
    assert f1 == pytest.approx(2.0 + 5.0)
    assert i1 - i0 == pytest.approx(5.0 + 40.0)


def test_iterations_of_an_offloaded_loop_of_unknown_bound(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `n` is known nowhere. The iterations of the work-shared loop then come from the launch:
    # - no launch given: the launch a CUDA kernel would be assumed to have, 4096 x 256 =
    #   1,048,576 iterations, named as an assumption (not 16, which made a vector update's
    #   working set 128 B and its traffic the launch's fixed cost);
    # - 100 teams of 128 threads: the runtime sized the launch to the loop, so n is in
    #   (12,672, 12,800], the roundest 12,800 (a value of n, as from an argument);
    # - 3200 teams (LLVM's default team limit on NVIDIA GPUs) of 256 threads: the loop has at
    #   least 819,200 iterations, each thread runs an unknown number of them: 8
    #   (``capped_trips``) x 819,200 = 6,553,600, an assumption;
    # - the same launch with num_teams(3200) in the source: 819,200, one each, but an
    #   assumption: a clause of constants sized the launch, not the loop;
    # - num_teams(n / 256) sizes it to the loop: 819,200 from the launch.
    def run(clause: str = "", **launch: object) -> tuple[float, str]:
        src = (
            "void axpy(int n, float a, const float *x, float *y) {\n"
            f"  #pragma omp target teams distribute parallel for {clause}\n"
            "  for (int i = 0; i < n; i++) y[i] += a * x[i];\n"
            "}\n"
        )
        loops = count(gpu, tmp_path, src, name="axpy.cpp", **launch).counts.loops
        return loops[0].trips, loops[0].source

    assert run() == (1048576, "default")
    assert run(block=(128, 1, 1), grid=(100, 1, 1)) == (12800, "argument")
    assert run(block=(256, 1, 1), grid=(3200, 1, 1)) == (6553600, "default")
    assert run("num_teams(3200)", block=(256, 1, 1), grid=(3200, 1, 1)) == (819200, "default")
    sized = run("num_teams(n / 256)", block=(256, 1, 1), grid=(3200, 1, 1))
    assert sized == (819200, "launch")


def test_a_bound_in_a_field_of_a_struct_passed_by_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the host sets ``p.n = 4096; p.m = 1024`` and passes ``p``: the offloaded loop runs
    # 4096 iterations of 1024 trips (before: ``p.n`` unknown, 1.05 M assumed, 16 / 4 trips)
    src = (
        "struct Params { int n; int m; };\n"
        "void f(float *a, const float *b, Params p) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < p.n; i++) {\n"
        "    float s = 0.f;\n"
        "    for (int j = 0; j < p.m; j++) s += b[i * p.m + j];\n"
        "    a[i] = s;\n"
        "  }\n"
        "}\n"
        "int main() {\n"
        "  Params p;\n"
        "  p.n = 4096;\n"
        "  p.m = 1024;\n"
        "  float *a = new float[p.n], *b = new float[p.n * p.m];\n"
        "  f(a, b, p);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="s.cpp")
    trips = loop_trips(a)
    assert trips["i"][0] == 4096
    assert trips["j"] == (1024, "argument")


def test_a_struct_parameter_handed_to_a_device_function_keeps_its_fields(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # perlin: main sets ``params.octaves = 3``, a host function launches the kernel with
    # ``params``, the kernel hands it to ``sumOctaves(x, cfg)``: its loop from 1 to
    # cfg.octaves runs 2 trips (before: the copy lost the fields, 16 assumed)
    src = (
        "struct NoiseParams { float ppu; int octaves; };\n"
        "__device__ float sumOctaves(float x, NoiseParams cfg) {\n"
        "  float s = 0.f, f = 1.f;\n"
        "  for (int i = 1; i < cfg.octaves; i++) { f *= 2.f; s += f * x; }\n"
        "  return s;\n"
        "}\n"
        "__global__ void perlin(NoiseParams params, float *out) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  out[i] = sumOctaves(i / params.ppu, params);\n"
        "}\n"
        "void calculate(float *out, NoiseParams params) { perlin<<<4096, 256>>>(params, out); }\n"
        "int main() {\n"
        "  NoiseParams params;\n"
        "  params.ppu = 250.f;\n"
        "  params.octaves = 3;\n"
        "  float *o;\n"
        "  calculate(o, params);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(lp.var, lp.trips, lp.source) for lp in a.counts.loops] == [("i", 2, "argument")]


def test_a_countdown_while_loop_runs_its_counter_s_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # while (k--) runs k = n = 100 times; while (r-- > 8) runs r - 8 = 92 times
    src = (
        "__global__ void k(float *x, int n) {\n"
        "  int k = n, r = n;\n"
        "  float s = 0.f;\n"
        "  while (k--) s += x[k];\n"
        "  while (r-- > 8) s += x[r];\n"
        "  x[threadIdx.x] = s;\n"
        "}\n"
        "int main() { float *x; k<<<1, 32>>>(x, 100); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(lp.var, lp.trips) for lp in a.counts.loops] == [("k", 100), ("r", 92)]


def test_a_while_loop_stepped_in_its_test(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # while (v >>= 1) from v = 1024 tests 512, 256, ..., 1: 10 trips, then 0; while (--m)
    # from m = 8 tests 7, ..., 1: 7 trips; while (q /= 4) from q = 4096: 1024 ... 1, 6 trips
    src = (
        "__global__ void k(float *x, int n) {\n"
        "  float s = 0.f;\n"
        "  int v = n, m = 8, q = 4 * n;\n"
        "  while (v >>= 1) s += x[v];\n"
        "  while (--m) s *= 2.0f;\n"
        "  while (q /= 4) s -= x[q % n];\n"
        "  x[threadIdx.x] = s;\n"
        "}\n"
        "int main() { float *x; k<<<1, 32>>>(x, 1024); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(lp.var, lp.trips) for lp in a.counts.loops] == [("v", 10), ("m", 7), ("q", 6)]


def test_a_loop_distributed_over_teams_only_gets_one_team_an_iteration(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `teams distribute` without `parallel for` gives the m loop's iterations to the teams
    # (1000 of them), and the nested `parallel for` shares k among a team's 128 threads:
    # m 1000 iterations (the launch is sized to it). The launch says nothing of k: each of
    # the 128 threads runs an unknown number of its iterations, 8 (``capped_trips``): 1024,
    # an assumption (before: 128, one each, stated as known). Before that, m took all
    # 128,000 threads and k one each, so the 1000 sums stored 128,000 elements
    src = (
        "void dots(int moments, int size, const double *x, double *out) {\n"
        "  #pragma omp target teams distribute\n"
        "  for (int m = 0; m < moments; ++m) {\n"
        "    double s = 0.0;\n"
        "    #pragma omp parallel for reduction(+: s)\n"
        "    for (int k = 0; k < size; ++k) s += x[m * size + k];\n"
        "    out[m] = s;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="dots.cpp", block=(128, 1, 1), grid=(1000, 1, 1))
    trips = loop_trips(a)
    assert trips == {"m": (1000, "launch"), "k": (1024, "default")}
    out = buffer_of(a, "out")
    assert out.footprint == 1000 * 8


def test_an_array_declared_in_a_teams_distribute_loop_is_the_team_s(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # generic mode: the distribute loop's body runs once per team, so `tile` is one array
    # per team (clang keeps it in shared memory), filled and read by the team's threads
    # through the nested `parallel for` loops. Before, it was a per-thread array indexed
    # by the thread: 1 KiB in local memory for each of the launch's threads, written and
    # read back from DRAM once they outgrew L2
    src = (
        "void rows(const float *a, float *b, int nb) {\n"
        "  #pragma omp target teams distribute thread_limit(256)\n"
        "  for (int bid = 0; bid < nb; bid++) {\n"
        "    float tile[256];\n"
        "    #pragma omp parallel for\n"
        "    for (int lid = 0; lid < 256; lid++) tile[lid] = a[bid * 256 + lid];\n"
        "    #pragma omp parallel for\n"
        "    for (int lid = 0; lid < 256; lid++) {\n"
        "      float s = 0.f;\n"
        "      for (int k = 0; k < 256; k++) s += tile[k] * k;\n"
        "      b[bid * 256 + lid] = s;\n"
        "    }\n"
        "  }\n"
        "}\n"
        "int main() { float *a, *b; rows(a, b, 4096); }\n"
    )
    a = count(gpu, tmp_path, src, name="rows.cpp")
    assert a.counts.local_bytes == {}
    assert a.memory.local_bytes == 0
    tile = [x for x in a.counts.accesses if x.buffer == "tile"]
    assert tile and {x.space for x in tile} == {"shared"}
    # a and b: 4096 x 256 floats each, read and written once
    assert sum(b.footprint for b in a.memory.buffers) == pytest.approx(2 * 4096 * 256 * 4)


def test_a_loop_whose_statement_starts_with_a_pragma_runs_it_every_trip(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # `for (i...)` then `#pragma unroll` then `for (j...)`: tree-sitter ends the i loop at
    # the pragma line with an empty body and puts the j loop after it. The j loop is the i
    # loop's statement: 64 x 4 FMAs of 2 FLOP = 512 FP32 FLOP per thread, not 4 x 2 = 8
    src = (
        "__global__ void k(const float *a, float *b) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int i = 0; i < 64; i++)\n"
        "    #pragma unroll\n"
        "    for (int j = 0; j < 4; j++)\n"
        "      s += a[t + i * 4 + j] * 2.f;\n"
        "  b[t] = s;\n"
        "}\n"
        "int main() { float *a, *b; k<<<4096, 256>>>(a, b); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert a.counts.flops["fp32"] == pytest.approx(512)
    assert [lp.trips for lp in a.counts.loops] == [64, 4]


def test_an_inner_parallel_loop_bounded_per_team_runs_the_team_s_chunk(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the OpenMP examples' teams.2 form: `distribute` gives chunks of 1024 to the teams,
    # `parallel for` (the distribute loop's statement, after its pragma line) shares each
    # chunk up to min(i0 + 1024, N). With N = 2^20 every team's chunk is 1024 (N is a
    # multiple of 1024): 1024 trips (+0.5, as for any start that moves with the team or
    # thread), no assumed trip count, and the 2^20 elements of B and C read once: 8 MiB
    src = (
        "#define min(x, y) (((x) < (y)) ? (x) : (y))\n"
        "float dotprod(float B[], float C[], int N, int block_size) {\n"
        "  float sum = 0.0;\n"
        "  int i, i0;\n"
        "  #pragma omp target map(to: B[0:N], C[0:N]) map(tofrom: sum)\n"
        "  #pragma omp teams num_teams(8) thread_limit(256) reduction(+:sum)\n"
        "  #pragma omp distribute\n"
        "  for (i0 = 0; i0 < N; i0 += block_size)\n"
        "    #pragma omp parallel for reduction(+:sum)\n"
        "    for (i = i0; i < min(i0 + block_size, N); i++)\n"
        "      sum += B[i] * C[i];\n"
        "  return sum;\n"
        "}\n"
        "int main() { float *b, *c; return (int)dotprod(b, c, 1 << 20, 1024); }\n"
    )
    a = count(gpu, tmp_path, src, name="teams.c")
    assert [(lp.var, lp.trips, lp.source) for lp in a.counts.loops][-1] == (
        "i",
        1024.5,
        "thread range",
    )
    assert sum(b.footprint for b in a.memory.buffers) == pytest.approx(2 * 4 * 2**20)


def test_a_block_s_share_of_rows_from_floor_and_ceil(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Each block of 16 output rows stages the input rows it maps to (a 1000 -> 1500 zoom):
    # rows floorf(16 * by * 1000 / 1500.f) to ceilf(16 * (by + 1) * 1000 / 1500.f), about
    # 10.7 + 1; on the means of blockIdx.y (46 of 0..92): floor(490.67) = 490 and
    # ceil(501.33) = 502, 12 rows for the 16 threads of a column: from the mean start
    # threadIdx.y = 7.5, (12 - 7.5) / 16 + 0.5 (a block-stride loop's last partial trip) =
    # 0.78 trips per thread (exactly: 12 of 16 threads run one, 0.75), not the default 16.
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(const float *in, float *out, int ih, int oh) {\n"
        "  __shared__ float tile[1024];\n"
        "  int first = floorf((blockIdx.y * blockDim.y * ih) / (float)oh);\n"
        "  int last = ceilf(((blockIdx.y + 1) * blockDim.y * ih) / (float)oh);\n"
        "  for (int r = threadIdx.y; r < last - first; r += blockDim.y)\n"
        "    tile[r] = in[(first + r) * 64 + threadIdx.x];\n"
        "  __syncthreads();\n"
        "  out[(blockIdx.y * blockDim.y + threadIdx.y) * 64 + threadIdx.x] = tile[threadIdx.y];\n"
        "}\n"
        "int main() { float *in, *out; k<<<dim3(1, 93), dim3(64, 16)>>>(in, out, 1000, 1500); }\n",
    )
    trips = loop_trips(a)
    assert trips["r"][1] == "grid-stride"
    assert trips["r"][0] == pytest.approx(0.78, abs=0.01)


def test_statement_macros_run_once_and_carry_what_they_assign(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # nvcc -arch=sm_86 -ptx (-Xcicc -O1), FP32 FLOP per thread; each loop runs 64 trips:
    #   AXPY(y, a[i], a[k])  do { y = a * x + y; } while (0): one pass, one fma     128
    #   STEP(v, a[k])        v = v * 0.5f + a[k]: v changes every trip, one fma     128
    # Before: the do-while(0) ran the 16-trip default (1088 FLOP), and v * 0.5f was
    # hoisted out of the loop as if v did not change (65 FLOP).
    a = count(
        gpu,
        tmp_path,
        "#define AXPY(y, a, x) do { (y) = (a) * (x) + (y); } while (0)\n"
        "#define STEP(v, k) v = v * 0.5f + k\n"
        "__global__ void k(const float *a, float *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float y = 0.f, v = a[i];\n"
        "  for (int k = 0; k < 64; k++) AXPY(y, a[i], a[k]);\n"
        "  for (int k = 0; k < 64; k++) STEP(v, a[k]);\n"
        "  b[i] = y + v;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(128 + 128 + 1)


def test_a_trips_hint_gives_a_loop_its_count(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Bounds read from memory (a CSR row, a convergence test) have no name a hint could bind:
    # `// roofline: trips=N` on the line above the loop (through `#pragma unroll`) or on the
    # loop's first line sets that loop's count. Per thread: the row loop 8 trips x (val[j] *
    # x[col[j]] + s: one mul, one add) = 16 FP32 FLOP; the while loop 32 trips x one mul =
    # 32; the unhinted loop over *w keeps the default 16 x one add = 16. 64 FP32 FLOP.
    src = (
        "__global__ void k(const int *row, const int *col, const float *val, const float *x,\n"
        "                  float *y, const float *w) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.0f, v = x[i], t = 0.0f;\n"
        "  // roofline: trips=8\n"
        "  #pragma unroll\n"
        "  for (int j = row[i]; j < row[i + 1]; j++)\n"
        "    s += val[j] * x[col[j]];\n"
        "  while (v > w[0]) { // roofline: trips = 1 << 5\n"
        "    v = v * 0.5f;\n"
        "  }\n"
        "  for (int e = 0; e < *w; e++) t += 1.0f;\n"
        "  y[i] = s + v + t;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, **LAUNCH)
    trips = {lp.line: (lp.trips, lp.source) for lp in a.counts.loops}
    assert trips == {7: (8, "hint"), 9: (32, "hint"), 12: (16, "default")}
    assert a.counts.flops["fp32"] == pytest.approx(16 + 32 + 16 + 2)  # + the two adds of y[i]
    # a hint two lines above, past code, is not this loop's
    far = src.replace("  // roofline: trips=8\n", "  // roofline: trips=8\n  s = 1.0f;\n")
    b = count(gpu, tmp_path, far, **LAUNCH)
    assert [lp.source for lp in b.counts.loops][0] == "default"


def test_counting_the_bits_of_a_known_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the start of a branch-free binary search over n = 1,000,000 sorted keys:
    # `while (n >> nbits) nbits++` counts the bits of n: 20 trips (2^19 <= n < 2^20), and
    # leaves nbits = 20, so k = 2^19 and `while (k >>= 1)` runs 19 times (2^18 ... 1);
    # before, both loops fell to the 16-trip default
    src = (
        "__global__ void k(const float *a, const float *zz, long *r, const long n) {\n"
        "  long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  unsigned nbits = 0;\n"
        "  while (n >> nbits) nbits++;\n"
        "  long k = 1L << (nbits - 1);\n"
        "  float z = zz[i];\n"
        "  long idx = (a[k] <= z) ? k : 0;\n"
        "  while (k >>= 1) {\n"
        "    long q = idx | k;\n"
        "    if (q < n && z >= a[q]) idx = q;\n"
        "  }\n"
        "  r[i] = idx;\n"
        "}\n"
        "int main() { float *a, *z; long *r; k<<<1024, 256>>>(a, z, r, 1000000); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(lp.var, lp.trips, lp.source) for lp in a.counts.loops] == [
        ("nbits", 20, "bit length"),
        ("k", 19, "constant"),
    ]


def test_a_grid_stride_loop_over_fewer_elements_than_threads(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 2048 blocks of 1 MiB over 65,536 x 64 = 4,194,304 threads: thread i < 2048 runs one
    # trip, the others none, 2048 / 4,194,304 = 0.000488 trips on average (it was taken as
    # 0.5, a thousand times the work); over 2^24 elements, 4 trips each, as before
    src = (
        "__global__ void k(char *ptr, unsigned long size) {\n"
        "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  unsigned long n = size / (1024 * 1024);\n"
        "  for (int i = idx; i < n; i += gridDim.x * blockDim.x)\n"
        "    ptr[i * 1024 * 1024] = 1;\n"
        "}\n"
    )
    for size, expected in ((2.0**31, 2048 / 4194304), (2.0**44, 4.0)):
        a = count(gpu, tmp_path, src, values={"size": size}, block=(64, 1, 1), grid=(65536, 1, 1))
        (loop,) = a.counts.loops
        assert (loop.trips, loop.source) == (pytest.approx(expected, rel=1e-3), "grid-stride")


def test_a_loop_over_one_row_runs_the_average_row(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # CSR SpMV: 1000 rows (rowptr holds 1001 offsets), 64000 nonzeros in cols and vals.
    # Each row's count is data; over the rows they sum to the nonzeros: 64000 / 1000 = 64
    # trips, through locals (k) or the offsets themselves (j), or from 0 (m). A loop
    # over a bound read from memory that is no row (t) keeps the default.
    src = (
        "__global__ void spmv(const int *rowptr, const int *cols, const float *vals,\n"
        "                     const float *x, float *y, const int *len) {\n"
        "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (r >= 1000) return;\n"
        "  float s = 0.f;\n"
        "  int beg = rowptr[r], end = rowptr[r + 1];\n"
        "  for (int k = beg; k < end; k++) s += vals[k] * x[cols[k]];\n"
        "  for (int j = rowptr[r]; j < rowptr[r + 1]; ++j) s += vals[j];\n"
        "  for (int m = 0; m < rowptr[r + 1] - rowptr[r]; m++) s += vals[beg + m];\n"
        "  for (int t = 0; t < len[r]; t++) s += x[t];\n"
        "  y[r] = s;\n"
        "}\n"
        "int main() {\n"
        "  int *rowptr, *cols, *len; float *vals, *x, *y;\n"
        "  cudaMalloc(&rowptr, 1001 * sizeof(int));\n"
        "  cudaMalloc(&cols, 64000 * sizeof(int));\n"
        "  cudaMalloc(&vals, 64000 * sizeof(float));\n"
        "  spmv<<<4, 256>>>(rowptr, cols, vals, x, y, len);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src)
    trips = loop_trips(a)
    assert trips["k"] == (pytest.approx(64.0), "average over the rows")
    assert trips["j"] == (pytest.approx(64.0), "average over the rows")
    assert trips["m"] == (pytest.approx(64.0), "average over the rows")
    assert trips["t"] == (16, "default")


def test_a_grid_stride_loop_is_unrolled_by_nvcc_and_not_by_clang(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 1024 threads stride over 2^20 elements: 1024 trips each. The loop control (the compare
    # and the `pos += stride` add: 2 integer ops) runs once per iteration in clang's -O3
    # code (its trip count needs a division: LLVM leaves the loop rolled; clang -S of this
    # loop has one block, no copies) and once per 4 iterations in nvcc's (an unroll by 4,
    # its SASS holds four copies of the body). On the loop line: 1 (the start index) +
    # 2 x 1024 for clang, 1 + 2 x 1024 / 4 for nvcc.
    det = detected(
        tmp_path,
        "__global__ void scale(float *a, int n) {\n"
        "  int stride = blockDim.x * gridDim.x;\n"
        "  for (int pos = blockIdx.x * blockDim.x + threadIdx.x; pos < n; pos += stride)\n"
        "    a[pos] = 2.0f * a[pos];\n"
        "}\n"
        "int main() { float *a; scale<<<4, 256>>>(a, 1 << 20); }\n",
    )
    (k,) = det.kernels
    by = {c: analyze(k, det, gpu, Inputs(), Config(build_compiler=c)) for c in ("nvcc", "clang")}
    (loop,) = by["clang"].counts.loops
    assert loop.source == "grid-stride" and loop.trips == pytest.approx(1024, rel=1e-3)
    assert by["clang"].counts.lines[3][3] == pytest.approx(1 + 2 * loop.trips)
    assert by["nvcc"].counts.lines[3][3] == pytest.approx(1 + 2 * 1024 / 4, rel=1e-5)


def test_a_value_the_loop_stores_is_not_hoisted_out_of_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 50 trips of x[i] = x[i] * 0.9f + 0.1f: x[i] changes every trip, one FMA each (100
    # FLOP; hoisted as if x[i] did not change it was 2). y is never stored in the loop:
    # y[i] * 2.0f is loop-invariant, computed once (1 FLOP). 101 in all.
    a = count(
        gpu,
        tmp_path,
        "__global__ void k(float *x, const float *y, float *z) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (int t = 0; t < 50; t++) x[i] = x[i] * 0.9f + 0.1f;\n"
        "  for (int t = 0; t < 50; t++) z[i] = y[i] * 2.0f;\n"
        "}\n",
        **LAUNCH,
    )
    assert a.counts.flops["fp32"] == pytest.approx(101)
    # the loads' addresses do not move: x and y are one element a thread
    loads = {r.buffer: r.distinct for r in a.counts.accesses if r.kind == "load"}
    assert loads["x"] == loads["y"] == a.threads


def test_a_constant_the_host_sets_bounds_a_loop(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # c_iters = 40 through cudaMemcpyToSymbol before the launch: 40 trips of one FMA (80
    # FLOP a thread), not the 16 assumed for an unknown bound
    a = count(
        gpu,
        tmp_path,
        "__constant__ int c_iters;\n"
        "__global__ void k(float *x) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float r = x[i];\n"
        "  for (int t = 0; t < c_iters; t++) r = r * 0.5f + 1.0f;\n"
        "  x[i] = r;\n"
        "}\n"
        "int main() {\n"
        "  int iters = 40;\n"
        "  cudaMemcpyToSymbol(c_iters, &iters, sizeof(int));\n"
        "  float *x; k<<<1024, 256>>>(x);\n"
        "}\n",
    )
    (loop,) = a.counts.loops
    assert (loop.trips, loop.source) == (40, "argument")
    assert a.counts.flops["fp32"] == pytest.approx(80)


def test_a_symbol_the_kernel_changes_is_not_the_host_s_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # d_count starts at 40 (copied from the host) but every thread adds to it with
    # atomicAdd while others loop on it: the host's 40 is not its value in the kernel, so
    # the loop keeps the unknown-bound default; c_len, never changed, gives its 8 trips
    a = count(
        gpu,
        tmp_path,
        "__device__ int d_count;\n"
        "__constant__ int c_len;\n"
        "__global__ void k(float *x) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (int j = 0; j < d_count; j++) x[i] += 1.0f;\n"
        "  for (int j = 0; j < c_len; j++) x[i] *= 2.0f;\n"
        "  atomicAdd(&d_count, 1);\n"
        "}\n"
        "int main() {\n"
        "  int start = 40, len = 8;\n"
        "  cudaMemcpyToSymbol(d_count, &start, sizeof(int));\n"
        "  cudaMemcpyToSymbol(c_len, &len, sizeof(int));\n"
        "  float *x; k<<<1024, 256>>>(x);\n"
        "}\n",
    )
    sources = {lp.line: (lp.trips, lp.source) for lp in a.counts.loops}
    assert sources[5][1] == "default"
    assert sources[6] == (8, "argument")


def test_a_loop_counted_by_its_opening_break_runs_its_body_every_trip(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # for (;;) and while (true) whose bodies open with `if (j >= m) break;` (m = 100 from the
    # launch): 100 trips each of one FMA (2 FP32 FLOP), 400 FLOP per thread; the exit test
    # runs every trip, so the FMA after it is not halved as a branch's would be
    src = (
        "__global__ void k(float *a, int n, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float s = a[i];\n"
        "  for (int j = 0;; j++) {\n"
        "    if (j >= m) break;\n"
        "    s = s * 0.9f + 0.1f;\n"
        "  }\n"
        "  int t = 0;\n"
        "  while (true) {\n"
        "    if (t >= m) break;\n"
        "    s = s * 0.5f + 0.2f;\n"
        "    t++;\n"
        "  }\n"
        "  a[i] = s;\n"
        "}\n"
        "int main() { int n = 1 << 20; float *a; k<<<n / 256, 256>>>(a, n, 100); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert loop_trips(a) == {
        "j": (100, "argument"),
        "t": (100, "argument"),
    }
    assert a.counts.flops["fp32"] == pytest.approx(400)


def test_a_counter_inside_its_test_is_stepped_to_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # m = 10000 from the launch: j * j <= m runs j = 1..100 (100 trips), (1 << t) < m runs
    # t = 0..13 (14), m > 3 * u runs u = 1..3333 (3333): one FMA each, 2 * 3447 = 6894
    # FP32 FLOP per thread. A test on a value read from memory keeps the default
    src = (
        "__global__ void k(float *a, int n, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float s = a[i];\n"
        "  for (int j = 1; j * j <= m; j++) s = s * 0.9f + 0.1f;\n"
        "  for (int t = 0; (1 << t) < m; t++) s = s * 0.5f + 0.2f;\n"
        "  for (int u = 1; m > 3 * u; u++) s = s * 0.25f + 0.2f;\n"
        "  for (int v = 1; v * v <= (int)a[0]; v++) s += 1.0f;\n"
        "  a[i] = s;\n"
        "}\n"
        "int main() { int n = 1 << 20; float *a; k<<<n / 256, 256>>>(a, n, 10000); }\n"
    )
    a = count(gpu, tmp_path, src)
    trips = loop_trips(a)
    assert trips["j"] == (100, "stepped to its test")
    assert trips["t"] == (14, "stepped to its test")
    assert trips["u"] == (3333, "stepped to its test")
    assert trips["v"] == (16, "default")
    assert a.counts.flops["fp32"] == pytest.approx(2 * (100 + 14 + 3333) + 16)


@pytest.mark.parametrize(
    ("loop", "expected"),
    [
        # m = 1000 from the launch; the trips counted by hand
        ("for (int c = m; c--; ) s = s * 0.9f + 0.1f;", 1000),  # c = 999 .. 0 in the body
        ("for (unsigned c = m; c-- > 0; ) s = s * 0.9f + 0.1f;", 1000),  # tests 1000 .. 1 pass
        ("for (int c = 0; c < m;) { s = s * 0.9f + 0.1f; c += 3; }", 334),  # 0, 3, .. 999
        ("int c = m; while (--c >= 0) s = s * 0.9f + 0.1f;", 1000),  # tests 999 .. 0 pass
        ("int c = m; do { s = s * 0.9f + 0.1f; } while (--c > 0);", 1000),  # 1 + 999 tests
        ("int c = 8; do { s = s * 0.9f + 0.1f; } while (c >>= 1);", 4),  # 8, then 4, 2, 1
        ("for (double c = 0.0; c <= 1.0; c += 0.001) s = s * 0.9f + 0.1f;", 1001),
        # two counters closing in: (0, 999), (1, 998) .. (499, 500), then c == e fails
        ("for (int c = 0, e = m - 1; c < e; c++, e--) s = s * 0.9f + 0.1f;", 500),
        ("int c = 0, e = m; while (c < e) { s = s * 0.9f + 0.1f; c += 2; e -= 3; }", 200),
    ],
)
def test_loop_forms_counted_without_a_default(gpu, tmp_path: Path, loop: str, expected: int):  # type: ignore[no-untyped-def]
    src = (
        "__global__ void k(float *a, int n, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float s = a[i];\n"
        f"  {loop}\n"
        "  a[i] = s;\n"
        "}\n"
        "int main() { int n = 1 << 20; float *a; k<<<n / 256, 256>>>(a, n, 1000); }\n"
    )
    a = count(gpu, tmp_path, src)
    [lp] = a.counts.loops
    assert (lp.var, lp.trips) == ("c", pytest.approx(expected)), loop


def test_a_loop_tested_through_a_warp_vote_counts_the_lane_s_test(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # for (v = tid; __any_sync(~0, v < n); v += threads) with n = 2^20 and 1024 x 256 =
    # 262,144 threads: the warp runs while any lane's v < n, 2^20 / 262,144 = 4 trips, as the
    # plain grid-stride loop; likewise `while (__all_sync(~0, v < n))` (4 trips)
    src = (
        "__global__ void k(const float *a, float *b, int n) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (int v = t; __any_sync(0xffffffff, v < n); v += gridDim.x * blockDim.x)\n"
        "    if (v < n) b[v] = a[v];\n"
        "  int w = t;\n"
        "  while (__all_sync(0xffffffff, (w < n))) { b[w] += 1.0f; w += gridDim.x * blockDim.x; }\n"
        "}\n"
        "int main() { int n = 1 << 20; float *a, *b; k<<<1024, 256>>>(a, b, n); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert loop_trips(a) == {
        "v": (pytest.approx(4), "grid-stride"),
        "w": (pytest.approx(4), "grid-stride"),
    }


def test_an_unknown_count_stays_under_the_min_that_bounds_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # m is unknown (no launch gives it): `j < min(6, m)` runs at most 6 trips and
    # `q <= std::min(m, 3)` from 1 at most 3, not the 16 assumed for an unknown count;
    # `r < min(64, m)` may run 64, so the assumed 16 stands. Each body: one FMA (2 FLOP)
    src = (
        "__global__ void k(float *a, int n, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = a[i];\n"
        "  for (int j = 0; j < min(6, m); j++) s = s * 0.9f + 0.1f;\n"
        "  for (int q = 1; q <= std::min(m, 3); q++) s = s * 0.9f + 0.1f;\n"
        "  for (int r = 0; r < min(64, m); r++) s = s * 0.9f + 0.1f;\n"
        "  a[i] = s;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(1024, 1, 1))
    assert loop_trips(a) == {
        "j": (6, "default"),
        "q": (3, "default"),
        "r": (16, "default"),
    }
    assert a.counts.flops["fp32"] == pytest.approx(2 * (6 + 3 + 16))


def test_clang_splits_off_the_remainder_of_each_loop_of_a_run_time_count(
    gpu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # each iteration of the offloaded loop enters the j loop (n = 3 trips, from main) once and
    # its k loop (m = 5 trips) 3 times: 4 entries of a loop LLVM unrolls by 4 with a run-time
    # count, each splitting off its remainder (REMAINDER_SETUP, 8 integer instructions).
    # The c loop's count is a constant (64: unrolled by 4 with no remainder to split at run
    # time) and the w loop's is unknown (16 assumed): neither pays it. Nor does a CUDA kernel.
    region = (
        "void f(float *a, const float *b, int n, int m, const int *len) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < 4096; i++) {\n"
        "    float s = 0.f;\n"
        "    for (int j = 0; j < n; j++)\n"
        "      for (int k = 0; k < m; k++) s += b[i * 16 + j * m + k];\n"
        "    for (int c = 0; c < 64; c++) s += b[c];\n"
        "    for (int w = 0; w < len[i]; w++) s += b[w];\n"
        "    a[i] = s;\n"
        "  }\n"
        "}\n"
        "int main() { float *a, *b; int *len; f(a, b, 3, 5, len); }\n"
    )
    kernel = (
        "__global__ void k(float *a, const float *b, int n, int m) {\n"
        "  int i = threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < n; j++)\n"
        "    for (int k = 0; k < m; k++) s += b[i * 16 + j * m + k];\n"
        "  a[i] = s;\n"
        "}\n"
        "int main() { float *a, *b; k<<<16, 256>>>(a, b, 3, 5); }\n"
    )

    def ints(src: str, name: str) -> float:
        return count(gpu, tmp_path, src, name=name, **LAUNCH).counts.int_ops

    with_setup = ints(region, "r.cpp"), ints(kernel, "k.cu")
    monkeypatch.setattr(costs, "REMAINDER_SETUP", 0.0)
    without = ints(region, "r.cpp"), ints(kernel, "k.cu")
    assert with_setup[0] - without[0] == pytest.approx(4 * 8.0)
    assert with_setup[1] == pytest.approx(without[1])


def test_a_persistent_block_loop_is_stepped_to_its_exit_test(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 128 blocks walk 4096 tiles of 256 elements: block p takes tiles p, p + 128, ... while
    # its row p / 64 is below 64, p < 4096. From the mean block (63.5) the first tile past
    # the end is 32 steps on: 32 trips, one FADD each (32 FP32 FLOP per thread) instead of
    # the 16 a loop without a test of its own was given
    src = (
        "__global__ void k(float *c) {\n"
        "  for (unsigned int p = blockIdx.x;; p += gridDim.x) {\n"
        "    const unsigned int row = p / 64;\n"
        "    if (row >= 64) break;\n"
        "    c[p * 256 + threadIdx.x] += 1.0f;\n"
        "  }\n"
        "}\n"
        "int main() { float *c; k<<<128, 256>>>(c); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert loop_trips(a) == {None: (32, "stepped to its test")}
    assert a.counts.flops["fp32"] == pytest.approx(32)


def test_a_pointer_the_loop_header_steps_reads_a_new_element_each_trip(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``for (float *p = a; p < a + n; ++p) *p *= 2``: each of the 1,048,576 iterations reads
    # and writes its own float through p, 4 MiB of a; read as one element for all (the
    # header's step left p's address fixed) the working set was 4 B and fitted in L2
    src = (
        "void twice(float *a) {\n"
        "  const int n = 1048576;\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
        "  for (float *p = a; p < a + n; ++p) *p *= 2.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="twice.cpp")
    assert {x.distinct for x in a.counts.accesses if x.buffer == "a"} == {1048576}
    assert buffer_of(a, "a").footprint == 4 * 1048576


def test_a_pointer_run_through_a_buffer_counts_its_trips(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``for (const float *p = x + tid; p < x + n; p += stride)``: the header is a counted
    # loop over the pointer (its declarator ``*p`` read as ``p``), the trips those of the
    # offsets tid to n by the grid's 1024 x 256 threads: 2^24 / 2^18 = 64, not the default
    # 16; each reads its own float of x: 64 MiB over the launch
    src = (
        "__global__ void twice(const float *x, float *y, int n) {\n"
        "  int tid = blockIdx.x * blockDim.x + threadIdx.x, stride = blockDim.x * gridDim.x;\n"
        "  for (const float *p = x + tid; p < x + n; p += stride) y[p - x] = 2.f * *p;\n"
        "}\n"
        "int main() { float *x, *y; twice<<<1024, 256>>>(x, y, 1 << 24); }\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(1024, 1, 1))
    ((trips, source),) = loop_trips(a).values()
    assert (trips, source) == (pytest.approx(64.0), "grid-stride")
    assert buffer_of(a, "x").footprint == pytest.approx(4 * (1 << 24), rel=1e-6)
    # ``p - x`` is an integer, the elements between two pointers: one FLOP a trip, not two
    assert a.counts.flops["fp32"] == pytest.approx(64.0, rel=1e-6)


def test_a_loop_body_with_stray_bytes_is_walked(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # invalid UTF-8 inside a loop body parses as an ERROR node with no children; the body
    # scan asked it for its first child and the whole analysis failed (IndexError), in an
    # editor on every keystroke: now the loop's 8 trips are counted around it
    src = (
        b"__global__ void k(float *y) {\n"
        b"  for (int i = 0; i < 8; i++)\n"
        b"    y[\xff\xfei] = 1.0f;\n"
        b"}\n"
        b"int main() { float *y; k<<<1, 32>>>(y); }\n"
    )
    det = detect(src, str(tmp_path / "k.cu"))
    a = analyze(det.kernels[0], det, gpu, None)
    assert [lp.trips for lp in a.counts.loops] == [8.0]
