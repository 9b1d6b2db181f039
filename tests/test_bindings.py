"""Host-side values (``bindings.py``): program arguments, hints, launches, allocations."""

from __future__ import annotations

from pathlib import Path

from roofline_lsp.detect.bindings import (
    argv_of,
    host_context,
    option_values,
    parse_assignments,
    parse_hints,
    substitute_host,
)
from roofline_lsp.detect.kernels import detect
from roofline_lsp.syntax.sources import read_from_disk


def ctx_for(tmp_path: Path, files: dict[str, str], kernel_file: str, **kw):  # type: ignore[no-untyped-def]
    for name, src in files.items():
        (tmp_path / name).write_text(src)
    path = tmp_path / kernel_file
    det = detect(path.read_bytes(), str(path))
    return host_context(det.kernels[0], det, **kw)


def test_hints_and_assignments() -> None:
    assert parse_hints(b"int x; // roofline: n=1<<20, m = 64\n") == {"n": "1<<20", "m": "64"}
    assert parse_hints(b"/* roofline: bs=256 */") == {"bs": "256"}
    assert parse_hints(b"// nothing here") == {}
    assert parse_assignments("n=1<<20 m=64") == {"n": "1<<20", "m": "64"}


def test_argv_substitution() -> None:
    argv = argv_of("4096 0.5 data.txt")
    assert substitute_host("atoi(argv[1]) * 2", argv, {}) == "4096 * 2"
    assert substitute_host("std::atof(argv[2])", argv, {}) == "0.5"
    assert substitute_host("atoi(argv[3])", argv, {}) == "atoi(argv[3])"  # not a number
    assert substitute_host("n * sizeof(double)", argv, {}) == "n * 8"
    assert substitute_host("sizeof(*p)", argv, {"p": "float *"}) == "4"


def test_command_line_options() -> None:
    assert option_values(["-n", "100", "--size=8", "-v", "--iters", "5"]) == {
        "n": "100",
        "size": "8",
        "iters": "5",
    }


def test_launch_values_and_allocations(tmp_path: Path) -> None:
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main(int argc, char **argv) {\n"
        "  int n = atoi(argv[1]);\n"
        "  int c;\n"
        '  while ((c = getopt(argc, argv, "r:")) != -1) switch (c) {\n'
        "    case 'r': reps = atoi(optarg); break;\n"
        "  }\n"
        "  float *d;\n"
        "  cudaMalloc((void **)&d, n * sizeof(float));\n"
        "  k<<<(n + 127) / 128, 128>>>(d, n * 2);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"a.cu": src}, "a.cu", args="1000 -r 7")
    assert ctx.block == (128, 1, 1) and ctx.grid == (8, 1, 1)
    assert ctx.get("n") == 2000  # the kernel parameter bound at the launch
    assert ctx.extents["x"] == 1000  # cudaMalloc of n floats, via the launch argument
    assert ctx.get("reps") == 7


def test_launch_in_another_file_and_caller_values(tmp_path: Path) -> None:
    kernel = "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
    host = (
        '#include "k.cuh"\n'
        "void run(float *d, int m) { k<<<m / 64, 64>>>(d, m); }\n"
        "int main() { float *d; run(d, 4096); }\n"
    )
    ctx = ctx_for(tmp_path, {"k.cuh": kernel, "main.cu": host}, "k.cuh")
    assert ctx.launch is not None and ctx.launch.file.endswith("main.cu")
    assert ctx.grid == (64, 1, 1)
    assert ctx.get("n") == 4096


def test_openmp_region_host_values_and_map_extents(tmp_path: Path) -> None:
    src = (
        "void f(float *a, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
        "  for (int i = 0; i < n; i++) a[i] *= 2.0f;\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  const int n = atoi(argv[1]);\n"
        "  float *a = (float *)malloc(n * sizeof(float));\n"
        "  f(a, n);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"o.cpp": src}, "o.cpp", args="512")
    assert ctx.get("n") == 512
    assert ctx.extents["a"] == 512
    assert ctx.types["a"].startswith("float")


def test_user_values_win(tmp_path: Path) -> None:
    src = (
        "// roofline: n=64\n"
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() { int n = 10; float *d; k<<<1, 32>>>(d, n); }\n"
    )
    ctx = ctx_for(tmp_path, {"h.cu": src}, "h.cu")
    assert ctx.get("n") == 64
    ctx2 = ctx_for(tmp_path, {"h.cu": src}, "h.cu", values={"n": 3.0})
    assert ctx2.get("n") == 3


def test_a_launch_and_a_caller_in_an_unsaved_sibling(tmp_path: Path) -> None:
    kernel = "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
    host = (
        '#include "k.cuh"\n'
        "void run(float *d, int m) { k<<<m / 64, 64>>>(d, m); }\n"
        "int main() { float *d; run(d, 4096); }\n"
    )
    (tmp_path / "k.cuh").write_text(kernel)
    main = tmp_path / "main.cu"
    main.write_text(host)
    path = tmp_path / "k.cuh"
    det = detect(path.read_bytes(), str(path))
    edited = host.replace("4096", "8192").encode()

    def read(p: str) -> bytes | None:
        return edited if p == str(main) else read_from_disk(p)

    assert host_context(det.kernels[0], det).grid == (64, 1, 1)
    ctx = host_context(det.kernels[0], det, read=read)
    assert ctx.grid == (128, 1, 1) and ctx.get("n") == 8192
    assert host_context(det.kernels[0], det).grid == (64, 1, 1)


def test_a_caller_in_an_unsaved_sibling_is_not_served_from_the_cache(tmp_path: Path) -> None:
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "void run(float *d, int m) { k<<<m / 64, 64>>>(d, m); }\n"
    )
    a = tmp_path / "a.cu"
    a.write_text(src)
    main = tmp_path / "main.cu"
    main.write_text("void run(float *d, int m);\nint main() { float *d; run(d, 4096); }\n")
    det = detect(a.read_bytes(), str(a))
    assert host_context(det.kernels[0], det).get("n") == 4096
    edited = b"void run(float *d, int m);\nint main() { float *d; run(d, 256); }\n"

    def read(p: str) -> bytes | None:
        return edited if p == str(main) else read_from_disk(p)

    # the same detection (the host scope cache's key): the sibling's new caller is seen
    ctx = host_context(det.kernels[0], det, read=read)
    assert ctx.get("n") == 256 and ctx.grid == (4, 1, 1)
    assert host_context(det.kernels[0], det).get("n") == 4096
