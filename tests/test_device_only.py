"""The device code of a translation unit alone (``compiler/device_only.py``)."""

from __future__ import annotations

from roofline_lsp.compiler.device_only import device_only, missing_header, undeclared_names

SOURCE = b"""\
#include "SDKBitMap.h"
#define N 256
const int width = 64;
__constant__ float coeff[4];
SDKBitMap image;
struct Pixel { float r, g, b; } background;
__device__ float twice(float x) { return 2 * x; }
constexpr int area(int w, int h) { return w * h; }
__global__ void k(float *x) { x[threadIdx.x] = twice(coeff[0]) * area(width, N); }
static void load(const char *path) { image.load(path); }
extern "C" void report(void) { printf("%d", image.width); }
template <typename T> T host_sum(const T *a, int n) { T s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
template <typename T> __global__ void scale(T *x) { x[threadIdx.x] *= 2; }
void run(float *d) { scale<float><<<1, 32>>>(d); }
void offload(float *a, int n) {
  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])
  for (int i = 0; i < n; i++) a[i] += 1;
}
void moves(float *a, int n) {
  #pragma omp target update from(a[0:n])
}
#pragma omp declare target
float helper(float v) { return v * v; }
#pragma omp end declare target
int main(int argc, char **argv) { load(argv[1]); k<<<1, 256>>>(0); return 0; }
"""  # noqa: E501


def _lines(text: bytes) -> list[str]:
    return [ln.strip() for ln in text.decode().splitlines()]


def test_host_code_is_blanked_and_every_line_keeps_its_number() -> None:
    out = device_only(SOURCE)
    assert out is not None and len(out) == len(SOURCE)
    before, after = _lines(SOURCE), _lines(out)
    assert len(before) == len(after)
    blanked = {i + 1 for i, (b, a) in enumerate(zip(before, after, strict=True)) if b and not a}
    # the host variable of a header's type, the host functions (with their `extern "C"` and
    # `template <...>`), the function that only moves data, and main
    assert blanked == {5, 10, 11, 12, 19, 20, 21, 25}
    # kept: the include (a stand-in answers it), constants and __constant__ data, a struct
    # (its variable too: declaring a type keeps the declaration), device and constexpr
    # functions, the kernels, the launch of a template kernel (it instantiates the kernel),
    # an offload region, a declare target block
    for n in (1, 2, 3, 4, 6, 7, 8, 9, 13, 14, 15, 16, 17, 18, 22, 23, 24):
        assert after[n - 1] == before[n - 1], n


def test_a_macro_that_expands_to_a_device_qualifier_marks_device_code() -> None:
    src = (
        b"#define HOST_DEVICE __host__ __device__\n"
        b"HOST_DEVICE inline float sq(float x) { return x * x; }\n"
        b"void host_only() { puts(0); }\n"
    )
    out = device_only(src)
    assert out is not None
    assert _lines(out) == ["#define HOST_DEVICE __host__ __device__", _lines(src)[1], ""]


def test_nothing_to_leave_out() -> None:
    assert device_only(b"__global__ void k(float *x) { x[0] = 1; }\n") is None


def test_the_header_a_failed_compile_could_not_find() -> None:
    nvcc = "main.cu:7:10: fatal error: SDKBitMap.h: No such file or directory\n"
    clang = "main.cpp:16:10: fatal error: '../common/shrUtils.h' file not found\n"
    assert missing_header(nvcc) == "SDKBitMap.h"
    assert missing_header(clang) == "../common/shrUtils.h"
    assert missing_header('k.cu(3): error: identifier "q" is undefined') is None


def test_a_type_the_grammar_misreads_as_a_function_is_kept() -> None:
    # ``struct __align__(8) T {...};``: tree-sitter cannot expand the macro and reads a
    # function definition with no function declarator; it is a type device code uses
    src = (
        b"struct __align__(8) SumMax { float sum, max; };\n"
        b"__device__ float total(SumMax s) { return s.sum; }\n"
        b"void host(void) { }\n"
    )
    out = device_only(src)
    assert out is not None
    assert _lines(out) == ["struct __align__(8) SumMax { float sum, max; };", _lines(src)[1], ""]


def test_host_functions_a_launcher_calls_can_stay_as_declarations() -> None:
    # run() is kept (it instantiates scale<float>) and calls check(): asked for, check keeps
    # its declaration (a `;` where its body began, the body blanked, lines kept), and a
    # template its `template <...>`
    src = (
        b"void check(int e, const char *file) {\n"
        b'  if (e) { printf("%s", file); exit(1); }\n'
        b"}\n"
        b"template <typename T> T host_sum(const T *a) { return a[0]; }\n"
        b"template <typename T> __global__ void scale(T *x) { x[threadIdx.x] *= 2; }\n"
        b"void run(float *d) { scale<float><<<1, 32>>>(d); check(0, __FILE__); }\n"
    )
    out = device_only(src, {"check", "host_sum"})
    assert out is not None and len(out) == len(src)
    assert _lines(out) == [
        "void check(int e, const char *file);",
        "",
        "",
        "template <typename T> T host_sum(const T *a);",
        *_lines(src)[4:],
    ]
    # without the names, all of it goes
    assert _lines(device_only(src) or b"")[:4] == ["", "", "", ""]


def test_undeclared_names_from_nvcc_and_clang() -> None:
    nvcc = 'x.cu(641): error: identifier "cuda_check" is undefined\n'
    clang = "x.cpp:9:5: error: use of undeclared identifier 'dispatch_launch'\n"
    assert undeclared_names(nvcc + clang) == {"cuda_check", "dispatch_launch"}
    assert undeclared_names('x.cu(3): error: expected a ";"') == set()
