"""Memory references of ``walk_references.py`` (subscripts, fields, members) on small
sources (expected values by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import buffer_of, count, detected

from roofline_lsp.estimate.roofline import Inputs, analyze


def test_this_arrow_a_member_reads_the_member(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # an inline method's region reads this->u[i] twice and this->dt: per iteration one
    # FP32 multiply and one add (2 FLOP, an FMA), u and w 4096 floats each (the map sections with
    # n = 4096): 32 kB referenced. Before, this->u was no known buffer and dt no float
    src = (
        "class Solver {\n"
        " public:\n"
        "  float *u; float *w; int n; float dt;\n"
        "  void step() {\n"
        "    #pragma omp target teams distribute parallel for map(to: this->u[0:n]) \\\n"
        "      map(from: this->w[0:n])\n"
        "    for (int i = 0; i < this->n; i++) this->w[i] = this->u[i] + this->dt * this->u[i];\n"
        "  }\n"
        "};\n"
    )
    a = count(gpu, tmp_path, src, name="solver.cpp", values=(("n", "4096"),))
    assert a.counts.flops["fp32"] == pytest.approx(2)
    assert sorted(b.buffer for b in a.memory.buffers) == ["u", "w"]
    assert sum(b.footprint for b in a.memory.buffers) == 2 * 4096 * 4


def test_host_memory_the_host_set_before_the_region_is_a_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the inner loops' bounds are read from memory, but memory the host set before the
    # region: an element of an initialised array (cfg[1] = 1000), what a pointer to a
    # variable points at (*it after run(&iters), iters = 500) and a field through a pointer
    # to a struct (p->iters after Params *p = &prm, prm.iters = 250). Each inner trip is an
    # FMA (2 FLOP): 2000, 1000 and 500 FP32 FLOP per iteration, not the 4-trip default
    src = (
        "struct Params { int n; int iters; };\n"
        "void run(const int *it, float *x, int N) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:N]) map(to: it[0:1])\n"
        "  for (int i = 0; i < N; i++) { float v = x[i];\n"
        "    for (int k = 0; k < *it; k++) v = v * 0.99f + 1.f; x[i] = v; }\n"
        "}\n"
        "int main() {\n"
        "  int N = 1 << 20, iters = 500;\n"
        "  float *x = new float[N];\n"
        "  int cfg[2] = {N, 1000};\n"
        "  Params prm; prm.n = N; prm.iters = 250;\n"
        "  Params *p = &prm;\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:N]) map(to: cfg)\n"
        "  for (int i = 0; i < cfg[0]; i++) { float v = x[i];\n"
        "    for (int k = 0; k < cfg[1]; k++) v = v * 0.99f + 1.f; x[i] = v; }\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:N]) map(to: p[0:1])\n"
        "  for (int i = 0; i < p->n; i++) { float v = x[i];\n"
        "    for (int k = 0; k < p->iters; k++) v = v * 0.99f + 1.f; x[i] = v; }\n"
        "  run(&iters, x, N);\n"
        "}\n"
    )
    det = detected(tmp_path, src, "host.cpp")
    flops = {k.line: analyze(k, det, gpu, Inputs()).counts.flops["fp32"] for k in det.kernels}
    assert flops == {3: pytest.approx(1000), 13: pytest.approx(2000), 16: pytest.approx(500)}


def test_a_global_struct_s_fields_are_what_main_set_before_the_call(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # params.n = 1 << 20 and params.iters = 300 in main, then step(x): the region's loops
    # over params.n and params.iters have those counts (1 M iterations of 300 FMAs: 600
    # FP32 FLOP each), not "bound read from memory" defaults
    src = (
        "#include <cstdlib>\n"
        "struct Params { int n; int iters; };\n"
        "Params params;\n"
        "void step(float *x) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:params.n])\n"
        "  for (int i = 0; i < params.n; i++) { float v = x[i];\n"
        "    for (int k = 0; k < params.iters; k++) v = v * 0.99f + 1.f; x[i] = v; }\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  params.n = 1 << 20;\n"
        "  params.iters = 300;\n"
        "  float *x = (float *)malloc(sizeof(float) * params.n);\n"
        "  step(x);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="g.cpp")
    assert [(lp.var, lp.trips, lp.source) for lp in a.counts.loops][-1][:2] == ("k", 300)
    assert a.counts.flops["fp32"] == pytest.approx(600)
    assert a.counts.threads == pytest.approx(1 << 20)


def test_a_struct_an_init_function_fills_has_its_fields(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # setup(&c, n) sets c through a pointer (p->iters = 300), setup_ref(d, n) through a
    # reference (p.iters = 200): the regions' inner loops run 300 and 200 FMAs (600 and 400
    # FP32 FLOP per iteration), not the default for an unknown count
    src = (
        "#include <cstdlib>\n"
        "struct Cfg { int n; int iters; };\n"
        "void setup(Cfg *p, int n) { p->n = n; p->iters = 300; }\n"
        "void setup_ref(Cfg &p, int n) { p.n = n; p.iters = 200; }\n"
        "int main() {\n"
        "  int n = 1 << 20;\n"
        "  float *x = (float *)malloc(sizeof(float) * n);\n"
        "  Cfg c;\n"
        "  setup(&c, n);\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        "  for (int i = 0; i < c.n; i++) { float v = x[i];\n"
        "    for (int k = 0; k < c.iters; k++) v = v * 0.99f + 1.f; x[i] = v; }\n"
        "  Cfg d;\n"
        "  setup_ref(d, n);\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        "  for (int i = 0; i < d.n; i++) { float v = x[i];\n"
        "    for (int k = 0; k < d.iters; k++) v = v * 0.99f + 1.f; x[i] = v; }\n"
        "}\n"
    )
    det = detected(tmp_path, src, "init.cpp")
    flops = {k.line: analyze(k, det, gpu, Inputs()).counts.flops["fp32"] for k in det.kernels}
    assert flops == {10: pytest.approx(600), 15: pytest.approx(400)}


def test_host_memory_the_region_writes_is_no_host_value(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # cfg[1] = 1000 on the host, but the region also writes cfg: the bound it reads may be
    # the device's, so the loop keeps the default for a bound read from memory (16 trips)
    src = (
        "int main() {\n"
        "  int N = 1 << 20; float *x = new float[N];\n"
        "  int cfg[2] = {N, 1000};\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:N], cfg)\n"
        "  for (int i = 0; i < N; i++) { float v = x[i];\n"
        "    for (int k = 0; k < cfg[1]; k++) v = v * 0.99f + 1.f; x[i] = v; cfg[0] = 0; }\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="w.cpp")
    assert [(lp.var, lp.trips, lp.source) for lp in a.counts.loops][-1] == ("k", 16, "default")


def test_a_vector_s_size_and_a_pointer_s_target_are_host_values(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # std::vector<float> w(m) sized by the host: the region's loop to w.size(), to a local
    # sz = w.size() and to *cnt after `*cnt = m` each run m = 300 trips (600 FP32 FLOP per
    # iteration: v * 0.99f + b[k] is one FMA), not the default for a bound read from memory;
    # after w.resize(200) the size is 200 (400 FLOP), after a push_back it is unknown
    def region(bound: str) -> str:
        return (
            "  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
            "  for (int i = 0; i < n; i++) { float v = a[i];\n"
            f"    for (int k = 0; k < {bound}; k++) v = v * 0.99f + b[k]; a[i] = v; }}\n"
        )

    def flops(body: str) -> float:
        src = (
            "#include <cstdlib>\n#include <vector>\n"
            "int main() {\n"
            "  int n = 1 << 20;\n  int m = 300;\n"
            "  std::vector<float> v(n), w(m);\n"
            "  float *a = v.data();\n  float *b = w.data();\n" + body + "}\n"
        )
        return float(count(gpu, tmp_path, src, name="v.cpp").counts.flops["fp32"])

    assert flops(region("w.size()")) == pytest.approx(600)
    assert flops("  int sz = w.size();\n" + region("sz")) == pytest.approx(600)
    pointed = "  int *cnt = (int *)malloc(sizeof(int));\n  *cnt = m;\n"
    assert flops(pointed + region("*cnt")) == pytest.approx(600)
    assert flops("  w.resize(200);\n" + region("w.size()")) == pytest.approx(400)
    default = flops("  w.push_back(1.f);\n" + region("w.size()"))
    assert default != pytest.approx(600)  # changed at run time: no longer the host's m


def test_sscanf_a_returned_struct_and_a_std_array_are_host_values(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # With the program run as `prog 1048576 300`: q from sscanf(argv[2], "%d", &q), p.iters
    # of `Params p = make_params(argc, argv)` (the fields of the struct it returns) and
    # dims[1] of `std::array<int, 2> dims = {n, m}` are all 300: 300 FMAs per iteration
    # (600 FP32 FLOP), not the default for an unknown bound
    def flops(decl: str, bound: str) -> float:
        src = (
            "#include <cstdio>\n#include <cstdlib>\n#include <array>\n"
            "struct Params { int n; int iters; };\n"
            "Params make_params(int argc, char **argv) {\n"
            "  Params p;\n  p.n = atoi(argv[1]);\n  p.iters = atoi(argv[2]);\n  return p;\n}\n"
            "int main(int argc, char **argv) {\n"
            "  int n = atoi(argv[1]);\n  int m = atoi(argv[2]);\n"
            "  float *a = (float *)malloc(sizeof(float) * n);\n" + decl + "\n"
            "  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
            "  for (int i = 0; i < n; i++) { float v = a[i];\n"
            f"    for (int k = 0; k < {bound}; k++) v = v * 0.99f + 1.f; a[i] = v; }}\n"
            "}\n"
        )
        estimate = count(gpu, tmp_path, src, name="s.cpp", args="1048576 300")
        return float(estimate.counts.flops["fp32"])

    assert flops('  int q;\n  sscanf(argv[2], "%d", &q);', "q") == pytest.approx(600)
    assert flops("  Params p = make_params(argc, argv);", "p.iters") == pytest.approx(600)
    assert flops("  std::array<int, 2> dims = {n, m};", "dims[1]") == pytest.approx(600)


def test_the_components_of_a_structure_of_arrays_are_disjoint(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # u holds three components of n3 doubles each (n3 a kernel argument not known, the same
    # for every thread): u[i + n3 * 0..2] reads three elements per thread, 3 x 8 B x 65,536
    # threads = 1.5 MiB of distinct bytes, not one component's 512 kiB; u[i - 1], u[i],
    # u[i + 1] of one component stay one component's worth
    src = (
        "#define U(c, i) u[(i) + n3 * (c)]\n"
        "__global__ void k(const double *u, double *out, int n3) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  out[i] = U(0, i) + U(1, i) * U(2, i) + U(0, i - 1) + U(0, i + 1);\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  int n3 = atoi(argv[1]);\n"
        "  double *u, *out;\n"
        "  k<<<256, 256>>>(u, out, n3);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="soa.cu")
    u = buffer_of(a, "u")
    assert u.footprint == pytest.approx(3 * 8 * 65536, rel=0.01)


def test_pointer_members_of_a_struct_passed_by_value_are_arrays(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a kernel's parameter struct holds the pointers (FasterTransformer's ``Param`` style):
    # each of 262,144 threads (1024 x 256) loads one float of src and stores one of tgt,
    # 1 MiB each (2 MiB working set), whether the member is indexed directly
    # (``p.tgt[i]``), through a local pointer offset by the block (``p.src + blockIdx.x *
    # 256``) or in a struct template (``Q<float>``: its ``T *`` members are float
    # pointers). Before, the offset pointer lost the block (a 1 kB working set) and its
    # stores, and ``Q<float>`` was a float
    src = (
        "struct P { float *src; float *tgt; };\n"
        "template <typename T> struct Q { T *src; T *tgt; };\n"
        "__global__ void direct(P p) {\n"
        "  int i = blockIdx.x * 256 + threadIdx.x;\n"
        "  p.tgt[i] = p.src[i];\n"
        "}\n"
        "__global__ void offset(P p) {\n"
        "  const float *s = p.src + blockIdx.x * 256;\n"
        "  float *t = p.tgt + blockIdx.x * 256;\n"
        "  t[threadIdx.x] = s[threadIdx.x];\n"
        "}\n"
        "__global__ void templated(Q<float> q) {\n"
        "  int i = blockIdx.x * 256 + threadIdx.x;\n"
        "  q.tgt[i] = q.src[i];\n"
        "}\n"
    )
    det = detected(tmp_path, src, "param.cu")
    for k in det.kernels:
        a = analyze(k, det, gpu, Inputs(block=(256, 1, 1), grid=(1024, 1, 1)))
        mib = 1024 * 1024
        assert a.counts.flops["fp32"] == 0, k.name  # a pointer's offset is no float add
        assert sum(b.footprint for b in a.memory.buffers) == 2 * mib, k.name
        assert sum(b.stored for b in a.memory.buffers) == mib, k.name


def test_the_address_of_a_thread_s_own_variable_is_not_global_memory(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # LCG_random(&seed) reads and writes the thread's seed through a pointer: registers,
    # not a global buffer. The only global access is the 4 B store of data[index] per
    # thread, 1 MiB over 262,144 threads (before: seed was a 1 MiB buffer loaded and
    # stored too, 3x the traffic); sincosf(x, &s, &c) likewise stores nothing global
    src = (
        "__device__ float LCG_random(unsigned int *seed) {\n"
        "  *seed = (26757677u * *seed + 1u) % 2147483648u;\n"
        "  return (float)(*seed) / 2147483648.0f;\n"
        "}\n"
        "__global__ void init(float *data, int size) {\n"
        "  int index = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (index >= size) return;\n"
        "  unsigned int seed = index ^ size;\n"
        "  float s, c;\n"
        "  sincosf(data[index], &s, &c);\n"
        "  data[index] = LCG_random(&seed) + s * c;\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="lcg.cu", block=(256, 1, 1), grid=(1024, 1, 1))
    assert [b.buffer for b in a.memory.buffers] == ["data"]
    assert a.memory.buffers[0].footprint == 1024 * 1024


def test_a_device_buffer_copied_from_host_values_holds_them(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # the inner loops' bounds are read from device memory the host filled from values it
    # knows: p->m of cudaMemcpy(d, &h, ...) with h.m = 1000, and *len of a copy of
    # len = 500. Each inner trip is an FMA (2 FLOP): 2000 and 1000 FP32 FLOP per thread,
    # not the 16-trip default (32 FLOP)
    src = (
        "struct Params { int n; int m; };\n"
        "__global__ void k1(const Params *__restrict__ p, float *x) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = x[i];\n"
        "  for (int j = 0; j < p->m; j++) v = v * 0.99f + 1.f; x[i] = v;\n"
        "}\n"
        "__global__ void k2(const int *len, float *x) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = x[i];\n"
        "  for (int j = 0; j < *len; j++) v = v * 0.99f + 1.f; x[i] = v;\n"
        "}\n"
        "int main() {\n"
        "  Params h; h.n = 1 << 20; h.m = 1000; int len = 500;\n"
        "  Params *d; int *d_len; float *x;\n"
        "  cudaMemcpy(d, &h, sizeof(Params), cudaMemcpyHostToDevice);\n"
        "  cudaMemcpy(d_len, &len, sizeof(int), cudaMemcpyHostToDevice);\n"
        "  k1<<<h.n / 256, 256>>>(d, x);\n"
        "  k2<<<h.n / 256, 256>>>(d_len, x);\n"
        "}\n"
    )
    det = detected(tmp_path, src, "copied.cu")
    flops = {k.name: analyze(k, det, gpu, Inputs()).counts.flops["fp32"] for k in det.kernels}
    assert flops == {"k1": pytest.approx(2000), "k2": pytest.approx(1000)}


def test_a_struct_template_local_has_its_fields(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a local Param<double> (made by a device function) and a device function's Param<double>
    # parameter: q.src[i] and q.dst[i] are doubles of the arrays the fields point to, 1 M
    # threads x 8 B = 8 MB read and 8 MB written, one FP64 add each. Before, q read as a
    # double: its fields named no memory (0 B moved)
    src = (
        "template <typename T> struct Param { T *src; T *dst; int n; };\n"
        "__device__ Param<double> make(double *a, double *b) {\n"
        "  Param<double> q; q.src = a; q.dst = b; return q;\n"
        "}\n"
        "__device__ void add_one(Param<double> q, int i) { q.dst[i] = q.src[i] + 1.0; }\n"
        "__global__ void k(double *a, double *b) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  Param<double> q = make(a, b);\n"
        "  add_one(q, i);\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(4096, 1, 1))
    mb = 8 * (1 << 20)
    assert a.counts.flops["fp64"] == pytest.approx(1.0)
    assert a.memory.bytes_loaded == pytest.approx(mb, rel=0.01)
    assert a.memory.bytes_stored == pytest.approx(mb, rel=0.01)


def test_a_host_struct_s_members_are_its_arrays(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a file-scope struct (``struct Fields {...} F``) whose members point to the arrays an
    # offload region reads and writes: F.x and F.y are 2^20 doubles each, 8 MB read and 8 MB
    # written. Before, F was no variable the region knew: its fields read as 4-byte elements
    # of one array (4 MB in all)
    src = (
        "struct Fields { double *x; double *y; } F;\n"
        "void scale(int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) F.y[i] = 2.0 * F.x[i];\n"
        "}\n"
        "int main() { scale(1 << 20); }\n"
    )
    a = count(gpu, tmp_path, src, name="fields.cpp")
    mb = 8 * (1 << 20)
    assert a.memory.bytes_loaded == pytest.approx(mb, rel=0.01)
    assert a.memory.bytes_stored == pytest.approx(mb, rel=0.01)


def test_the_fields_of_each_thread_s_own_struct_are_a_struct_apart(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # p[i].y: consecutive threads read fields 16 bytes apart (a struct of four floats), so a
    # warp's load touches 32 x 16 B / 128 B = 4 lines; q[blockIdx.x].y, a struct the threads
    # share (one address), and r[i] (consecutive floats) keep their lane stride
    src = (
        "struct P { float x, y, z, w; };\n"
        "__global__ void k(const P *p, const P *q, float *r, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) r[i] = p[i].y + q[blockIdx.x].y;\n"
        "}\n"
        "int main() { P *p, *q; float *r; k<<<4096, 256>>>(p, q, r, 4096 * 256); }\n"
    )
    a = count(gpu, tmp_path, src)
    by_buffer = {x.buffer: (x.lane_stride, x.lane_bytes) for x in a.counts.accesses}
    assert by_buffer["p.y"] == (None, 16.0)
    assert by_buffer["q.y"] == (None, None)
    assert by_buffer["r"] == (1.0, None)


def test_indices_a_constant_apart_share_one_address(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # x[b], x[b + 1], x[b + 256], x[b + 257] with a signed or 64-bit b: one address, the
    # constants in the loads' immediates (``LDG [R + 0x4]``), no integer work of their own.
    # A 32-bit unsigned b + 1 may wrap: each sum is an add (0.5, a constant's) and an address
    # of its own (1): 3 x 1.5 more, as ``IADD3 + IMAD.WIDE.U32`` each in sm_86 SASS.
    def ints(ty: str, reads: str) -> float:
        src = (
            "__global__ void k(const float *x, float *y, int n) {\n"
            "  int i = threadIdx.x;\n"
            f"  {ty} b = 512 * i + n;\n"
            f"  y[i] = {reads};\n"
            "}\n"
        )
        return float(count(gpu, tmp_path, src, name="k.cu").counts.int_ops)

    four = "x[b] + x[b + 1] + x[b + 256] + x[b + 257]"
    for ty in ("int", "long"):
        assert ints(ty, four) == pytest.approx(ints(ty, "x[b]"))
    assert ints("unsigned", four) == pytest.approx(ints("unsigned", "x[b]") + 3 * 1.5)
    # the built-ins are unsigned, and so is their sum: its + 1 wraps too, a sum and an address
    # of its own (2, as IADD3 + IMAD.WIDE.U32)
    tid = "blockIdx.x * blockDim.x + threadIdx.x"
    assert ints("int", f"x[{tid}] + x[{tid} + 1]") == pytest.approx(ints("int", f"x[{tid}]") + 2)


def test_an_array_member_of_a_global_struct_is_global_memory(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # gs.v[i] = 2 * gs.u[i] over the 2^20-element array members of a file-scope struct the
    # region maps: 4 MiB read and 4 MiB written, each member its own run of memory. Before,
    # a member array of a struct value was taken for registers: 0 B, compute-bound
    src = (
        "#define NS (1 << 20)\n"
        "struct S { float u[NS]; float v[NS]; } gs;\n"
        "int main() {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: gs)\n"
        "  for (int i = 0; i < NS; i++) gs.v[i] = 2.f * gs.u[i];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="gs.cpp")
    mb = 4 * (1 << 20)
    assert {b.buffer: (b.loaded, b.stored) for b in a.memory.buffers} == {
        "gs->u": (pytest.approx(mb), 0.0),
        "gs->v": (0.0, pytest.approx(mb)),
    }


@pytest.mark.parametrize("decl, name", [("Acc acc;", "acc.v"), ("float v[64];", "v")])
def test_an_array_member_of_a_thread_s_own_struct_is_a_per_thread_array(
    gpu, tmp_path: Path, decl: str, name: str
) -> None:  # type: ignore[no-untyped-def]
    # each thread fills its own 64-float array and reads it back at a rolled loop's index:
    # the array cannot live in registers, so it is in local memory, 64 x 4 B a thread,
    # whether it is a plain array or the member of a struct the thread declares. Before,
    # ``acc.v`` was one 256-byte array in global memory that all 2^20 threads shared (its
    # working set 256 B, against 1 GiB for the threads' copies)
    src = (
        "struct Acc { float v[64]; int n; };\n"
        "__global__ void k(const float *a, float *out, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  {decl}\n"
        "  for (int j = 0; j < 64; j++) NAME[j] = a[i] * j;\n"
        "  float s = 0.f;\n"
        "  for (int r = 0; r < m; r++) s += NAME[(r * 7) % 64];\n"
        "  out[i] = s;\n"
        "}\n"
        "int main() { float *a, *o; k<<<4096, 256>>>(a, o, 256); }\n"
    ).replace("NAME", name)
    a = count(gpu, tmp_path, src)
    assert a.counts.local_bytes == {f"local:{name}": 64 * 4}
    assert {x.buffer for x in a.counts.accesses if x.space == "localmem"} == {f"local:{name}"}
    assert all(x.space != "global" for x in a.counts.accesses if name in x.buffer)


@pytest.mark.parametrize(
    "elem, size", [("struct P { float x, y, z; };", 12), ("typedef float4 P;", 16)]
)
def test_a_per_thread_array_of_structs_is_in_local_memory_whole(
    gpu, tmp_path: Path, elem: str, size: int
) -> None:  # type: ignore[no-untyped-def]
    # p[(r * 5) % 64].x read at a rolled loop's index: the thread's 64 structs are in local
    # memory, 64 x 12 B (three floats; a float4 16 B). Before, the field accesses were
    # dropped (``p.x`` is no per-thread array) and the array was sized by 4-byte elements
    src = (
        f"{elem}\n"
        "__global__ void k(const float *a, float *out, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  P p[64];\n"
        "  for (int j = 0; j < 64; j++) { p[j].x = a[i] * j; p[j].y = 0.f; }\n"
        "  float s = 0.f;\n"
        "  for (int r = 0; r < m; r++) s += p[(r * 5) % 64].x;\n"
        "  out[i] = s;\n"
        "}\n"
        "int main() { float *a, *o; k<<<4096, 256>>>(a, o, 256); }\n"
    )
    a = count(gpu, tmp_path, src)
    assert a.counts.local_bytes == {"local:p": 64 * size}
    assert {x.buffer for x in a.counts.accesses if x.space == "localmem"} == {"local:p"}


def test_an_element_that_is_a_pointer_to_a_struct_moves_a_pointer(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # out[i] = ptrs[i] copies one 8-byte pointer per thread, whatever the 128-byte struct it
    # points to: 2^24 threads x (8 B read + 8 B written) = 268 MB, not 2^24 x 256 B = 4.3 GB
    src = (
        "struct Big { double a[16]; };\n"
        "__global__ void k(Big **ptrs, Big **out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = ptrs[i];\n"
        "}\n"
        "int main() { int n = 1 << 24; Big **p, **q; k<<<n / 256, 256>>>(p, q, n); }\n"
    )
    a = count(gpu, tmp_path, src, name="k.cu")
    assert sum(b.footprint for b in a.memory.buffers) == 2 * 2**24 * 8


def test_a_field_of_consecutive_structs_reads_their_sectors(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # o[i] = p[i].x over 2^22 threads: a warp reading .x of 16-byte structs fetches every
    # 32-byte sector of them, 16 B a thread (67.1 MB), plus o's 16.8 MB = 83.9 MB, not the
    # 4 bytes of .x alone (33.6 MB). Three fields of 28-byte structs read the structs once
    # (28 B a thread, not 3 x 28); .x of 68-byte structs a sector each (32 B a thread); through
    # a pointer that moves with the thread as through a subscript
    cases = (
        ("float x, y, z, w;", "p[i].x", 16),
        ("float x, y, z, vx, vy, vz, m;", "p[i].x + p[i].y + p[i].z", 28),
        ("float v[16]; float x;", "p[i].x", 32),
        ("float x, y, z, w;", "(p + i)->x", 16),
    )
    for fields, read, per_thread in cases:
        src = (
            f"struct P {{ {fields} }};\n"
            "__global__ void k(const P *p, float *o, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (i < n) o[i] = {read};\n"
            "}\n"
            "int main() { int n = 1 << 22; P *a; float *b; k<<<n / 256, 256>>>(a, b, n); }\n"
        )
        a = count(gpu, tmp_path, src)
        assert a.memory.kernel_bytes == pytest.approx((per_thread + 4) * 2**22, rel=0.01), read


def test_a_pointer_member_of_a_constant_struct_points_at_global_memory(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``__constant__ Params cp`` holds device pointers: ``cp.y[i] = cp.a * cp.x[i] +
    cp.y[i]`` reads 8 B and writes 4 B of global memory per thread, 2 x 64 MiB for 2^24
    threads (before: constant memory, no DRAM traffic, the working set 0 B)."""
    src = (
        "struct Params { const float *x; float *y; int n; float a; };\n"
        "__constant__ Params cp;\n"
        "__global__ void k() {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < cp.n) cp.y[i] = cp.a * cp.x[i] + cp.y[i];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, block=(256, 1, 1), grid=(65536, 1, 1))
    spaces = {x.buffer: x.space for x in a.counts.accesses}
    assert spaces == {"cp->x": "global", "cp->y": "global"}
    assert a.memory.footprint == 2 * 4 * (1 << 24)
