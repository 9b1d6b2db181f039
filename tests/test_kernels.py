"""Kernel detection on hand-written fixtures covering every supported form."""

import os
import random
from pathlib import Path

import pytest
from counting_helpers import detected
from edits import SNIPPETS, edited

from roofline_lsp.detect.kernels import detect, detect_with_reads, may_hold_kernels
from roofline_lsp.syntax.parsing import parse
from roofline_lsp.syntax.sources import read_from_disk

FIXTURES = Path(__file__).parent / "fixtures" / "detect"


def run(name: str):
    path = FIXTURES / name
    return detect(path.read_bytes(), str(path))


def by_name(det):
    return {k.name: k for k in det.kernels}


def test_cuda_forms_lines_and_attributes():
    det = run("cuda_forms.cu")
    ks = by_name(det)
    assert set(ks) == {"templated", "c_linkage", "file_static", "split_lines", "via_macro"}
    # line of the __global__ keyword, 1-based
    assert ks["templated"].line == 11
    assert ks["templated"].template_params == ("typename T", "int N")
    assert ks["templated"].launch_bounds == ("BLOCK", "4")
    assert ks["templated"].params == (("T *", "out"), ("const T *__restrict__", "in"))
    assert ks["c_linkage"].line == 16
    assert ks["file_static"].line == 18 and "static" in ks["file_static"].qualifiers
    assert (ks["split_lines"].line, ks["split_lines"].end_line) == (20, 24)
    # a qualifier macro (#define GLOBAL __global__) is seen through
    assert ks["via_macro"].line == 26 and ks["via_macro"].recovered
    assert ks["via_macro"].params == (("int", "n"), ("float *", "x"))
    assert "declared_only" not in ks
    for k in det.kernels:
        assert k.language == "cuda"
        assert k.body.type == "compound_statement"
        src = det.source[k.body_span.start_byte : k.body_span.end_byte]
        assert src.startswith(b"{") and src.endswith(b"}")
        assert det.source[k.name_span.start_byte : k.name_span.end_byte] == k.name.encode()


def test_device_functions_followed_into_local_headers():
    det = run("cuda_forms.cu")
    assert det.functions["scale"].file.endswith("helpers.cuh")
    assert det.functions["scale"].qualifiers == ("__device__", "__forceinline__")
    # c_linkage calls twice (this file), which calls scale (the header): transitive
    assert by_name(det)["c_linkage"].callees == ("twice", "scale")
    assert det.constants["HALF"] == "0.5f"  # #define from the header
    assert det.constants["kGrid"] == "64"  # constexpr


def test_kernel_defined_in_header():
    det = run("helpers.cuh")
    assert [(k.name, k.line) for k in det.kernels] == [("header_kernel", 7)]
    assert by_name(det)["header_kernel"].callees == ("scale",)


def test_launch_sites_all_forms_evaluated():
    det = run("cuda_forms.cu")
    sites = {(s.kernel, s.form): s for s in det.launches}
    t = sites[("templated", "chevron")]
    assert t.line == 38
    # dim3 grid(n / BLOCK, 2) with n = 1 << 20 and BLOCK 128
    assert t.grid_value == (8192, 2, 1)
    assert t.block_value == (128, 1, 1)
    assert t.shmem == "256 * sizeof(float)" and t.stream == "0"
    assert t.args == ("f", "f")
    c = sites[("c_linkage", "chevron")]
    assert (c.grid_value, c.block_value) == ((64, 1, 1), (128, 2, 1))
    h = sites[("file_static", "hipLaunchKernelGGL")]
    assert (h.grid_value, h.block_value, h.shmem_value, h.args) == (
        (4, 1, 1),
        (128, 1, 1),
        0,
        ("i",),
    )
    cl = sites[("split_lines", "cudaLaunchKernel")]
    assert (cl.grid_value, cl.block_value) == ((8, 1, 1), (32, 1, 1))
    # an unknown name stays unevaluated, its text kept
    u = sites[("via_macro", "chevron")]
    assert u.grid == "unknown_blocks" and u.grid_value is None
    hk = sites[("header_kernel", "chevron")]
    assert hk.grid_value == ((1 << 20) // 128, 1, 1)
    assert len(det.launches_of(by_name(det)["templated"])) == 1


def test_a_macro_that_launches_through_the_hip_api():
    # hungarian's HIP version: call_kernel_s(k, blocks, threads, shmem) expands to
    # hipLaunchKernelGGL(k, blocks, threads, shmem, 0); the invocation is the launch, with
    # its own arguments: 1 block of 128 / 2 = 64 threads, its shared memory as written
    src = (
        b"#define call_kernel_s(k, n_blocks, n_threads, shared) \\\n"
        b"{ hipLaunchKernelGGL(k, n_blocks, n_threads, shared, 0); }\n"
        b"__global__ void reduce2() { }\n"
        b"void run() {\n"
        b"  const int n = 128;\n"
        b"  call_kernel_s(reduce2, 1, n / 2, (n / 2) * sizeof(int));\n"
        b"}\n"
    )
    (site,) = detect(src, "h.cu").launches
    assert (site.kernel, site.form, site.line) == ("reduce2", "hipLaunchKernelGGL", 6)
    assert site.grid_value == (1, 1, 1) and site.block_value == (64, 1, 1)
    assert site.shmem == "(n / 2) * sizeof(int)"


def test_a_cooperative_launch_is_a_launch():
    # cudaLaunchCooperativeKernel takes cudaLaunchKernel's arguments (a grid-wide sync
    # needs it); its name does not contain "LaunchKernel", so it was never looked at
    src = (
        b"__global__ void k(float *a, int n) { }\n"
        b"int main() {\n"
        b"  float *a; int n = 1 << 22; void *args[] = {&a, &n};\n"
        b"  cudaLaunchCooperativeKernel((void *)k, dim3(128), dim3(256), args, 0, 0);\n"
        b"}\n"
    )
    (site,) = detect(src, "coop.cu").launches
    assert (site.kernel, site.form, site.line) == ("k", "cudaLaunchKernel", 4)
    assert site.grid_value == (128, 1, 1) and site.block_value == (256, 1, 1)


def test_a_launch_through_a_launch_config_is_a_launch():
    # CUDA 12's cudaLaunchKernelEx(&config, k, args...) takes its dimensions from the
    # cudaLaunchConfig_t's fields, assigned before the call or designated in its
    # initializer; cudaLaunchKernelExC takes the arguments as an array (before: no launch
    # found, 1 M threads assumed)
    src = (
        b"__global__ void k(int n, float *a) { }\n"
        b"int main() {\n"
        b"  int n = 1 << 22; float *a;\n"
        b"  cudaLaunchConfig_t config = {0};\n"
        b"  config.gridDim = dim3(n / 256);\n"
        b"  config.blockDim = 256;\n"
        b"  config.stream = s;\n"
        b"  cudaLaunchKernelEx(&config, k, n, a);\n"
        b"  cudaLaunchConfig_t c2 = {.gridDim = dim3(n / 512), .blockDim = dim3(512)};\n"
        b"  void *args[] = {&n, &a};\n"
        b"  cudaLaunchKernelExC(&c2, (const void *)k, args);\n"
        b"}\n"
    )
    first, second = detect(src, "ex.cu").launches
    assert (first.kernel, first.form, first.line) == ("k", "cudaLaunchKernelEx", 8)
    assert (first.shmem, first.stream) == ("0", "s")  # (no dynamicSmemBytes given)
    assert first.grid_value == (16384, 1, 1) and first.block_value == (256, 1, 1)
    assert first.args == ("n", "a")
    assert (second.kernel, second.line) == ("k", 11)
    assert second.grid_value == (8192, 1, 1) and second.block_value == (512, 1, 1)
    assert second.args == ("n", "a")


def test_a_launch_api_called_with_template_arguments_is_a_launch():
    # cudaLaunchKernelEx<float *>(...) and cudaLaunchCooperativeKernel<void>(...): the
    # template arguments change nothing (before: neither call was found, a template
    # function's name is not the call's function)
    src = (
        b"__global__ void k(float *a) { }\n"
        b"int main() {\n"
        b"  float *a; void *args[] = {&a};\n"
        b"  cudaLaunchConfig_t config = {.gridDim = dim3(64), .blockDim = dim3(128)};\n"
        b"  cudaLaunchKernelEx<float *>(&config, k, a);\n"
        b"  cudaLaunchCooperativeKernel<void>((void *)k, dim3(32), dim3(256), args);\n"
        b"}\n"
    )
    first, second = detect(src, "t.cu").launches
    assert (first.kernel, first.form, first.line) == ("k", "cudaLaunchKernelEx", 5)
    assert first.grid_value == (64, 1, 1) and first.block_value == (128, 1, 1)
    assert (second.kernel, second.form, second.line) == ("k", "cudaLaunchKernel", 6)
    assert second.grid_value == (32, 1, 1) and second.block_value == (256, 1, 1)


def test_a_kernel_node_of_a_graph_is_a_launch():
    # cudaGraphAddKernelNode(&node, graph, deps, n, &params): the kernel, dimensions and
    # arguments are the cudaKernelNodeParams' fields set before the call; the generic
    # cudaGraphAddNode takes them from params.kernel, here set a component at a time
    # (before: neither kernel had a launch, 1 M threads assumed)
    src = (
        b"__global__ void reduce(float *in, float *out, int n) { }\n"
        b"__global__ void flag(char *p) { }\n"
        b"int main() {\n"
        b"  float *in, *out; int n = 1 << 20; char *p;\n"
        b"  void *kernelArgs[3] = {(void *)&in, (void *)&out, &n};\n"
        b"  cudaKernelNodeParams kp = {0};\n"
        b"  kp.func = (void *)reduce;\n"
        b"  kp.gridDim = dim3(n / 256, 1, 1);\n"
        b"  kp.blockDim = dim3(256, 1, 1);\n"
        b"  kp.kernelParams = (void **)kernelArgs;\n"
        b"  cudaGraphAddKernelNode(&node, graph, NULL, 0, &kp);\n"
        b"  cudaGraphNodeParams params = {cudaGraphNodeTypeKernel};\n"
        b"  params.kernel.func = (void *)flag;\n"
        b"  params.kernel.gridDim.x = params.kernel.gridDim.y = params.kernel.gridDim.z = 1;\n"
        b"  params.kernel.blockDim.x = 32;\n"
        b"  cudaGraphAddNode(&node, graph, NULL, NULL, 0, &params);\n"
        b"  cudaGraphAddMemsetNode(&node, graph, NULL, 0, &memsetParams);\n"
        b"}\n"
    )
    first, second = detect(src, "graph.cu").launches
    assert (first.kernel, first.form, first.line) == ("reduce", "graphKernelNode", 11)
    assert first.grid_value == (4096, 1, 1) and first.block_value == (256, 1, 1)
    assert first.args == ("in", "out", "n") and first.shmem == "0"
    assert (second.kernel, second.line) == ("flag", 16)
    assert second.grid_value == (1, 1, 1) and second.block_value == (32, 1, 1)


def test_an_include_holding_a_nul_byte_is_read_as_no_header(tmp_path):
    # `#include "defs\0.h"` (a damaged file): no header, the kernel still found (before:
    # ValueError from os.stat, and no analysis at all)
    src = b'#include "defs\x00.h"\n__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n'
    det = detect(src, str(tmp_path / "k.cu"))
    assert [k.name for k in det.kernels] == ["k"]


def test_broken_file_recovers_every_kernel():
    # and only kernels: a `__global__` in a comment or a string starts none (the host
    # function after such a comment was taken for a kernel)
    det = run("broken.cu")
    ks = by_name(det)
    assert set(ks) == {"before_error", "after_error", "attributed"}
    assert ks["attributed"].recovered and ks["attributed"].line == 15


def test_a_kernel_whose_braces_split_across_if_branches_is_recovered():
    # each #if branch opens `} else {` and one `}` after them closes it (ggml's mmf.cuh),
    # with `__launch_bounds__(...)` before `static __global__`: the kernel is parsed as the
    # preprocessor keeps one branch, its template header kept (before: no kernel found)
    det = run("split_braces.cu")
    ks = by_name(det)
    assert set(ks) == {"split_tile", "after_split"}
    tile = ks["split_tile"]
    assert tile.recovered and (tile.line, tile.end_line) == (7, 22)
    assert tile.template_params == ("typename T", "int rows", "int nwarps")
    assert tile.launch_bounds == ("32*nwarps", "1")


def test_openmp_regions_written_with_the_pragma_operator():
    # _Pragma("omp ..."), PRAGMA(omp ...) with `#define PRAGMA(x) _Pragma(#x)`, OMP_OFFLOAD
    # with `#define OMP_OFFLOAD _Pragma("omp ...")` and OMP_TARGET(...) with `#define
    # OMP_TARGET(x) PRAGMA(omp target x)` (the Parallel Research Kernels' style) are regions
    # as `#pragma omp` lines are, with their clauses; two stacked operators make one region
    # (before: no region found)
    det = run("omp_pragma_operators.cpp")
    regions = [(k.name, k.line, k.end_line, k.directive) for k in det.kernels]
    assert regions == [
        ("written_out", 10, 12, "target teams distribute parallel for"),
        ("function_like", 17, 19, "target teams distribute parallel for"),
        ("object_like", 24, 26, "target teams distribute parallel for"),
        ("stacked", 31, 34, "target | teams distribute parallel for"),
        ("chained", 39, 41, "target teams distribute parallel for simd"),
    ]
    for k in det.kernels:
        assert k.body.type == "for_statement"
    maps = [[(c.modifier, c.items) for c in k.clause("map")] for k in det.kernels]
    assert maps[0] == maps[1] == maps[3] == maps[4] == [("tofrom", ("y[0:n]",))]
    assert maps[2] == [("to", ("x[0:n]",)), ("from", ("y[0:n]",))]


def test_openmp_regions_and_clauses():
    det = run("omp_forms.cpp")
    regions = [(k.line, k.directive.split(" | ")[0]) for k in det.kernels]
    assert regions == [
        (9, "target teams distribute parallel for"),
        (12, "target teams distribute parallel for simd"),
        (16, "target parallel for"),
        (19, "target teams loop"),
        (22, "target simd"),
        (31, "target"),
        (44, "target teams distribute parallel for"),
        (55, "target teams distribute parallel for"),  # `#  pragma`: blanks after `#`
    ]
    first = det.kernels[0]
    assert first.name == "combined" and first.language == "omp"
    assert [(c.name, c.modifier, c.items) for c in first.clause("map")] == [
        ("map", "tofrom", ("a[0:n]",)),
        ("map", "to", ("b[0:n]",)),
    ]
    assert first.clause("num_teams")[0].items == ("64",)
    assert first.clause("thread_limit")[0].items == ("256",)
    assert first.callees == ("helper",)  # a declare target function
    assert det.functions["helper"].qualifiers == ("declare target",)
    assert det.kernels[1].clause("collapse")[0].items == ("2",)
    assert det.kernels[1].clause("is_device_ptr")[0].items == ("a",)
    red = det.kernels[2].clause("reduction")[0]
    assert (red.modifier, red.items) == ("+", ("s",))
    for k in det.kernels:
        assert k.body.type == "for_statement" or k.line == 31
    # split form: `target` then a nested `teams distribute parallel for`
    split = det.kernels[5]
    assert split.name == "split" and split.body.type == "compound_statement"
    assert split.directive == "target | teams distribute parallel for"
    # the #ifdef-wrapped pragma with a line continuation applies to the loop after #endif
    wrapped = det.kernels[6]
    assert wrapped.clause("map")[0].modifier == "tofrom"
    assert wrapped.end_line == 47


def test_openmp_data_movement_is_not_a_kernel():
    det = run("omp_forms.cpp")
    data = [(r.line, r.directive) for r in det.data_regions]
    assert data == [
        (28, "target data"),
        (30, "target enter data"),
        (36, "target update"),
        (37, "target exit data"),
        (57, "target update"),
    ]
    assert det.data_regions[0].clauses[0].modifier == "tofrom"


def test_openacc_regions():
    det = run("acc_forms.c")
    assert [(k.line, k.language, k.directive) for k in det.kernels] == [
        (6, "acc", "parallel loop"),
        (8, "acc", "kernels"),
    ]
    assert [c.name for c in det.kernels[0].clauses] == ["gang", "vector"]
    assert [(r.line, r.directive) for r in det.data_regions] == [(4, "data")]


def test_hip_language():
    src = b"#include <hip/hip_runtime.h>\n__global__ void k(int *a) { a[0] = 1; }\n"
    assert detect(src, "x.cpp").kernels[0].language == "hip"
    assert detect(src.split(b"\n", 1)[1], "x.hip").kernels[0].language == "hip"


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x01\x02\xff\xfe" * 100, b"\xff\xfe__global__ void k(int *a) { a[0] = 1; }"],
)
def test_bad_input_never_raises(data):
    det = detect(data, "bad.cu")
    assert isinstance(det.kernels, tuple)


def test_invalid_utf8_kernel_still_found():
    src = "__global__ void k(float *a) { a[0] = 1.0f; /* caf\xe9 */ }\n".encode("latin-1")
    assert [k.name for k in detect(src, "latin1.cu").kernels] == ["k"]


def test_circular_includes_terminate():
    det = run("cycle_a.h")
    assert {"from_a", "from_b"} <= set(det.functions)


def test_offload_region_whose_parse_breaks_on_statement_macros():
    det = run("macro_statements.cpp")
    assert [(k.line, k.language) for k in det.kernels] == [(8, "omp")]
    assert det.kernels[0].body.type == "for_statement"
    assert det.kernels[0].clause("thread_limit")[0].items == ("256",)


@pytest.mark.parametrize(
    "name", ["cuda_forms.cu", "omp_forms.cpp", "acc_forms.c", "broken.cu", "macro_statements.cpp"]
)
def test_detection_from_a_previous_version_equals_a_fresh_one(name):
    path = FIXTURES / name
    rng = random.Random(name)
    source = path.read_bytes()
    tree = parse(source)
    previous = detect(source, str(path), tree.copy())
    for _ in range(12):
        at = rng.randrange(len(source) + 1)
        source, tree = edited(source, tree, at, at, rng.choice(SNIPPETS).encode())
        again = detect(source, str(path), tree.copy(), previous)
        fresh = detect(source, str(path), tree.copy())
        assert again == fresh
        assert again.callers == fresh.callers
        previous = again


# -- headers read through a reader (an editor's unsaved buffers) ------------------------------

HOST = b"""#include "sizes.h"
__global__ void k(float *x) { x[threadIdx.x] = scale(x[threadIdx.x]); }
void run(float *x) { k<<<GRID, BLOCK>>>(x); }
"""


def _reader(buffers: dict[str, bytes]):  # type: ignore[no-untyped-def]
    """Open buffers first, then the disk (what the language server passes)."""
    return lambda p: buffers[p] if p in buffers else read_from_disk(p)


def _bump(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with a later modification time (a stat sees the change)."""
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_an_unsaved_header_buffer_wins_over_the_disk(tmp_path):
    header = tmp_path / "sizes.h"
    header.write_bytes(b"#define GRID 4\n#define BLOCK 128\n__device__ float scale(float v);\n")
    main = tmp_path / "main.cu"
    main.write_bytes(HOST)
    disk = detect(HOST, str(main))
    assert disk.launches[0].block_value == (128, 1, 1)
    edited = b"#define GRID 4\n#define BLOCK 256\n__device__ float scale(float v) { return v; }\n"
    buffer = detect(HOST, str(main), read=_reader({str(header): edited}))
    assert buffer.launches[0].block_value == (256, 1, 1)
    assert buffer.functions["scale"].node is not None
    # the disk's header is still what the disk says (no stale buffer result), and back
    assert detect(HOST, str(main)).launches[0].block_value == (128, 1, 1)
    assert detect(HOST, str(main), read=_reader({})).launches[0].block_value == (128, 1, 1)


def test_a_header_included_by_a_header_is_seen_when_edited(tmp_path):
    (tmp_path / "sizes.h").write_bytes(b'#include "inner.h"\n#define GRID 4\n')
    inner = tmp_path / "inner.h"
    inner.write_bytes(b"#define BLOCK 128\n")
    main = tmp_path / "main.cu"
    main.write_bytes(HOST)
    assert detect(HOST, str(main)).launches[0].block_value == (128, 1, 1)
    read = _reader({str(inner): b"#define BLOCK 512\n"})
    assert detect(HOST, str(main), read=read).launches[0].block_value == (512, 1, 1)
    # the outer header's bytes are the same, the inner one's buffer changed again
    read = _reader({str(inner): b"#define BLOCK 1024\n"})
    assert detect(HOST, str(main), read=read).launches[0].block_value == (1024, 1, 1)
    # saved to disk: the outer header's cached detection is no longer current either
    _bump(inner, b"#define BLOCK 64\n")
    assert detect(HOST, str(main)).launches[0].block_value == (64, 1, 1)


def test_detection_tells_the_headers_it_read(tmp_path):
    (tmp_path / "sizes.h").write_bytes(b'#include "inner.h"\n#define GRID 4\n')
    (tmp_path / "inner.h").write_bytes(b"#define BLOCK 128\n")
    main = tmp_path / "main.cu"
    _det, reads = detect_with_reads(HOST, str(main))
    assert [os.path.basename(s.path) for s in reads] == ["sizes.h", "inner.h"]
    _det, again = detect_with_reads(HOST, str(main))  # from the cache: the same reads
    assert again == reads
    read = _reader({str(tmp_path / "inner.h"): b"#define BLOCK 512\n"})
    _det, buffered = detect_with_reads(HOST, str(main), read=read)
    assert [os.path.basename(s.path) for s in buffered] == ["sizes.h", "inner.h"]
    assert buffered[1].version != reads[1].version
    assert detect_with_reads(b"__global__ void k() {}\n", str(main))[1] == ()


def test_launch_api_argument_arrays_and_cooperative_launches():
    path = Path(__file__).parent / "fixtures" / "launch" / "three_launches.cu"
    det = detect(path.read_bytes(), str(path))
    sites = det.launches
    assert [s.form for s in sites] == ["chevron", "cudaLaunchKernel", "cudaLaunchKernel"]
    # `void *args[] = {&n, ...}` / `{(void *)&n, ...}` read like the <<<>>> arguments
    assert all(s.args == ("n", "a", "x", "y", "reps") for s in sites)
    assert sites[2].grid == "n / 256" and sites[2].grid_value == (65536, 1, 1)


@pytest.mark.parametrize(
    ("source", "kernels", "marked"),
    [
        (b"#include <cuda.h>\nstatic inline float sq(float x) { return x * x; }\n", 0, False),
        (b"__global__ void k(float *x) { x[0] = 1; }\n", 1, True),
        (b"#define KERNEL __global__\nKERNEL void k(float *x) { x[0] = 1; }\n", 1, True),
        (b"void f(float *x, int n) {\n#pragma omp target teams loop\n"
         b"  for (int i = 0; i < n; i++) x[i] = 0;\n}\n", 1, True),
        (b'#include "kernels.cuh"\nint main() { return 0; }\n', 0, True),
    ],
)  # fmt: skip
def test_a_file_without_kernel_marks_has_no_kernel(
    source: bytes, kernels: int, marked: bool
) -> None:
    """``check`` skips the files ``may_hold_kernels`` rules out: never one detection finds a
    kernel in (a local include may hold one: not ruled out)."""
    assert len(detect(source, "/nowhere/f.cu").kernels) == kernels
    assert may_hold_kernels(source) == marked


def test_an_offload_loop_whose_statement_starts_with_a_pragma_spans_that_statement(
    tmp_path,
):  # type: ignore[no-untyped-def]
    # `distribute` then its loop, whose statement is `#pragma omp parallel for` and a loop:
    # tree-sitter ends the outer loop at the pragma line; the region runs to line 6
    src = (
        "void f(float *x, int n) {\n"
        "  #pragma omp target teams distribute map(tofrom: x[0:n])\n"
        "  for (int i0 = 0; i0 < n; i0 += 256)\n"
        "    #pragma omp parallel for\n"
        "    for (int i = i0; i < i0 + 256; i++)\n"
        "      x[i] *= 2.f;\n"
        "}\n"
    )
    (k,) = detected(tmp_path, src, "f.cpp").kernels
    assert (k.line, k.end_line) == (2, 6)
    assert k.directive == "target teams distribute | parallel for"


def test_a_kernel_s_callees_include_the_operators_it_applies():
    # the operator's body is part of what the kernel runs: editing it must re-estimate the
    # kernel (the reuse of unchanged results hashes its callees), as a called function does
    src = (
        b"struct V3 { float x, y, z; };\n"
        b"__device__ V3 operator+(V3 a, V3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }\n"
        b"__device__ V3 operator-(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }\n"
        b"__global__ void k(const V3 *a, V3 *b) { b[threadIdx.x] = a[0] + a[1]; }\n"
    )
    det = detect(src, "ops.cu")
    assert det.functions["operator+(V3,V3)"].name == "operator+"
    assert by_name(det)["k"].callees == ("operator+(V3,V3)",)


def test_an_offload_loop_written_as_a_loop_macro_spans_its_block(
    tmp_path,
):  # type: ignore[no-untyped-def]
    # KERNEL_LOOP(i, 2 * n) { ... } expands to a loop header: the parser sees a statement
    # without `;` then a block, which is the region's body: lines 4-8, not 4-5. (With
    # plain names for arguments, `KERNEL_LOOP(i, n) {`, tree-sitter reads a function
    # definition instead: not handled.)
    src = (
        "#define KERNEL_LOOP(i, n) for (int i = 0; i < (n); i++)\n"
        "void f(float *x, int n) {\n"
        "  if (n > 0) {\n"
        "    #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        "    KERNEL_LOOP(i, 2 * n) {\n"
        "      float v = x[i];\n"
        "      x[i] = v * v;\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    (k,) = detected(tmp_path, src, "f.cpp").kernels
    assert (k.line, k.end_line) == (4, 8)


LAUNCHING_HEADER = """#pragma once
constexpr unsigned int N_THREADS_LINEAR = 128;
template <typename T> constexpr unsigned int n_blocks_linear(T n) {
    return (unsigned int)((n + N_THREADS_LINEAR - 1) / N_THREADS_LINEAR);
}
template <typename K, typename T, typename... Types>
void linear_kernel(K kernel, unsigned int shmem, cudaStream_t stream, T n, Types... args) {
    kernel<<<n_blocks_linear(n), N_THREADS_LINEAR, shmem, stream>>>(n, args...);
}
struct launch_params { dim3 grid; dim3 block; };
template <typename K, typename... Args>
void launch(K kernel, const launch_params &p, Args &&...args) {
    kernel<<<p.grid, p.block, 0, 0>>>(std::forward<Args>(args)...);
}
"""

LAUNCHING_CALLER = """#include <proj/launch.h>
#include <cuda.h>
template <typename T>
__global__ void scale(const unsigned int n, const T *x, T *y, float a) {
    const unsigned int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) y[i] = a * x[i];
}
__global__ void copy(const float *x, float *y, int n) {
    const int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) y[i] = x[i];
}
void run(const float *x, float *y, unsigned int n, launch_params p) {
    linear_kernel(scale<float>, 0, nullptr, n * 2, x, y, 2.0f);
    launch(copy, p, x, y, (int)n);
}
"""


def test_a_kernel_launched_through_a_header_s_launching_function(tmp_path):
    # `linear_kernel(k, shmem, stream, n, args...)` (tiny-cuda-nn) and `launch(k, params,
    # args...)` (ggml's style) defined in a header of the project's include folder, included
    # as `<proj/launch.h>`: each call launches its kernel there, the function's launch written
    # in the call's arguments (before: no launch found, the header not even read)
    (tmp_path / "include" / "proj").mkdir(parents=True)
    (tmp_path / "include" / "proj" / "launch.h").write_text(LAUNCHING_HEADER)
    (tmp_path / "src").mkdir()
    path = tmp_path / "src" / "run.cu"
    path.write_text(LAUNCHING_CALLER)
    det = detect(path.read_bytes(), str(path))
    sites = {s.kernel: s for s in det.launches}
    assert set(sites) == {"scale", "copy"}
    scale, copy = sites["scale"], sites["copy"]
    assert (scale.line, scale.grid, scale.block) == (
        13,
        "n_blocks_linear((n * 2))",
        "N_THREADS_LINEAR",
    )
    assert scale.args == ("(n * 2)", "x", "y", "2.0f") and scale.shmem == "0"
    assert (copy.grid, copy.block, copy.args) == ("p.grid", "p.block", ("x", "y", "(int)n"))
    assert "linear_kernel" in det.functions  # the header was read
    # `<cuda.h>` names no project header: the compiler's, not searched for
    assert not any(f.file.endswith("cuda.h") for f in det.functions.values())
