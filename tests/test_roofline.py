"""The static estimator on small hand-written kernels (tests/fixtures/estimator/).

Every expected number below is derived by hand from the cost model documented in
``costs.py`` / ``counting.py`` / ``memory.py`` / ``roofline.Calibration``:

* FLOP: FADD/FMUL = 1, FMA = 2 (so ``a * x + y`` is 2); library calls per ``costs.py``.
* integer ops: 1 per ``+ - * & | ^ << >>`` and comparison on integers; ``a * b + c`` and
  ``a + b + c`` fuse into one (IMAD / IADD3); an add of a constant costs 0.5; one address
  computation (1) per distinct global access (shared: 0.5) shared by its load and store;
  the prologue costs 2 (``int_entry``); loop control is the loop's own test and increment,
  run once per 4 iterations (nvcc's default unrolling) or never when fully unrolled;
  OpenMP work-shared loops add 15 per iteration (``omp_iteration_ints``) and 30 per GPU
  thread (``omp_thread_ints``).
* DRAM bytes: each buffer's distinct footprint once (reads and writes), plus 4096 bytes per
  launch (``launch_floor``), plus capacity misses (2% of the re-reads) when a re-read buffer
  outgrows L2; when the whole working set fits in half of L2, half its writes stay in L2
  (fewer as it fills the rest).

The RTX 3080's ridge points: fp32 32.97, fp64 0.5152, int 16.485 ops/byte; L2 5 MiB.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from counting_helpers import buffer_of, count, detected

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.kernel_estimate import KernelEstimate
from roofline_lsp.estimate.roofline import CALIBRATION, Inputs, analyze, estimate
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.present.explanations import explanation, term_text

FIXTURES = Path(__file__).parent / "fixtures" / "estimator"
L2 = 5 * 1024 * 1024
FLOOR = 4096


@pytest.fixture(scope="module")
def gpu():  # type: ignore[no-untyped-def]
    return load_registry().get("rtx3080")


def _kernel(name: str, kernel: str | None = None):  # type: ignore[no-untyped-def]
    path = FIXTURES / name
    det = detect(path.read_bytes(), str(path))
    ks = [k for k in det.kernels if kernel is None or k.name == kernel]
    assert ks, f"no kernel in {name}"
    return ks[0], det


def _run(gpu, name: str, inputs: Inputs | None = None) -> KernelEstimate:  # type: ignore[no-untyped-def]
    k, det = _kernel(name)
    return analyze(k, det, gpu, inputs)


def test_saxpy(gpu) -> None:  # type: ignore[no-untyped-def]
    # n = argv[1] = 2^20; launch (n + 255) / 256 blocks of 256 -> 2^20 threads.
    # per thread: a * x[i] + y[i] = 2 FP32 FLOP.
    # int: i = blockIdx.x * blockDim.x + threadIdx.x -> 1 (IMAD); i < n -> 1;
    #      addresses x[i], y[i] (load and store share one) -> 2; prologue 2 -> 6.
    # DRAM: x read 4 MiB + y read 4 MiB + floor, y written 4 MiB.
    a = _run(gpu, "saxpy.cu", Inputs(args="1048576"))
    assert a.threads == 2**20
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    assert a.counts.int_ops == pytest.approx(6.0)
    assert a.memory.bytes_loaded == pytest.approx(8 * 2**20 + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(4 * 2**20)
    # int AI = 6 * 2^20 / (12 MiB + 4 KiB) ~ 0.5 < 16.5 -> bandwidth
    assert a.ai["int"] == pytest.approx(6 * 2**20 / (12 * 2**20 + FLOOR))
    k, det = _kernel("saxpy.cu")
    v = estimate(k, det, gpu, Inputs(args="1048576"))
    assert v.bound == "bandwidth"
    assert v.source == "static"
    assert v.counts is not None and v.counts.threads == 2**20
    assert "working set" in explanation(v)


def test_saxpy_without_arguments_uses_defaults(gpu) -> None:  # type: ignore[no-untyped-def]
    # n unknown: the launch cannot be evaluated -> default 4096 x 256 threads; the bound
    # check `i < n` infers n from the thread range; the verdict is the same.
    k, det = _kernel("saxpy.cu")
    v = estimate(k, det, gpu)
    assert v.bound == "bandwidth"
    assert v.counts is not None and v.counts.threads == 4096 * 256


def test_a_2d_kernel_without_a_launch_is_assumed_a_square(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a matrix product indexed by row (y) and column (x), in a file with no host code: the
    # launch assumed is 16 x 16 blocks covering a 1024 x 1024 square (64 x 64 blocks, the
    # same 1 M threads as a 1-D kernel's assumed launch), so the bounds check gives
    # width = 1024 and each thread runs 1024 trips of 2 FLOP: 2048 FP32 FLOP, compute-bound
    # (before: 256 x 4096 threads in one row, width = 1 M, 2 M FLOP per thread and
    # bandwidth-bound)
    src = (
        "__global__ void mm(const float *A, const float *B, float *C, int width) {\n"
        "  int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
        "  if (col < width && row < width) {\n"
        "    float v = 0;\n"
        "    for (int k = 0; k < width; ++k) v += A[row * width + k] * B[k * width + col];\n"
        "    C[row * width + col] = v;\n"
        "  }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src)
    assert a.threads == 1024 * 1024
    assert a.counts.flops["fp32"] == pytest.approx(2048.0)
    det = detected(tmp_path, src)
    assert estimate(det.kernels[0], det, gpu).bound == "compute"


def test_stencil_2d_reuse(gpu) -> None:  # type: ignore[no-untyped-def]
    # grid (4096/32, 4096/8) x block (32, 8) -> 4096 x 4096 threads.
    # interior fraction p = (4094/4096)^2: 4 loads summed (3 FADD) and scaled (1 FMUL).
    # The four neighbour loads of `in` touch the same 16.8M elements: footprint 64 MiB, not
    # 4 x 64 MiB (reuse across threads); `out` writes 64 MiB x p.
    a = _run(gpu, "stencil2d.cu")
    p = (4094 / 4096) ** 2
    assert a.threads == 4096 * 4096
    assert a.counts.flops["fp32"] == pytest.approx(4 * p)
    refs = sum(b.references for b in a.memory.buffers)
    assert refs == pytest.approx(5 * 4 * 4096 * 4096 * p)
    # the four index ranges overlap: their union is [-4096, 4096^2 + 4095] (the rows above
    # and below the grid included, the bounds check is not in the ranges), 4096^2 + 8192
    # elements
    loaded = buffer_of(a, "in").loaded
    assert loaded == pytest.approx(4 * (4096 * 4096 + 8192))
    # int: x, y -> 1 + 1; four comparisons (p ~ 1 each) -> ~4; indices:
    #   y*NX+x-1 -> 1, y*NX+x+1 -> 1, (y-1)*NX+x -> 1.5, (y+1)*NX+x -> 1.5, y*NX+x -> 1
    #   plus 4 addresses (x + 1's is x - 1's 8 bytes on: `[R + 8]`), all x p; prologue 2
    #   -> 2 + 2 + ~4 + 10 p ~ 18
    assert a.counts.int_ops == pytest.approx(18.0, abs=0.05)
    assert estimate(*_kernel("stencil2d.cu"), gpu).bound == "bandwidth"


def test_tiled_gemm_shared_memory(gpu) -> None:  # type: ignore[no-untyped-def]
    # n = 2048 (const in main), TILE 16: 128 outer iterations x 16 unrolled inner FMAs.
    # FLOP per thread = 128 * 16 * 2 = 4096.
    # int per thread:
    #   prologue 2, row 1, col 1, C index 1 + address 1 = 6
    #   t loop control: (t < n/TILE: 1, t++: 1) x 128 / 4 = 64
    #   As[ty][tx] = A[row*n + t*TILE + tx]: (t*TILE 1 + A addr 1 + As addr 0.5) x 128 + row*n
    #     hoisted out of the loop (1) = 321
    #   Bs[ty][tx] = B[(t*TILE + ty)*n + col]: (1 + 1 + 1 + 0.5) x 128 = 448
    #   inner: 2 shared addresses x 0.5 x 2048 = 2048; k loop fully unrolled -> 0
    #   total 6 + 64 + 321 + 448 + 2048 = 2887
    a = _run(gpu, "gemm_tiled.cu")
    assert a.threads == 2048 * 2048
    assert a.counts.flops["fp32"] == pytest.approx(4096.0)
    assert a.counts.int_ops == pytest.approx(2887.0)
    shared = [x for x in a.counts.accesses if x.space == "shared"]
    assert {x.buffer for x in shared} == {"As", "Bs"}
    # global footprint: A, B read once (16 MiB each), C written once; reuse through the
    # tiles makes DRAM traffic ~ 200 MB, not the 4.3 GB referenced
    assert a.memory.footprint == pytest.approx(3 * 16 * 2**20)
    assert a.memory.dram_bytes < 0.1 * a.memory.references
    v = estimate(*_kernel("gemm_tiled.cu"), gpu)
    assert v.bound == "compute"
    assert v.ai["fp32"] is not None and v.ai["fp32"] > 32.97


def test_nbody_device_function_followed(gpu) -> None:  # type: ignore[no-untyped-def]
    # n = 32768 bodies, 128 x 256 threads; inner loop over all n bodies.
    # per pair: dx, dy, dz (3 FADD), inv_dist3: dx*dx + dy*dy + dz*dz + eps (3 FMUL + 3 FADD),
    # rsqrtf (MUFU + 1), r*r*r (2 FMUL); s = m * (...) (1); ax, ay, az += d * s (3 FMA = 6)
    # -> 19 FP32 FLOP per pair, 19 * 32768 = 622592 per thread.
    a = _run(gpu, "nbody.cu")
    assert a.threads == 32768
    assert a.counts.flops["fp32"] == pytest.approx(19 * 32768)
    assert "inv_dist3" in a.counts.followed
    # all bodies (512 KiB) stay in L2: DRAM = bodies once + half the accelerations written
    assert a.memory.resident
    assert a.memory.bytes_loaded == pytest.approx(32768 * 16 + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(0.5 * 32768 * 12)
    assert estimate(*_kernel("nbody.cu"), gpu).bound == "compute"


def test_tree_reduction(gpu) -> None:  # type: ignore[no-untyped-def]
    # 2^24 elements, blocks of 256: stride = 128, 64, ..., 1 (8 trips, log2 of blockDim/2
    # x 2). `tid < stride` holds for stride/256 of the threads: sum(stride)/256 = 255/256
    # FADD per thread.
    a = _run(gpu, "reduce.cu")
    loop = a.counts.loops[0]
    assert loop.trips == 8 and loop.source == "launch"
    assert a.counts.flops["fp32"] == pytest.approx(255 / 256)
    # DRAM: the input once (64 MiB) + one float per block written
    assert a.memory.bytes_loaded == pytest.approx(4 * 2**24 + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(4 * 2**24 / 256)
    assert estimate(*_kernel("reduce.cu"), gpu).bound == "bandwidth"


def test_histogram_atomics(gpu) -> None:  # type: ignore[no-untyped-def]
    # per thread: i (1), i < n (1), data[i] address (1), bins[...] address (1) + the
    # atomic (1), prologue 2 -> 7 int, no FLOP. Bytes: 1 B read per thread; the 256 bins
    # (1 KiB) are one footprint however many atomics hit them.
    a = _run(gpu, "histogram.cu")
    assert a.counts.int_ops == pytest.approx(7.0)
    assert sum(a.counts.flops.values()) == 0
    atomics = [x for x in a.counts.accesses if x.kind == "atomic"]
    assert len(atomics) == 1 and atomics[0].buffer == "bins"
    bins = buffer_of(a, "bins")
    assert bins.footprint == pytest.approx(1024)  # 256 x 4 B (data-dependent index, capped
    # by the 256-element allocation)
    assert a.memory.bytes_loaded == pytest.approx(2**26 + 1024 + FLOOR)
    assert estimate(*_kernel("histogram.cu"), gpu).bound == "bandwidth"


def test_integer_hash_is_int_bound(gpu) -> None:  # type: ignore[no-untyped-def]
    # 64 rounds (constant, > 32 so unrolled by 4 only): loop control (1 + 1) x 64 / 4 = 32;
    # body: h >> 16, ^=, *=, h >> 15, ^= -> 5 x 64 = 320 (h is loop-carried: nothing is
    # hoisted); i 1, i >= n 1, keys[i] 1, out[i] 1, prologue 2 -> 358.
    # int AI = 358 x 2^24 / (128 MiB + 4 KiB) = 44.7 > 16.5 -> compute-bound by int.
    a = _run(gpu, "hash.cu")
    assert a.counts.int_ops == pytest.approx(358.0)
    assert a.ai["int"] == pytest.approx(358 * 2**24 / (128 * 2**20 + FLOOR))
    v = estimate(*_kernel("hash.cu"), gpu)
    assert v.bound == "compute" and v.deciding == "int"


def test_fp64_kernel(gpu) -> None:  # type: ignore[no-untyped-def]
    # exp(double) = 30 FLOP + 8 int (costs.MATH_F64); Horner ((0.5v + 0.25)v + 0.125)v
    # = 3 FMUL + 2 FADD; the final + = 1 -> 36 FP64 FLOP per element.
    # dp AI = 36 x 2^20 / (16 MiB + 4 KiB) = 2.25 > 0.515 -> compute-bound by fp64.
    a = _run(gpu, "fp64.cu", Inputs(args="1048576"))
    assert a.counts.flops["fp64"] == pytest.approx(36.0)
    assert a.counts.int_ops == pytest.approx(14.0)  # 6 as saxpy + exp's 8
    v = estimate(*_kernel("fp64.cu"), gpu, Inputs(args="1048576"))
    assert v.bound == "compute" and v.deciding == "fp64"


def test_working_set_fits_in_l2(gpu) -> None:  # type: ignore[no-untyped-def]
    # 2^20 threads each read 64 table entries: 256 MiB referenced, but the table is 64 KiB
    # (data-independent index masked to 16383 -> 16384 distinct elements) and the output
    # 4 MiB: the 4.06 MiB working set fits in the 5 MiB L2: DRAM reads the table once; it
    # fills 4.06 / 5 = 81% of L2, so of the output's writes 0.5 + 0.5 * (0.81 - 0.5) / 0.5 =
    # 81% reach DRAM during the kernel (half while it fills half of L2, all at a full L2).
    a = _run(gpu, "l2_resident.cu")
    assert a.memory.resident
    footprint = 16384 * 4 + 4 * 2**20
    assert a.memory.footprint == pytest.approx(footprint)
    assert a.memory.references > 60 * a.memory.footprint
    written = footprint / L2 * 4 * 2**20
    assert a.memory.dram_bytes == pytest.approx(16384 * 4 + written + FLOOR)
    # 64 iterations: FADD 64; int: ((i + k) 1, & 1, address 1) x 64 + loop control 32 + 5
    assert a.counts.flops["fp32"] == pytest.approx(64.0)
    assert a.counts.int_ops == pytest.approx(3 * 64 + 32 + 5)
    v = estimate(*_kernel("l2_resident.cu"), gpu)
    assert v.bound == "compute"
    assert "fits in L2" in explanation(v)


def test_openmp_target_loop(gpu) -> None:  # type: ignore[no-untyped-def]
    # per iteration: 2 FP32 FLOP; int: runtime loop control 15 + i < n and ++i (2) +
    # x[i], y[i] addresses (2) = 19. Iterations n = argv[1] = 2^20 (through saxpy's caller).
    a = _run(gpu, "omp_saxpy.cpp", Inputs(args="1048576"))
    assert a.counts.per == "iteration"
    assert a.threads == 2**20
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    assert a.counts.int_ops == pytest.approx(19.0)
    assert a.memory.dram_bytes == pytest.approx(12 * 2**20 + FLOOR)
    v = estimate(*_kernel("omp_saxpy.cpp"), gpu, Inputs(args="1048576"))
    assert v.bound == "bandwidth"
    assert v.counts is not None and v.counts.per == "iteration"


def test_a_region_in_a_function_whose_parse_broke_gets_its_callers_values(gpu) -> None:  # type: ignore[no-untyped-def]
    # broken_region.cpp: `DEV static int_t ...` (DEV defined empty) and braces split across
    # #ifdef branches leave the region outside any function in the file's parse. Found in
    # the file parsed as the preprocessor would have it, sum_rows is called with n = 4096
    # and m = 1024: 4096 iterations of 1024 trips (1024 FADDs), not the 2^20 iterations
    # of 4 defaulted trips the region alone gave.
    k, det = _kernel("broken_region.cpp")
    assert (k.name, k.line) == ("sum_rows", 14)
    a = analyze(k, det, gpu)
    assert a.threads == 4096
    assert a.counts.flops["fp32"] == pytest.approx(1024.0)
    assert not [lp for lp in a.counts.loops if lp.source == "default"]


def test_openmp_collapse_2(gpu) -> None:  # type: ignore[no-untyped-def]
    # collapse(2): 1024 x 1024 parallel iterations; inner k loop (8, constant, unrolled):
    # 8 FMA = 16 FP64 FLOP per iteration. a is read once (1024*1024*8 doubles = 64 MiB),
    # c written once (8 MiB): dp AI = 16 x 2^20 / 72 MiB = 0.22 < 0.515 -> bandwidth.
    a = _run(gpu, "omp_collapse.cpp")
    par = [lp for lp in a.counts.loops if lp.parallel]
    assert [lp.trips for lp in par] == [1024, 1024]
    assert a.threads == 1024 * 1024
    assert a.counts.flops["fp64"] == pytest.approx(16.0)
    assert a.memory.bytes_loaded == pytest.approx(8 * 8 * 2**20 + 64 + FLOOR)
    assert a.memory.bytes_stored == pytest.approx(8 * 2**20)
    v = estimate(*_kernel("omp_collapse.cpp"), gpu)
    assert v.bound == "bandwidth" and v.deciding == "fp64"
    assert v.ai["fp64"] == pytest.approx(16 * 2**20 / (72 * 2**20 + 64 + FLOOR), rel=1e-6)


def test_hint_comment_supplies_values(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (FIXTURES / "saxpy.cu").read_text().replace("int main", "// roofline: n=1<<24\nint main")
    path = tmp_path / "saxpy.cu"
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    k = det.kernels[0]
    a = analyze(k, det, gpu)
    assert a.threads == 2**24  # launch (n + 255) / 256 evaluated with the hint
    assert a.context.get("n") == 2**24


def test_inputs_values_override(gpu) -> None:  # type: ignore[no-untyped-def]
    k, det = _kernel("saxpy.cu")
    a = analyze(k, det, gpu, Inputs(values=(("n", 4096.0),)))
    assert a.threads == 4096


def test_verdict_frozen_and_complete(gpu) -> None:  # type: ignore[no-untyped-def]
    k, det = _kernel("hash.cu")
    v = estimate(k, det, gpu)
    assert set(v.ai) == {"fp64", "fp32", "fp16", "int"}
    assert v.ridge == gpu.ridges()
    assert 0.0 < v.confidence <= 1.0
    assert v.terms and term_text(v.terms[0]).startswith("per thread")
    with pytest.raises(AttributeError):
        v.bound = "bandwidth"  # type: ignore[misc]
    assert v.margin is not None and v.margin > 1


def test_other_gpu_changes_the_ridge(gpu) -> None:  # type: ignore[no-untyped-def]
    reg = load_registry()
    k, det = _kernel("fp64.cu")
    h100 = reg.get("h100")
    v3080 = estimate(k, det, gpu, Inputs(args="1048576"))
    vh100 = estimate(k, det, h100, Inputs(args="1048576"))
    # the RTX 3080's tiny fp64 peak makes the kernel compute-bound; the H100's is not
    assert v3080.bound == "compute"
    assert vh100.ridge["fp64"] > v3080.ridge["fp64"]
    assert vh100.bound == "bandwidth"


def test_broken_source_does_not_crash(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "broken.cu"
    path.write_text(
        "__global__ void k(float *a, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (int j = 0; j < ; j++) a[i] += UNKNOWN_MACRO(a, i) / (;\n"
        "  while (a[i] > 0) { a[i] = f(a[i]); }\n"
        "}\n"
    )
    det = detect(path.read_bytes(), str(path))
    for k in det.kernels:
        v = estimate(k, det, gpu)
        assert v.bound in ("compute", "bandwidth")
        assert all(x is None or not math.isnan(x) for x in v.ai.values())


_ACC_FORMS = ("plain", "mapped", "region", "kernels_region", "split")


@pytest.mark.parametrize("name", _ACC_FORMS)
def test_openacc_parallelism_mapping_keeps_the_iteration_count(gpu, name: str) -> None:  # type: ignore[no-untyped-def]
    # The same saxpy over N = 2^20 elements, whatever gang/worker/vector clauses and
    # num_gangs/num_workers/vector_length say: 2^20 iterations of 2 FP32 FLOP (one FMA) and
    # 15 (runtime loop control) + 2 (i < N, ++i) + 2 (x[i], y[i] addresses) = 19 int ops;
    # DRAM: x read (4 MiB), y read and written (8 MiB), plus the launch floor. (Before, the
    # `parallel num_workers(4) vector_length(32)` region + `loop gang worker vector` form
    # counted every iteration once per vector lane: 32x.)
    k, det = _kernel("acc_saxpy.c", name)
    a = analyze(k, det, gpu)
    assert a.threads == 2**20
    assert [lp.trips for lp in a.counts.loops if lp.parallel] == [2**20]
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    assert a.totals["fp32"] == pytest.approx(2.0 * 2**20)
    assert a.counts.int_ops == pytest.approx(19.0)
    assert a.memory.dram_bytes == pytest.approx(12 * 2**20 + FLOOR)
    assert estimate(k, det, gpu).bound == "bandwidth"


def test_openacc_parallel_region_is_gang_redundant(gpu) -> None:  # type: ignore[no-untyped-def]
    # `parallel num_gangs(8) vector_length(32)` { y[0] += 1 }: outside a gang loop every gang
    # runs the statement once (one lane per gang): 8 FADD in all, not 8 x 32.
    a = analyze(*_kernel("acc_saxpy.c", "redundant"), gpu)
    assert a.totals["fp32"] == pytest.approx(8.0)


def test_openacc_loop_seq_is_not_shared(gpu) -> None:  # type: ignore[no-untyped-def]
    # `parallel loop gang` over 1024 rows, `loop seq` over 1024 columns inside: 1024
    # parallel iterations of 1024 sequential FADD each = 2^20 FP32 FLOP.
    a = analyze(*_kernel("acc_saxpy.c", "sequential_inner"), gpu)
    assert [(lp.trips, lp.parallel) for lp in a.counts.loops] == [(1024, True), (1024, False)]
    assert a.threads == 1024
    assert a.totals["fp32"] == pytest.approx(2.0**20)


def test_a_metadirective_region_runs_as_the_directive_it_selects(gpu, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # `target` over `metadirective when(device={arch("nvptx")}: teams loop)`: the loop of
    # 2^20 iterations is shared, as under `target teams loop` (one iteration, one FP32
    # multiply, per thread); before, every thread of the launch ran the whole loop
    src = (
        "#define N (1 << 20)\n"
        "void scale(const float *a, float *b) {\n"
        "  #pragma omp target map(to: a[0:N]) map(from: b[0:N])\n"
        '  #pragma omp metadirective when(device={arch("nvptx")}: teams loop) \\\n'
        "                            otherwise(parallel loop)\n"
        "  for (int i = 0; i < N; i++) b[i] = a[i] * 2.0f;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="meta.c")
    assert a.threads == 2**20
    assert a.counts.flops["fp32"] == pytest.approx(1.0)


def test_openmp_body_in_an_included_header(gpu) -> None:  # type: ignore[no-untyped-def]
    # `#include "omp_host_forms_body.h"` inside the loop: x[i] = a * x[i] + 1.0f is one FMA
    # (2 FP32 FLOP) per iteration; N = 4096 from `#define N 4096  // elements`; x is read
    # and written, booked on the #include line (11).
    a = analyze(*_kernel("omp_host_forms.cpp", "scale"), gpu)
    assert a.threads == 4096
    assert a.counts.flops["fp32"] == pytest.approx(2.0)
    assert {(x.buffer, x.kind, x.line) for x in a.counts.accesses} == {
        ("x", "load", 11),
        ("x", "store", 11),
    }


def test_openmp_auto_pointer_mapped_as_a_section(gpu) -> None:  # type: ignore[no-untyped-def]
    # `auto p = v.data()` mapped as `p[0:N]` is a device buffer: 4096 elements of 4 bytes
    # (element type unknown: 4) read and written = 16 KiB each way.
    a = analyze(*_kernel("omp_host_forms.cpp", "square"), gpu)
    assert {(x.buffer, x.kind) for x in a.counts.accesses} == {("p", "load"), ("p", "store")}
    assert a.memory.bytes_loaded >= 4 * 4096


LAUNCH = Path(__file__).parent / "fixtures" / "launch"


def _launch_fixture(name: str):  # type: ignore[no-untyped-def]
    path = LAUNCH / name
    return detect(path.read_bytes(), str(path))


def test_the_same_kernel_launched_every_way_has_one_verdict(gpu) -> None:  # type: ignore[no-untyped-def]
    """<<<>>>, cudaLaunchKernel and cudaLaunchCooperativeKernel (argument arrays),
    hipLaunchKernelGGL with dim3(...), and <<<>>> in a macro's body, invoked with the kernel
    and grid as arguments: n = 1 << 24 threads, reps = 3 bound from each, so
    4 FP32 FLOP per thread (a * x[i] hoisted, 3 adds) and 12 B per thread (x, y read, y
    written): 64 MFLOP for 201 MB, bandwidth-bound every way."""
    import dataclasses

    det = _launch_fixture("three_launches.cu")
    hip = _launch_fixture("hip_launch.hip")
    macro = _launch_fixture("macro_launch.cu")
    forms = [(det, (s,)) for s in det.launches] + [(hip, hip.launches), (macro, macro.launches)]
    assert [s.form for _, (s, *_) in forms] == [
        "chevron",
        "cudaLaunchKernel",
        "cudaLaunchKernel",
        "hipLaunchKernelGGL",
        "chevron",
    ]
    assert macro.launches[0].line == 22  # the invocation's line
    results = []
    for d, sites in forms:
        one = dataclasses.replace(d, launches=sites)
        a = analyze(one.kernels[0], one, gpu)
        v = estimate(one.kernels[0], one, gpu)
        assert a.context.get("reps") == 3 and a.counts.loops[0].trips == 3
        assert a.threads == 1 << 24 and a.launch_from == "source"
        assert a.totals["fp32"] == 4 * (1 << 24)
        assert a.memory.dram_bytes == pytest.approx(12 * (1 << 24) + FLOOR, rel=0.01)
        results.append((v.bound, v.ai["fp32"], v.ai["int"]))
    assert results[0][0] == "bandwidth"
    assert all(r == results[0] for r in results)


def test_an_unknown_launch_covers_a_known_bounds_check(gpu) -> None:  # type: ignore[no-untyped-def]
    """n = 50,000 but the grid (sms * 8) is unknown: the assumed launch is the 196 blocks of
    256 threads (50,176) that cover `if (i < n)`, each thread inside loading and storing 4 B:
    50,000 FLOP; the 200 kB fit in L2, so 200,000 B read + half the 200,000 B written + the
    launch floor reach DRAM; only the 176 threads past n idle."""
    det = _launch_fixture("known_bound.cu")
    a = analyze(det.kernels[0], det, gpu)
    assert a.launch_from == "guard"
    assert a.threads == 196 * 256
    assert a.totals["fp32"] == 50_000
    assert a.memory.dram_bytes == pytest.approx(4 * 50_000 + 2 * 50_000 + FLOOR, rel=0.01)
    assert a.totals["int"] / a.memory.dram_bytes < 1.0  # not the 14 ops/B of 1M idle threads
    v = estimate(det.kernels[0], det, gpu)
    assert v.bound == "bandwidth" and v.counts is not None and v.counts.launch_from == "guard"


def test_an_unknown_size_is_assumed_consistently(gpu) -> None:  # type: ignore[no-untyped-def]
    """g_n is set at run time: the launch is assumed (256 x 4096 threads) and the bound of
    `if (i < n)` is taken equal to it, so every assumed thread loads and stores its 4 B
    (4 MiB read; of the 4 MiB written, 4 / 5 reach DRAM: the 4 MiB working set fits in the
    5 MiB L2 but fills 80% of it, 0.5 + 0.5 * (0.8 - 0.5) / 0.5); never a 0-thread launch."""
    det = _launch_fixture("runtime_global.cu")
    a = analyze(det.kernels[0], det, gpu)
    assert a.launch_from == "assumed"
    assert a.threads == 256 * 4096
    assert a.memory.dram_bytes == pytest.approx((4 + 0.8 * 4) * 256 * 4096 + FLOOR, rel=0.01)
    given = analyze(det.kernels[0], det, gpu, Inputs(block=(128, 1, 1), grid=(10, 1, 1)))
    assert given.launch_from == "given" and given.threads == 1280


def test_launch_through_helpers_and_command_line_defaults(gpu) -> None:  # type: ignore[no-untyped-def]
    """ceil_div(3,000,000, 256) = 11,719 blocks; argc > 1 ? atoi(argv[1]) : 1 << 20 without
    arguments = 1,048,576 threads: sizes from the source, not the default launch."""
    det = _launch_fixture("ceil_div.cu")
    a = analyze(det.kernels[0], det, gpu)
    assert a.launch_from == "source" and a.threads == 11719 * 256
    assert a.totals["fp32"] == 3_000_000  # one multiply per element inside the guard
    det = _launch_fixture("argv_default.cu")
    a = analyze(det.kernels[0], det, gpu)
    assert a.launch_from == "source" and a.threads == 1 << 20
    a = analyze(det.kernels[0], det, gpu, Inputs(args="65536"))
    assert a.threads == 65536


def test_template_arguments_from_every_launch_form(gpu) -> None:  # type: ignore[no-untyped-def]
    """sum_items<double, 64>: 64 FP64 adds per thread x 2^20 threads, however launched."""
    import dataclasses

    det = _launch_fixture("templated_launches.cu")
    assert [s.form for s in det.launches] == [
        "chevron",
        "hipLaunchKernelGGL",
        "hipLaunchKernelGGL",
        "cudaLaunchKernel",
    ]
    for site in det.launches:
        one = dataclasses.replace(det, launches=(site,))
        a = analyze(one.kernels[0], one, gpu)
        assert a.context.template_args == ("double", "64")
        assert a.threads == 1 << 20
        assert a.totals["fp64"] == 64 * (1 << 20) and a.totals["fp32"] == 0


def test_template_argument_of_the_launching_function_template(gpu) -> None:  # type: ignore[no-untyped-def]
    """``scale<T>`` launched from ``run<T, BS = 256>``, instantiated as ``run<double>``: T is
    double, so x[i] * a + a is 2 FP64 FLOP per thread over n = 2^20 threads (n / 256 blocks
    of 256), and no integer op is booked for the arithmetic."""
    det = _launch_fixture("templated_host/main.cu")
    a = analyze(det.kernels[0], det, gpu)
    assert a.context.template_args == ("double",)
    assert a.threads == 1 << 20
    assert a.totals["fp64"] == 2 * (1 << 20) and a.totals["fp32"] == 0


def test_a_kernel_launched_through_a_macro_in_another_file_gets_that_launch(gpu) -> None:  # type: ignore[no-untyped-def]
    """``bench(reduce_pairs, blocks / 2)`` in main.cu, whose body launches its first argument
    on 1024 blocks of 256 threads with main's n = 52,428,800: each of the 262,144 threads
    sums 2 ints per trip of its grid-stride loop, 52,428,800 / (262,144 x 2) = 100 trips,
    and the 210 MB array is read once (before: no launch found, the 16-trip default)."""
    det = _launch_fixture("macro_host/kernels.h")
    a = analyze(det.kernels[0], det, gpu)
    assert a.context.get("n") == 52428800
    assert a.threads == 1024 * 256 and a.launch_from == "source"
    assert [(lp.trips, lp.source) for lp in a.counts.loops] == [(pytest.approx(100), "grid-stride")]
    assert a.memory.dram_bytes == pytest.approx(4 * 52428800, rel=0.01)


@pytest.mark.parametrize(
    "name", ["deduced_plain.cu", "deduced_host/main.cu", "deduced_caller/main.cu"]
)
def test_template_type_deduced_from_the_launch_arguments(gpu, name: str) -> None:  # type: ignore[no-untyped-def]
    """``axpb<<<n / 256, 256>>>(d_x, d_y, n)`` with ``const T *x`` given ``double *d_x``
    (declared so, or ``T *d_x`` in ``run<T>`` first instantiated as ``run<double>``), or a
    value ``T a`` of ``run`` bound to an ``fp`` of ``example<fp>``, first instantiated as
    ``example<double>``: T is double. x[i] * x[i] + 1 (x[i] * a + 1) is 2 FP64 FLOP per
    thread, 2^20 threads; 16 B per thread."""
    det = _launch_fixture(name)
    a = analyze(det.kernels[0], det, gpu)
    assert a.threads == 1 << 20
    assert a.totals["fp64"] == 2 * (1 << 20) and a.totals["fp32"] == 0
    assert a.memory.references == 16 * (1 << 20)
    assert not a.assumed_types


def test_static_constants_of_structs_and_their_aliases(gpu) -> None:  # type: ignore[no-untyped-def]
    """``x128 = Packed128<bf16>``: ``size`` = sizeof(int4) / sizeof(bf16) = 16 / 2 = 8. The
    launch is ceil_div(2^24, 256 * 8) = 8192 blocks of 256 = 2^21 threads; each runs the
    ``packed.size`` loop 8 times with 2 FP32 FLOP (v * 2 + 1 as one FMA): 16 FP32 FLOP per
    thread, and ``Tile::cells`` = 4 * 8 = 32 trips of the second loop."""
    det = _launch_fixture("packed128.cu")
    assert det.constants["x128::size"] == "16 / 2"
    assert det.constants["Tile::cells"] == "Tile::rows * 8"
    a = analyze(det.kernels[0], det, gpu)
    assert a.threads == 1 << 21
    assert a.totals["fp32"] == 16 * (1 << 21)
    trips = sorted(loop.trips for loop in a.counts.loops)
    assert trips == [8.0, 32.0]


def test_early_hip_thread_indices(gpu) -> None:  # type: ignore[no-untyped-def]
    """vadd: 2^24 threads (65536 blocks of 256), each inside its bounds check: 1 FP32 add and
    12 B per thread. saxpy_gs: 1024 x 256 = 2^18 threads stride over 2^24 elements: 64 trips
    of one FMA (2 FLOP) and 12 B."""
    det = _launch_fixture("hip_builtins.hip")
    vadd, saxpy = (analyze(k, det, gpu) for k in det.kernels)
    assert vadd.threads == 1 << 24
    assert vadd.totals["fp32"] == 1 << 24
    assert vadd.memory.references == 12 * (1 << 24)
    assert saxpy.threads == 1 << 18
    assert [loop.trips for loop in saxpy.counts.loops] == [pytest.approx(64.0)]
    assert saxpy.totals["fp32"] == pytest.approx(2 * (1 << 24), rel=0.01)


def test_a_template_type_nothing_instantiates_stays_assumed(gpu) -> None:  # type: ignore[no-untyped-def]
    """``run<T>`` is never called: its ``T *d_x`` gives axpb's T no type, so T is assumed
    float (and said so): 2 FP32 FLOP per thread."""
    det = _launch_fixture("deduced_unresolved.cu")
    a = analyze(det.kernels[0], det, gpu)
    assert a.assumed_types == ("T",)
    assert a.totals["fp32"] == 2 * a.threads


def test_an_offload_region_in_a_template_counts_in_the_type_its_call_gives(gpu, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``axpy(x, y, 2.0, n)`` with ``double *x`` makes T double: one FP64 FMA (2 FLOP) and
    24 B per iteration, nothing assumed (before: T assumed float, 2 FP32 FLOP and 12 B)."""
    src = (
        "template <typename T> void axpy(const T *x, T *y, T a, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n])\n"
        "  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n"
        "}\n"
        "int main() { double *x = 0, *y = 0; axpy(x, y, 2.0, 1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, name="axpy.cpp")
    assert not a.assumed_types
    assert (a.counts.flops["fp64"], a.counts.flops["fp32"]) == (2, 0)
    assert a.memory.references == 24 * (1 << 20)


def test_an_offload_region_in_a_class_template_counts_in_the_type_its_use_gives(
    gpu, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """``S<double> s`` makes the class's T double in ``S::scale``'s region: ``a[i] = 3 * a[i]``
    is one FP64 FLOP and moves 16 B per iteration, nothing assumed (before: T unbound, taken
    as a 4-byte integer without saying so: no FLOP, 8 B). Without a use, T is float and
    named as assumed."""
    cls = (
        "template <class T> struct S {\n"
        "  T *a;\n"
        "  void scale() {\n"
        "    #pragma omp target teams distribute parallel for map(tofrom: a[0:1048576])\n"
        "    for (int i = 0; i < 1048576; i++) a[i] = 3 * a[i];\n"
        "  }\n"
        "};\n"
    )
    used = count(gpu, tmp_path, cls + "int main() { S<double> s{0}; s.scale(); }\n", name="s.cpp")
    assert not used.assumed_types
    assert (used.counts.flops.get("fp64", 0), used.counts.flops.get("fp32", 0)) == (1, 0)
    assert used.memory.references == 16 * 1048576
    unused = count(gpu, tmp_path, cls, name="u.cpp")
    assert unused.assumed_types == ("T",)
    assert unused.counts.flops.get("fp32", 0) == 1
    # a method defined out of the class, ``template <class T> void S<T>::scale()``, likewise
    out = cls.replace(
        "  void scale() {\n", "  void scale();\n};\ntemplate <class T> void S<T>::scale() {\n"
    )
    out = out.replace("  }\n};\n", "}\n", 1)
    used = count(gpu, tmp_path, out + "int main() { S<double> s{0}; s.scale(); }\n", name="o.cpp")
    assert not used.assumed_types
    assert used.counts.flops.get("fp64", 0) == 1


def test_an_offload_region_sees_the_host_s_const_literals_as_constants(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # clang -fopenmp --offload-arch=sm_86: `const double dt = 0.5` folds into the region, so
    # b[i] = a[i] * dt is one mul.f32; `double c = 0.5` (not const) is captured and passed:
    # mul.rn.f64. Per iteration: 1 FP32 FLOP, 1 FP64 FLOP.
    src = (
        "#include <cstdlib>\n"
        "int main() {\n"
        "  int n = 1 << 20;\n"
        "  const double dt = 0.5;\n"
        "  double c = 0.5;\n"
        "  float *a = (float *)malloc(4 * n), *b = (float *)malloc(8 * n);\n"
        "  #pragma omp target teams distribute parallel for map(to: a[0:n]) map(from: b[0:2*n])\n"
        "  for (int i = 0; i < n; i++) { b[i] = a[i] * dt; b[n + i] = a[i] * c; }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="c.cpp")
    assert a.counts.flops["fp32"] == pytest.approx(1)
    assert a.counts.flops["fp64"] == pytest.approx(1)


def test_a_struct_declared_in_a_local_header_has_its_fields_and_size(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # vec.h declares `struct Vec { float x, y, z, w; }` (16 bytes) and its operators;
    # the kernel accumulates 64 differences `acc += p[j] - p[i]`: 64 x (4 sub + 4 add) =
    # 512 FP32 FLOP per thread (nvcc -ptx: 512), not 0 for fields of unknown type; and
    # f[i] = acc stores 16 bytes per thread, 1024 x 256 x 16 = 4 MiB written
    (tmp_path / "vec.h").write_text(
        "struct Vec { float x, y, z, w; };\n"
        "__device__ Vec operator-(const Vec &a, const Vec &b) {\n"
        "  Vec r; r.x = a.x - b.x; r.y = a.y - b.y; r.z = a.z - b.z; r.w = a.w - b.w;\n"
        "  return r; }\n"
        "__device__ void operator+=(Vec &a, const Vec &b) {\n"
        "  a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w; }\n"
    )
    a = count(
        gpu,
        tmp_path,
        '#include "vec.h"\n'
        "__global__ void k(const Vec *p, Vec *f) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  Vec acc = p[i];\n"
        "  for (int j = 0; j < 64; j++) acc += p[j] - p[i];\n"
        "  f[i] = acc;\n"
        "}\n",
        block=(256, 1, 1),
        grid=(1024, 1, 1),
    )
    assert a.counts.flops["fp32"] == pytest.approx(512)
    stores = [x for x in a.counts.accesses if x.buffer == "f" and x.kind == "store"]
    assert stores and stores[0].elem == 16


def test_a_type_alias_of_a_local_header_follows_the_branch_taken(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # real.h (include-guarded) picks real_t with #ifdef: no -D flag, so the #else, float;
    # nvcc -ptx of the kernel: one fma.rn.f32 in the 64-trip loop, 128 FP32 FLOP per thread,
    # no FP64, 4-byte elements. Before, a header's typedef was not read: real_t arithmetic
    # counted nothing (0 FLOP) and its elements had no size.
    (tmp_path / "real.h").write_text(
        "#ifndef REAL_H\n"
        "#define REAL_H\n"
        "#ifdef USE_DOUBLE\n"
        "typedef double real_t;\n"
        "#else\n"
        "typedef float real_t;\n"
        "#endif\n"
        "#endif\n"
    )
    a = count(
        gpu,
        tmp_path,
        '#include "real.h"\n'
        "__global__ void k(const real_t *x, real_t *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  real_t s = 0;\n"
        "  for (int j = 0; j < 64; j++) s = s * x[i] + x[j];\n"
        "  y[i] = s;\n"
        "}\n",
        block=(256, 1, 1),
        grid=(1024, 1, 1),
    )
    assert a.counts.flops["fp32"] == pytest.approx(128)
    assert a.counts.flops["fp64"] == 0
    stores = [x for x in a.counts.accesses if x.buffer == "y" and x.kind == "store"]
    assert stores and stores[0].elem == 4


def test_a_member_type_of_a_struct_template_from_an_angle_included_header(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # vector.hpp (included as <vector.hpp>, a build's -I.) declares `template <typename Scalar,
    # typename Ordinal> struct Vector { typedef Scalar ScalarType; using OrdinalType =
    # Ordinal; ... }`; the kernel's values are `typename V::ScalarType` with V =
    # Vector<double, int> (the launch's template argument): y[i] += a * x[i] is one DFMA,
    # 2 FP64 FLOP per thread, on 8-byte elements (nvcc -ptx: fma.rn.f64). Before, the member
    # type was unknown: 0 FLOP. The index type, `typename V::OrdinalType`, is an int.
    (tmp_path / "vector.hpp").write_text(
        "template <typename Scalar, typename Ordinal>\n"
        "struct Vector {\n"
        "  typedef Scalar ScalarType;\n"
        "  using OrdinalType = Ordinal;\n"
        "  Scalar *coefs;\n"
        "};\n"
    )
    a = count(
        gpu,
        tmp_path,
        "#include <vector.hpp>\n"
        "template <typename V>\n"
        "__global__ void axpy(int n, typename V::ScalarType a,\n"
        "                     const typename V::ScalarType *x, typename V::ScalarType *y) {\n"
        "  typename V::OrdinalType i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] += a * x[i];\n"
        "}\n"
        "int main() {\n"
        "  double *x, *y;\n"
        "  axpy<Vector<double, int> ><<<1024, 256>>>(1 << 18, 2.0, x, y);\n"
        "}\n",
        block=(256, 1, 1),
        grid=(1024, 1, 1),
    )
    assert a.counts.flops["fp64"] == pytest.approx(2)
    assert a.counts.flops["fp32"] == 0
    stores = [x for x in a.counts.accesses if x.buffer == "y" and x.kind == "store"]
    assert stores and stores[0].elem == 8


# The instance a profile names (`scale<double>`): its types bind the template's type
# parameters, over the file's first instantiation (float here). Per iteration y[i] = x[i] * 3
# is one multiply: 1 FP32 FLOP on 4 + 4 bytes for float, 1 FP64 FLOP on 8 + 8 for double.
TEMPLATE_REGION = """\
template <typename T>
void scale(int n, const T *x, T *y) {
#pragma omp target teams distribute parallel for map(to: x[0:n]) map(from: y[0:n])
  for (int i = 0; i < n; i++) y[i] = x[i] * 3;
}
int main() { float *a, *b; scale<float>(1 << 20, a, b); }
"""


def test_an_instance_s_types_bind_an_openmp_region_s_template(gpu):
    det = detect(TEMPLATE_REGION.encode(), "scale.cpp")
    (k,) = det.kernels
    first = analyze(k, det, gpu, Inputs())
    double = analyze(k, det, gpu, Inputs(instantiation=("double",)))
    assert (first.counts.flops["fp32"], first.counts.flops["fp64"]) == (1.0, 0.0)
    assert (double.counts.flops["fp32"], double.counts.flops["fp64"]) == (0.0, 1.0)
    assert double.memory.dram_bytes == pytest.approx(2 * first.memory.dram_bytes, rel=0.01)


# A CUDA kernel template: the instance's type (double) wins over the launch's (float); its
# numeric argument does not (R = 4 from the launch, not 8): 4 FP64 adds per thread.
TEMPLATE_KERNEL = """\
template <typename T, int R>
__global__ void blur(const T *x, T *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T s = 0;
  for (int k = 0; k < R; k++) s += x[(i + k) % n];
  y[i] = s;
}
int main() { float *a, *b; blur<float, 4><<<4096, 256>>>(a, b, 1 << 20); }
"""


def test_an_instance_s_types_bind_a_kernel_template_its_numbers_stay_the_launch_s(gpu):
    det = detect(TEMPLATE_KERNEL.encode(), "blur.cu")
    (k,) = det.kernels
    launch = analyze(k, det, gpu, Inputs())
    double = analyze(k, det, gpu, Inputs(instantiation=("double", "8")))
    assert (launch.counts.flops["fp32"], launch.counts.flops["fp64"]) == (4.0, 0.0)
    assert (double.counts.flops["fp32"], double.counts.flops["fp64"]) == (0.0, 4.0)


# A `// roofline: T=double` hint (or `T=double` in the arguments) binds the type parameter
# of that name over what the file gives: the region counts 1 FP64 FLOP per iteration on
# 8 + 8 bytes, as the double instance does; with no hint it stays the file's float.
def test_a_type_hint_binds_a_template_s_type_parameter(gpu):
    det = detect(("// roofline: T=double n=1<<20\n" + TEMPLATE_REGION).encode(), "scale.cpp")
    (k,) = det.kernels
    hinted = analyze(k, det, gpu, Inputs())
    assert (hinted.counts.flops["fp32"], hinted.counts.flops["fp64"]) == (0.0, 1.0)
    plain = detect(TEMPLATE_REGION.encode(), "scale.cpp")
    (pk,) = plain.kernels
    first = analyze(pk, plain, gpu, Inputs())
    assert hinted.memory.dram_bytes == pytest.approx(2 * first.memory.dram_bytes, rel=0.01)
    by_args = analyze(pk, plain, gpu, Inputs(args="T=double"))
    assert (by_args.counts.flops["fp32"], by_args.counts.flops["fp64"]) == (0.0, 1.0)
    # a CUDA kernel's: over the launch's blur<float, 4>, 4 FP64 adds per thread
    cuda = detect(("// roofline: T=double\n" + TEMPLATE_KERNEL).encode(), "blur.cu")
    (ck,) = cuda.kernels
    blur = analyze(ck, cuda, gpu, Inputs())
    assert (blur.counts.flops["fp32"], blur.counts.flops["fp64"]) == (0.0, 4.0)


def test_a_macro_naming_a_struct_is_that_struct(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``#define su3_matrix dsu3_matrix`` (the precision picked by a macro, MILC's dslash): the
    # matrix-vector product is 3 x 3 complex multiply-adds of 8 FP64 FLOP each (4 multiplies,
    # 4 adds) = 72 per thread; the thread reads its 144-byte matrix (9 complex doubles) and
    # 48-byte vector and writes a 48-byte vector. Unresolved, every field was of unknown type
    # (no FLOP) and each struct a 4-byte element.
    src = (
        "typedef struct { double real; double imag; } dcomplex;\n"
        "typedef struct { dcomplex e[3][3]; } dsu3_matrix;\n"
        "typedef struct { dcomplex c[3]; } dsu3_vector;\n"
        "#define su3_matrix dsu3_matrix\n"
        "#define su3_vector dsu3_vector\n"
        "#define Complx dcomplex\n"
        "#define CMULSUM(a,b,c) { (c).real += (a).real*(b).real - (a).imag*(b).imag; \\\n"
        "                         (c).imag += (a).real*(b).imag + (a).imag*(b).real; }\n"
        "__device__ void mv(const su3_matrix *a, const su3_vector *b, su3_vector *c) {\n"
        "  for (int i = 0; i < 3; i++) {\n"
        "    Complx x = {0.0, 0.0};\n"
        "    for (int j = 0; j < 3; j++) { CMULSUM(a->e[i][j], b->c[j], x); }\n"
        "    c->c[i] = x;\n"
        "  }\n"
        "}\n"
        "__global__ void k(const su3_matrix *m, const su3_vector *v, su3_vector *out) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  mv(m + t, v + t, out + t);\n"
        "}\n"
    )
    threads = 1024 * 256
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(1024, 1, 1))
    assert a.counts.flops["fp64"] == pytest.approx(72.0)
    assert a.memory.footprint == pytest.approx((144 + 48 + 48) * threads)


def test_the_profiled_instance_binds_the_launching_template_function(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # run<T> copies a 2^20-byte buffer as n = bytes / sizeof(T) elements of T and is
    # instantiated for float first: the launch meant is copy<unsigned char> (a profile's
    # instance), so its T is unsigned char there too, n is 2^20 elements (not 2^18) and
    # the 4096 x 256 threads each copy one byte: 1 MiB read
    det = detected(
        tmp_path,
        "template <class T> __global__ void copy(T *out, const T *in, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = in[i];\n"
        "}\n"
        "template <class T> void run(char *in, char *out, int bytes) {\n"
        "  int n = bytes / sizeof(T);\n"
        "  copy<T><<<(n + 255) / 256, 256>>>((T *)out, (T *)in, n);\n"
        "}\n"
        "int main() {\n"
        "  char *a, *b;\n"
        "  run<float>(a, b, 1 << 20);\n"
        "  run<unsigned char>(a, b, 1 << 20);\n"
        "}\n",
    )
    (k,) = det.kernels
    a = analyze(
        k, det, gpu, Inputs(block=(256, 1, 1), grid=(4096, 1, 1), instantiation=("unsigned char",))
    )
    assert a.context.value("n") == 2**20
    src = buffer_of(a, "in")
    assert src.footprint == pytest.approx(2**20)


def test_the_profiled_instance_binds_an_openmp_region_s_function_template(
    gpu, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # run<T> maps a 2^20-byte buffer as n = bytes / sizeof(T) elements and copies them in an
    # offload region; it is instantiated for float first. The region meant is run<unsigned
    # char>'s: n is 2^20 (not 2^18) iterations, each moving one byte in and one out
    det = detected(
        tmp_path,
        "template <class T> void run(T *in, T *out, int bytes) {\n"
        "  int n = bytes / sizeof(T);\n"
        "  #pragma omp target teams distribute parallel for map(to: in[0:n]) map(from: out[0:n])\n"
        "  for (int i = 0; i < n; i++) out[i] = in[i];\n"
        "}\n"
        "int main() {\n"
        "  float *a, *b; unsigned char *c, *d;\n"
        "  run<float>(a, b, 1 << 20);\n"
        "  run<unsigned char>(c, d, 1 << 20);\n"
        "}\n",
        name="k.cpp",
    )
    (k,) = det.kernels
    a = analyze(k, det, gpu, Inputs(instantiation=("unsigned char",)))
    assert a.threads == 2**20
    src = buffer_of(a, "in")
    assert src.footprint == pytest.approx(2**20)


def test_sizeof_a_struct_in_host_code_is_its_declared_size(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # `typedef struct __attribute__((__aligned__(16))) { unsigned int r, g, b; } rgb16;`:
    # three 4-byte fields padded to 16 bytes, so a 2^20-byte buffer holds n = 2^16 of them
    # (the size of an unknown type, 4 bytes, made it 2^18); the launch's 256 x 256 threads
    # copy one each: 2^16 x 16 bytes read
    det = detected(
        tmp_path,
        "typedef struct __attribute__((__aligned__(16))) { unsigned int r, g, b; } rgb16;\n"
        "__global__ void copy(rgb16 *out, const rgb16 *in, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = in[i];\n"
        "}\n"
        "int main() {\n"
        "  int bytes = 1 << 20;\n"
        "  int n = bytes / sizeof(rgb16);\n"
        "  rgb16 *a, *b;\n"
        "  copy<<<(n + 255) / 256, 256>>>(b, a, n);\n"
        "}\n",
    )
    (k,) = det.kernels
    a = analyze(k, det, gpu, Inputs())
    assert a.context.value("n") == 2**16
    assert a.threads == 2**16
    src = buffer_of(a, "in")
    assert src.footprint == pytest.approx(2**20)


def test_updates_of_one_counter_run_one_after_another(gpu) -> None:  # type: ignore[no-untyped-def]
    # count_all<<<524288, 256>>>: 2^27 threads, each 2 (prologue) + 1 (the address) + 1 (the
    # atomicInc) = 4 integer ops and one update of the same counter. An increment that wraps
    # is not combined per warp: 2^27 updates of one address at 3.2 cycles, 1.44 GHz:
    # 298.3 ms, 17.9 refreshes: 18 frames of 20 MB (360 MB) while it runs, beside its own
    # 4102 B (the 4096-byte floor, the counter read and half its write). int AI =
    # 2^27 x 4 / (360e6 + 4102) = 1.49 < 16.485: bandwidth-bound. The H100 drives no display:
    # its int AI is 2^27 x 4 / 4102, compute-bound
    a = _run(gpu, "one_counter.cu")
    assert a.counts.int_ops == pytest.approx(4.0)
    assert a.time is not None and a.time.limit == "contention"
    assert a.time.seconds == pytest.approx(2**27 * 3.2 / 1.44e9)
    assert a.memory.display_bytes == pytest.approx(18 * 20e6)
    assert a.ai["int"] == pytest.approx(2**27 * 4 / (360e6 + 4102))
    k, det = _kernel("one_counter.cu")
    v = estimate(k, det, gpu)
    assert v.bound == "bandwidth"
    assert "~298 ms, its updates of one address in turn" in explanation(v)
    assert estimate(k, det, load_registry().get("h100")).bound == "compute"


def test_a_long_small_launch_is_charged_the_display_traffic_it_runs_through(gpu) -> None:  # type: ignore[no-untyped-def]
    # spin<<<1, 32>>>(out, 1 << 22): per thread 2 (prologue) + 2^22 x 1.5 (the IMAD, and the
    # loop's increment and test once per 4 unrolled iterations: 2 / 4) + 1 (the store's
    # address) = 6291459 integer ops. One warp is far from filling the GPU: the launch runs at
    # its thread's latency, 32 cycles a dependent instruction + 0.5 for the warp's 32 threads
    # on the SM's 64 INT lanes: 6291459 x 32.5 = 2.0447e8 cycles counted, a chain that runs
    # as its 0.9th power about 10^5 cycles: 10^5 x 2044.72^0.9 = 9.541e7 cycles / 1.44 GHz =
    # 66.25 ms, 3.98 refreshes of the RTX 3080's 60 Hz display: 4 frames of 20 MB read while
    # it runs. Its own DRAM bytes: 128 B stored (half stays in L2: 64) + the 4096-byte floor
    # = 4160. int AI = 32 x 6291459 / (80e6 + 4160) = 2.52 < 16.485: bandwidth-bound.
    a = _run(gpu, "few_threads_spin.cu")
    assert a.counts.int_ops == pytest.approx(6291459)
    assert a.time is not None and a.time.limit == "latency"
    assert a.time.seconds == pytest.approx(1e5 * (6291459 * 32.5 / 1e5) ** 0.9 / 1.44e9)
    assert a.time.seconds == pytest.approx(66.25e-3, rel=1e-3)
    assert a.memory.kernel_bytes == pytest.approx(64 + FLOOR)
    assert a.memory.display_bytes == pytest.approx(4 * 20e6)
    assert a.ai["int"] == pytest.approx(32 * 6291459 / (80e6 + 4160))
    k, det = _kernel("few_threads_spin.cu")
    v = estimate(k, det, gpu)
    assert v.bound == "bandwidth"
    assert "+ 80 MB the display reads during the launch's ~66.3 ms" in explanation(v)
    # the H100 profile drives no display: the same launch is compute-bound
    h100 = load_registry().get("h100")
    assert estimate(k, det, h100).bound == "compute"
    assert analyze(k, det, h100).memory.display_bytes == 0.0


def test_a_stencils_layers_are_read_again_when_they_overflow_l2(gpu) -> None:  # type: ignore[no-untyped-def]
    # star<<<(16, 64, 256), (32, 8)>>>: 2^26 threads, each reading u at its point and 4
    # neighbours either way in x, y and z through at(x, y, z) = x + 512 (y + 512 z): 25 loads
    # whose indices differ by the neighbours' offsets (the helper walked for each call: 25
    # distinct centres). The z layers are a plane, P = 2^18 elements, apart (the nearest
    # in-plane ones P - 2048); between two uses of an element u's 9 planes and v's one
    # advance a plane each: 10 x 1 MiB > half of the RTX 3080's 5 MiB L2. Each of the 8 gaps
    # re-reads the elements both of its loads reach, (1 - g / 2^26) of u's 2^26:
    # 4 B x (8 x 2^26 - 6 P - 2 (P - 2048)) = 2,139,111,424 B; the y layers (512 apart,
    # 37 kB between uses) and x neighbours stay in L2
    a = _run(gpu, "stencil3d.cu")
    centres = {x.center for x in a.counts.accesses if x.buffer == "u"}
    assert len(centres) == 25
    plane = 2**18
    assert a.memory.layer_bytes == pytest.approx(4 * (8 * 2**26 - 6 * plane - 2 * (plane - 2048)))
    k, det = _kernel("stencil3d.cu")
    assert "of them stencil layers read again" in explanation(estimate(k, det, gpu))


def test_an_offloaded_loop_of_few_iterations_runs_at_its_busy_threads_latency(gpu) -> None:  # type: ignore[no-untyped-def]
    # sums(x, r, 100, 1 << 20) over num_teams(256) thread_limit(256), launched (as profiled)
    # with 256 teams of 256 threads: 100 of the 65536 threads walk a 2^20-trip loop each.
    # One iteration's chain: its integer ops (2^20 x 1.5 + its own) and its 2^20 FP32 adds
    # (2^19 instructions as FLOP / 2) at 32 cycles a dependent instruction plus the issue
    # (0.5 INT, 0.25 FP32), the runtime's 30 integer ops of every thread, and its 2^20
    # loads of x (lanes 2^20 elements apart: not one address for the warp) at 200 cycles:
    # (1572891 + 30) x 32.5 + 524288 x 32.25 + 1048576 x 200 = 2.777e8 cycles counted (192.9
    # ms), a chain that runs as its 0.9th power about 10^5 cycles: 10^5 x 2777.4^0.9 =
    # 1.257e8 cycles / 1.44 GHz = 87.3 ms, 5.24 refreshes: 5 frames of 20 MB. Spread over all
    # 65536 threads the launch would take 0.77 ms (its 419 MB at 72% of 760.3 GB/s) and read
    # no frame.
    k, det = _kernel("omp_few_iterations.cpp")
    a = analyze(k, det, gpu, Inputs(block=(256, 1, 1), grid=(256, 1, 1)))
    assert (a.threads, a.gpu_threads) == (100.0, 65536.0)
    assert a.counts.int_ops == pytest.approx(2**20 * 1.5, rel=1e-3)
    assert a.counts.flops["fp32"] == pytest.approx(2**20)
    chain = (a.counts.int_ops + 30) * 32.5 + a.counts.flops["fp32"] / 2 * 32.25 + 2**20 * 200
    assert a.time is not None and a.time.limit == "latency"
    assert chain / 1.44e9 == pytest.approx(0.1929, rel=1e-3)
    assert a.time.seconds == pytest.approx(1e5 * (chain / 1e5) ** 0.9 / 1.44e9)
    assert a.time.seconds == pytest.approx(0.0873, rel=1e-3)
    assert a.memory.display_bytes == pytest.approx(5 * 20e6)
    # the runtime's integer ops still count on every launched thread
    assert a.totals["int"] == pytest.approx(100 * a.counts.int_ops + 30 * 65536)


def test_a_thread_walking_its_own_row_waits_on_its_loads(gpu) -> None:  # type: ignore[no-untyped-def]
    # row_walks.cu: 16 blocks of 256 threads (one wave), each summing 4096 floats. Either
    # kernel: 4096 FP32 adds (2048 instructions as FLOP / 2) at 32.25 cycles and ~6150
    # integer ops at 32.5. row_sums loads m[i * 4096 + k], lanes 4096 elements apart: each
    # of its 4096 loads waits 200 cycles more, a chain of (6149 x 32.5 + 2048 x 32.25 + 4096
    # x 200) = 1.085e6 cycles, 0.754 ms as counted; vector_sums' v[k] is one address for the
    # whole warp (an L1 hit after the first warp): 2.659e5 cycles, 0.185 ms.
    def walks(cal):  # type: ignore[no-untyped-def]
        kernels = (_kernel("row_walks.cu", k) for k in ("row_sums", "vector_sums"))
        return (analyze(k, det, gpu, calibration=cal) for k, det in kernels)

    row, vec = walks(replace(CALIBRATION, chain_exponent=1.0))
    for a in (row, vec):
        assert a.threads == 4096 and a.counts.flops["fp32"] == 4096
        assert a.time is not None and a.time.limit == "latency"
    alu = row.counts.int_ops * 32.5 + 2048 * 32.25
    assert row.time.seconds == pytest.approx((alu + 4096 * 200) / 1.44e9)  # type: ignore[union-attr]
    assert row.time.seconds == pytest.approx(0.754e-3, rel=1e-3)  # type: ignore[union-attr]
    vec_chain = vec.counts.int_ops * 32.5 + 2048 * 32.25
    assert vec.time.seconds == pytest.approx(vec_chain / 1.44e9)  # type: ignore[union-attr]
    # the chains as they run, their 0.9th power about 10^5 cycles: row_sums' 8.55e5 cycles,
    # 0.594 ms, is now below the 0.728 ms its L1 wavefronts (2^24 for its loads, a line for
    # each lane of each; 128 for its stores, a line a warp) and 128 warps' 11 cycles take on
    # its 16 SMs: (2^24 + 128 + 1408) / (16 x 1.44 GHz)
    row, vec = walks(CALIBRATION)
    assert row.time is not None and row.time.limit == "throughput"
    assert row.time.seconds == pytest.approx((2**24 + 128 + 128 * 11) / (16 * 1.44e9))
    assert vec.time is not None and vec.time.limit == "latency"
    assert vec.time.seconds == pytest.approx(1e5 * (vec_chain / 1e5) ** 0.9 / 1.44e9)
