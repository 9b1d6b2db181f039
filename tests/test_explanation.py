"""What a static verdict rests on (``estimate/explanation.py``): its terms as data, and its
confidence."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.estimate.explanation import static_confidence, verdict_terms
from roofline_lsp.estimate.roofline import Inputs, analyze, estimate
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.kernel import Detection
from roofline_lsp.model.terms import (
    AssumptionTerm,
    LoopTerm,
    MemoryTerm,
    QueryTerm,
    TypeTerm,
    WorkTerm,
)
from roofline_lsp.model.verdict import classify_bound
from roofline_lsp.present.explanations import card_assumptions, explanation, term_text

SAXPY = (
    "__global__ void k(int n, float a, float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
)


def _detected(tmp_path: Path, src: str, name: str = "k.cu") -> Detection:
    """Detection of ``src`` written to ``tmp_path / name``."""
    path = tmp_path / name
    path.write_text(src)
    return detect(path.read_bytes(), str(path))


@pytest.fixture(scope="module")
def gpu():  # type: ignore[no-untyped-def]
    return load_registry().get("rtx3080")


def test_verdict_rests_on_terms_built_from_the_estimate(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    det = _detected(tmp_path, SAXPY)
    inputs = Inputs(block=(256, 1, 1), grid=(4096, 1, 1), values=(("n", 1048576.0),))
    a = analyze(det.kernels[0], det, gpu, inputs)
    ridge = gpu.ridges()
    ai = {p: (None if v is None else min(v, 1e9)) for p, v in a.ai.items()}
    _, deciding = classify_bound(ai, ridge)
    terms = verdict_terms(a)
    work, memory = terms[0], terms[-1]
    # y[i] = a * x[i] + y[i]: one FMA (2 FP32 FLOP) per thread; 3 x 4 B referenced per thread
    assert isinstance(work, WorkTerm) and work.per == "thread"
    assert dict(work.flops) == {"fp32": 2.0}
    assert isinstance(memory, MemoryTerm)
    assert memory.references == pytest.approx(12 * 1048576, rel=0.01)
    v = estimate(det.kernels[0], det, gpu, inputs)
    assert v.terms == terms and v.rationale == ""
    assert v.confidence == static_confidence(a, ai, ridge, deciding)
    assert 0.05 <= v.confidence <= 0.95


def test_a_loop_term_carries_its_line_and_work_per_iteration(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "__global__ void k(int n, const float *x, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.0f;\n"
        "  for (int j = 0; j < 64; j++)\n"
        "    s += x[j] * x[j];\n"
        "  y[i] = s;\n"
        "}\n"
    )
    det = _detected(tmp_path, src)
    v = estimate(det.kernels[0], det, gpu, Inputs(block=(256, 1, 1), grid=(64, 1, 1)))
    (loop,) = [t for t in v.terms if isinstance(t, LoopTerm)]
    # line 4, 64 constant trips; per iteration one FMA (2 FP32 FLOP) and one 4 B load
    assert (loop.var, loop.line, loop.trips, loop.trip_source) == ("j", 4, 64, "constant")
    assert loop.per_iteration is not None
    flops, _int_ops, refs = loop.per_iteration
    assert dict(flops) == {"fp32": pytest.approx(2.0)}
    assert refs == pytest.approx(4.0)


ASSUMING = (
    "__global__ void k(float *x, const int *rp, int m) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float s = 0.f;\n"
    "  for (int j = 0; j < m; j++) s += x[j];\n"
    "  for (int j = rp[i]; j < rp[i + 1]; j++) s += x[j];\n"
    "  x[i] = s;\n"
    "}\n"
    "int main(int argc, char **argv) {\n"
    "  float *x; int *rp; int m = atoi(argv[1]);\n"
    "  k<<<(N + 255) / 256, 256>>>(x, rp, m);\n"
    "}\n"
)


def test_what_was_assumed_is_data_on_the_verdict(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    det = _detected(tmp_path, ASSUMING)
    v = estimate(det.kernels[0], det, gpu)
    assumed = [t for t in v.terms if isinstance(t, AssumptionTerm)]
    launch = [t for t in assumed if t.kind == "launch"]
    trips = {t.line: t for t in assumed if t.kind == "trips"}
    # the grid (N + 255) / 256 has no N anywhere: the default launch, 256 x 4096 threads,
    # and the hint that settles it names N
    assert [(t.why, t.value, t.names) for t in launch] == [("unknown values", 256 * 4096, ("N",))]
    # line 4: j < m, m = atoi(argv[1]) with no program arguments: 16 trips; a hint on m
    assert (trips[4].why, trips[4].value, trips[4].names, trips[4].var) == (
        "unknown values",
        16,
        ("m",),
        "j",
    )
    # line 5: bounds read from rp[]: no hint can give them
    assert (trips[5].why, trips[5].names) == ("data", ())
    # each loop holds one FADD and about as many integer ops: about half the work each
    assert trips[4].share == pytest.approx(trips[5].share, rel=0.2)
    # a hint for both settles the launch and the first loop
    det = _detected(tmp_path, "// roofline: N=1<<20, m=64\n" + ASSUMING)
    settled = estimate(det.kernels[0], det, gpu)
    left = [t for t in settled.terms if isinstance(t, AssumptionTerm)]
    assert [(t.kind, t.line) for t in left] == [("trips", 6)]  # the data-bound loop, moved down
    assert settled.confidence > v.confidence


def test_confidence_discounts_defaulted_loops_and_an_assumed_launch(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = (
        "__global__ void k(const float *x, float *y, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < m; j++) s += x[i] * 1.5f;\n"
        "  y[i] = s;\n"
        "}\n"
    )
    det = _detected(tmp_path, src)
    launch = Inputs(block=(256, 1, 1), grid=(4096, 1, 1))
    known = estimate(det.kernels[0], det, gpu, replace(launch, values=(("m", 16.0),)))
    defaulted = estimate(det.kernels[0], det, gpu, launch)
    no_launch = estimate(det.kernels[0], det, gpu, Inputs(values=(("m", 16.0),)))
    # m = 16 given or defaulted to 16: the same counts and verdict; the defaulted one rests on
    # an assumption for nearly all its work (the loop): about 0.1 less confidence
    assert known.ai == defaulted.ai and known.bound == defaulted.bound
    assert known.confidence - defaulted.confidence == pytest.approx(0.1, abs=0.02)
    # no launch: the default 256 x 4096 threads, the same per-thread work; 0.1 less
    assert no_launch.ai == known.ai
    assert known.confidence - no_launch.confidence == pytest.approx(0.1, abs=1e-3)


def test_a_compute_verdict_that_holds_only_on_removed_bytes_is_less_sure(gpu) -> None:  # type: ignore[no-untyped-def]
    """Two verdicts at the same distance above the ridge: the one whose DRAM bytes are a
    hundredth of the bytes referenced stands, with every referenced byte from DRAM, 100x lower:
    below the ridge, so its confidence is that of a verdict on the ridge (0.5)."""
    det_path = Path(__file__).parent / "fixtures" / "estimator" / "saxpy.cu"
    det = detect(det_path.read_bytes(), str(det_path))
    a = analyze(det.kernels[0], det, gpu, Inputs(block=(256, 1, 1), grid=(4096, 1, 1)))
    ridge = gpu.ridges()
    ai = {"fp64": 0.0, "fp32": ridge["fp32"] * 10, "fp16": 0.0, "int": 0.0}  # 10x above
    kept = replace(a, memory=replace(a.memory, bytes_loaded=1e6, bytes_stored=0.0, references=1e6))
    removed = replace(
        a, memory=replace(a.memory, bytes_loaded=1e6, bytes_stored=0.0, references=1e8)
    )
    # kept: one decade from the ridge: 0.5 + 0.45 tanh(1 / 0.8) = 0.5 + 0.45 x 0.848 = 0.882
    assert static_confidence(kept, ai, ridge, "fp32") == pytest.approx(0.882, abs=1e-3)
    assert static_confidence(removed, ai, ridge, "fp32") == pytest.approx(0.5, abs=1e-3)


def test_an_offloaded_loop_bound_by_a_host_parameter_names_it(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    det = _detected(
        tmp_path,
        "void vadd(int n, const float *a, float *c) {\n"
        "#pragma omp target teams distribute parallel for map(to: a[0:n]) map(from: c[0:n])\n"
        "  for (int i = 0; i < n; i++) c[i] = a[i] + 1.0f;\n"
        "}\n",
        "v.c",
    )
    v = estimate(det.kernels[0], det, gpu)
    (t,) = [t for t in v.terms if isinstance(t, AssumptionTerm)]
    # n is vadd's parameter, called from nowhere: the work-shared loop gets the iterations of
    # the launch a CUDA kernel is assumed to have (4096 x 256 = 1,048,576), all the work of
    # the region; a hint on n settles it
    assert (t.kind, t.line, t.value, t.names, t.share) == ("trips", 3, 1048576, ("n",), 1.0)


def test_a_template_type_nothing_fixes_is_named_as_assumed(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # T of an offloaded template function and of a kernel launched without template
    # arguments: taken as float and said so; a launch with k<double> fixes it (no term)
    det = _detected(
        tmp_path,
        "template <typename T>\n"
        "void axpy(int n, T a, const T *x, T *y) {\n"
        "#pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) y[i] += a * x[i];\n"
        "}\n"
        "template <typename T, typename U = double>\n"
        "__global__ void scale(T *x, U s) { x[threadIdx.x] *= s; }\n"
        "template <typename T>\n"
        "__global__ void shift(T *x) { x[threadIdx.x] += 1; }\n"
        "int main() { double *d; shift<double><<<1, 32>>>(d); }\n",
        "t.cu",
    )
    types = {
        k.name: [
            (t.param, t.assumed) for t in estimate(k, det, gpu).terms if isinstance(t, TypeTerm)
        ]
        for k in det.kernels
    }
    assert types == {"axpy": [("T", "float")], "scale": [("T", "float")], "shift": []}
    text = term_text(TypeTerm("T", "float"))
    assert text == (
        "template type T assumed float (no launch or call fixes it);"
        " add `// roofline: T=double` (or another type)"
    )


def test_an_undeclared_type_named_like_a_float_is_taken_by_its_name(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # ``dfloat`` comes from a build flag the tool does not see (-Ddfloat=float): y = 2 * x is
    # one FP32 multiply, and the verdict says what it took; the hint makes it double (one FP64
    # multiply) and the term goes away. A struct the program declares keeps its own name.
    src = (
        "struct floatpair { float a, b; };\n"
        "__global__ void k(const dfloat *x, dfloat *y, floatpair *p) {\n"
        "  int i = threadIdx.x;\n"
        "  y[i] = 2 * x[i];\n"
        "  p[i].a = p[i].b;\n"
        "}\n"
    )
    det = _detected(tmp_path, src, "n.cu")
    v = estimate(det.kernels[0], det, gpu)
    assert v.counts is not None and v.counts.flops["fp32"] == 1.0
    assert [t for t in v.terms if isinstance(t, TypeTerm)] == [
        TypeTerm("dfloat", "float", "undeclared")
    ]
    assert term_text(TypeTerm("dfloat", "float", "undeclared")) == (
        "type dfloat is not declared in view: taken as float by its name;"
        " add `// roofline: dfloat=double` (or another type)"
    )
    det = _detected(tmp_path, "// roofline: dfloat=double\n" + src, "h.cu")
    v = estimate(det.kernels[0], det, gpu)
    assert v.counts is not None and v.counts.flops == {"fp64": 1.0, "fp32": 0.0, "fp16": 0.0}
    assert not [t for t in v.terms if isinstance(t, TypeTerm)]
    # an index type named like a long (-Ddlong=int): 8 bytes an element, and the hint the
    # term suggests is the other integer width
    det = _detected(
        tmp_path,
        "__global__ void k(const dlong *ix, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  y[i] = ix[i];\n"
        "}\n",
        "l.cu",
    )
    v = estimate(det.kernels[0], det, gpu)
    assert [t for t in v.terms if isinstance(t, TypeTerm)] == [
        TypeTerm("dlong", "long", "undeclared")
    ]
    assert v.counts is not None and v.counts.bytes_loaded == pytest.approx(8.0, rel=0.01)
    assert term_text(TypeTerm("dlong", "long", "undeclared")).endswith(
        "add `// roofline: dlong=int` (or another type)"
    )


TEMPLATE_BOUND = (
    "template <typename T, int dim>\n"
    "void dist(const T *a, T *out, int n, const int *len) {\n"
    "  #pragma omp target teams distribute parallel for\n"
    "  for (int i = 0; i < n; i++) {\n"
    "    T s = 0;\n"
    "    for (int d = 0; d < dim; d++) s += a[i * dim + d];\n"
    "    for (int e = 0; e < len[i]; e++) s += a[e];\n"
    "    out[i] = s;\n"
    "  }\n"
    "}\n"
)


def test_a_template_parameter_bound_is_settled_by_a_hint(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``d < dim`` with ``dim`` a template parameter nothing instantiates: a value a hint
    gives (``dim=...``), not one read from memory like ``len[i]`` on the next line."""
    det = _detected(tmp_path, TEMPLATE_BOUND, "k.cpp")
    v = estimate(det.kernels[0], det, gpu)
    trips = {t.line: t for t in v.terms if isinstance(t, AssumptionTerm) and t.kind == "trips"}
    assert (trips[6].why, trips[6].names) == ("unknown values", ("dim",))
    assert (trips[7].why, trips[7].names) == ("data", ())
    det = _detected(tmp_path, "// roofline: dim=3\n" + TEMPLATE_BOUND, "k.cpp")
    settled = estimate(det.kernels[0], det, gpu)
    left = [t.line for t in settled.terms if isinstance(t, AssumptionTerm) and t.kind == "trips"]
    assert 7 not in left and 8 in left  # the dim loop settled; the data-bound one stays


def test_tensor_core_multiply_adds_are_counted_at_the_tensor_core_peak(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a WMMA tile product in a device function the kernel calls: one 16 x 16 x 16 half
    # multiply-add per warp, 2 * 16 * 16 * 16 / 32 = 256 FLOP per thread, weighed against
    # the FP16 tensor-core peak (50.1 TFLOP/s / 760.3 GB/s: ridge 65.9); the verdict says
    # what it counted; SAXPY has no such note
    src = (
        "#include <mma.h>\n"
        "using namespace nvcuda;\n"
        "__device__ void tile(const half *a, const half *b, float *c) {\n"
        "  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;\n"
        "  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;\n"
        "  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n"
        "  wmma::load_matrix_sync(fa, a, 16);\n"
        "  wmma::load_matrix_sync(fb, b, 16);\n"
        "  wmma::mma_sync(acc, fa, fb, acc);\n"
        "  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);\n"
        "}\n"
        "__global__ void k(const half *a, const half *b, float *c) { tile(a, b, c); }\n"
    )
    det = _detected(tmp_path, src)
    k = next(k for k in det.kernels if k.name == "k")
    v = estimate(k, det, gpu)
    assert v.counts is not None and v.counts.flops["tensor"] == 256
    assert v.ridge["tensor"] == pytest.approx(50.13504e12 / 760.3e9)
    assert v.bound == "compute" and v.deciding == "tensor"
    text = explanation(v)
    assert "256 tensor-core FLOP" in text
    note = "counted against the tensor-core peak, the tiles they load and store as each lane's"
    assert note in text
    plain = _detected(tmp_path, SAXPY, "saxpy.cu")
    assert note not in explanation(estimate(plain.kernels[0], plain, gpu))


def test_the_launch_hint_names_what_a_hint_can_give(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # n from the command line, run without arguments: `n` (not `argv`, nor nothing); the
    # field of an object a function the walk cannot see builds: `img.n`, a hint that works
    # (the launch then has 4096 threads)
    src = (
        "__global__ void k(float *x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) x[i] *= 2.0f;\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  int n = atoi(argv[1]);\n"
        "  Image img = load_image(argv[1]);\n"
        "  k<<<(n + 255) / 256, 256>>>(img.data, n);\n"
        "  k<<<(img.n + 255) / 256, 256>>>(img.data, img.n);\n"
        "}\n"
    )
    det = _detected(tmp_path, src)
    names = [
        t.names
        for k in det.kernels
        for t in estimate(k, det, gpu).terms
        if isinstance(t, AssumptionTerm) and t.kind == "launch"
    ]
    assert names == [("n",)]
    second = src.replace("  k<<<(n + 255) / 256, 256>>>(img.data, n);\n", "")
    det = _detected(tmp_path, second, "f.cu")
    (v,) = [estimate(k, det, gpu) for k in det.kernels]
    assert [t.names for t in v.terms if isinstance(t, AssumptionTerm)] == [("img.n",)]
    det = _detected(tmp_path, "// roofline: img.n=4096\n" + second, "h.cu")
    (v,) = [estimate(k, det, gpu) for k in det.kernels]
    assert v.counts is not None and v.counts.threads == 4096
    # a cast's type is not a name a hint gives: (uint)ceil(n / 256.0) names n alone
    cast = src.replace("(n + 255) / 256, 256", "(uint)ceil(n / 256.0), 256")
    det = _detected(tmp_path, "typedef unsigned int uint;\n" + cast, "c.cu")
    launch = [
        t.names
        for t in estimate(det.kernels[0], det, gpu).terms
        if isinstance(t, AssumptionTerm) and t.kind == "launch"
    ]
    assert launch == [("n",)]


def test_a_value_the_program_reads_at_run_time_is_named_as_read(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # rows and cols come from the input file's header (fscanf, a stream): no source, argument
    # or launch gives them. The launch (rows threads) and the loop over cols are assumed, and
    # say which host variables the program reads at run time; the hint still names what it
    # can give (the kernel's m, the host's rows). reps, parsed from the command line and run
    # without arguments, is unknown but not read: it stays "unknown values".
    src = (
        "#include <cstdio>\n"
        "#include <fstream>\n"
        "__global__ void k(const float *a, float *s, int m, int reps) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  float t = 0.f;\n"
        "  for (int j = 0; j < m; j++) t += a[i * m + j];\n"
        "  for (int r = 0; r < reps; r++) t *= 0.5f;\n"
        "  s[i] = t;\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  int rows, cols;\n"
        '  FILE *f = fopen(argv[1], "r");\n'
        '  fscanf(f, "%d", &rows);\n'
        "  std::ifstream in(argv[1]);\n"
        "  in >> cols;\n"
        "  int reps = atoi(argv[2]);\n"
        "  float *a, *s;\n"
        "  k<<<rows / 256, 256>>>(a, s, cols, reps);\n"
        "}\n"
    )
    det = _detected(tmp_path, src)
    v = estimate(det.kernels[0], det, gpu)
    assumed = {(t.kind, t.line): t for t in v.terms if isinstance(t, AssumptionTerm)}
    launch, cols, reps = assumed[("launch", 0)], assumed[("trips", 6)], assumed[("trips", 7)]
    assert (launch.why, launch.names, launch.read) == ("input", ("rows",), ("rows",))
    assert (cols.why, cols.names, cols.read) == ("input", ("m",), ("cols",))
    assert (reps.why, reps.read) == ("unknown values", ())
    assert term_text(cols) == (
        "loop over j (line 6): trip count unknown (cols set at run time), assumed 16;"
        " add `// roofline: m=...`"
    )
    assert term_text(launch).startswith("launch size unknown (rows set at run time): assumed")


def test_a_launch_the_gpu_profile_sized_says_so(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the occupancy API's answer is the profile's per-SM limits (block 768, grid 136 on the
    # RTX 3080), and the device count is taken as 1: each verdict names what it took
    src = SAXPY + (
        "int main() {\n"
        "  int minGrid, block, gpus; float *x, *y;\n"
        "  cudaGetDeviceCount(&gpus);\n"
        "  cudaOccupancyMaxPotentialBlockSize(&minGrid, &block, k, 0, 0);\n"
        "  k<<<minGrid, block>>>((1 << 24) / gpus, 2.0f, x, y);\n"
        "}\n"
    )
    det = _detected(tmp_path, src)
    v = estimate(det.kernels[0], det, gpu)
    assert v.counts is not None and v.counts.threads == 136 * 768
    notes = [term_text(t) for t in v.terms if isinstance(t, QueryTerm)]
    assert notes == [
        "cudaGetDeviceCount taken as 1: the GPU of the verdict does all the work",
        "cudaOccupancyMaxPotentialBlockSize answered from the GPU's per-SM thread and block "
        "limits; the kernel's registers or shared memory may allow fewer blocks",
    ]
    assert "cudaOccupancyMaxPotentialBlockSize answered" in explanation(v)
    # what the estimate took from the profile is what it assumed: the hover card names it
    assert card_assumptions(v) == (notes[0],)
    # a launch of its own numbers, whatever the program queried: no such note
    plain = _detected(
        tmp_path,
        SAXPY + "int main() { float *x; int g; cudaGetDeviceCount(&g);"
        " k<<<64, 256>>>(1, 2.f, x, x); }\n",
    )
    assert not [t for t in estimate(plain.kernels[0], plain, gpu).terms if isinstance(t, QueryTerm)]


def test_host_memory_read_in_place_is_named_not_counted(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # SAXPY over 2^24 elements of host memory mapped into the device (x and y): x read, y
    # read and written, 3 x 64 MiB = 201 MB cross the host link; DRAM sees only the floor
    src = SAXPY + (
        "int main() {\n"
        "  int n = 1 << 24; float *hx, *hy, *x, *y;\n"
        "  cudaHostAlloc((void **)&hx, n * sizeof(float), cudaHostAllocMapped);\n"
        "  cudaHostAlloc((void **)&hy, n * sizeof(float), cudaHostAllocMapped);\n"
        "  cudaHostGetDevicePointer((void **)&x, hx, 0);\n"
        "  cudaHostGetDevicePointer((void **)&y, hy, 0);\n"
        "  k<<<n / 256, 256>>>(n, 2.0f, x, y);\n"
        "}\n"
    )
    det = _detected(tmp_path, src)
    v = estimate(det.kernels[0], det, gpu)
    memory = next(t for t in v.terms if isinstance(t, MemoryTerm))
    assert memory.host_buffers == ("x", "y")
    assert memory.host_bytes == pytest.approx(3 * 64 * 2**20, rel=0.01)
    assert memory.dram_bytes < 64 * 1024
    assert "x, y: host memory read in place (zero-copy), 201 MB over the host link" in (
        term_text(memory)
    )
