"""Host-side values (``bindings.py``): program arguments, hints, launches, allocations."""

from __future__ import annotations

from pathlib import Path

import pytest
from counting_helpers import count, detected

from roofline_lsp.detect.bindings import (
    argv_of,
    host_context,
    option_values,
    pointer_base,
    sizeof,
    substitute_host,
)
from roofline_lsp.detect.kernels import detect
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.syntax.sources import read_from_disk


def ctx_for(tmp_path: Path, files: dict[str, str], kernel_file: str, **kw):  # type: ignore[no-untyped-def]
    for name, src in files.items():
        (tmp_path / name).write_text(src)
    path = tmp_path / kernel_file
    det = detect(path.read_bytes(), str(path))
    return host_context(det.kernels[0], det, **kw)


def test_argv_substitution() -> None:
    argv = argv_of("4096 0.5 data.txt")
    assert substitute_host("atoi(argv[1]) * 2", argv, {}) == "4096 * 2"
    assert substitute_host("std::atof(argv[2])", argv, {}) == "0.5"
    assert substitute_host("atoi(argv[3])", argv, {}) == "atoi(argv[3])"  # not a number
    assert substitute_host("n * sizeof(double)", argv, {}) == "n * 8"
    assert substitute_host("sizeof(*p)", argv, {"p": "float *"}) == "4"


def test_sizeof_a_file_scope_array_in_main_is_its_bytes(gpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # m = sizeof(ga) / sizeof(float) = 2^20 (before: the element's 4 bytes / 4 = 1, and a
    # region over m elements moved 8 bytes); 2 x 4 MiB copied
    src = (
        "#define NG (1 << 20)\n"
        "float ga[NG], gb[NG];\n"
        "int main(int argc, char **argv) {\n"
        "  int m = sizeof(ga) / sizeof(float);\n"
        "  #pragma omp target teams distribute parallel for map(to: ga) map(from: gb)\n"
        "  for (int i = 0; i < m; i++) gb[i] = 2 * ga[i];\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src, name="g.cpp")
    assert [(lp.var, lp.trips) for lp in a.counts.loops] == [("i", 2**20)]
    assert sum(b.footprint for b in a.memory.buffers) == pytest.approx(2 * 4 * 2**20)


@pytest.mark.parametrize(
    ("table", "loop_bound", "launch_arg"),
    [
        # an array sized by its initializer has as many elements as the list: 5 (before:
        # sizeof(w) was a pointer's 8 bytes, 8 / 4 = 2 trips), in the kernel's scope, at
        # file scope and in main, where the length is a launch argument
        ("", "(int)(sizeof(w) / sizeof(w[0]))", "0"),
        ("__constant__ float c[] = {1, 2, 3, 4, 5};\n", "(int)(sizeof(c) / sizeof(c[0]))", "0"),
        ("", "m", "sizeof(h) / sizeof(h[0])"),
    ],
)
def test_the_length_of_an_array_sized_by_its_initializer(  # type: ignore[no-untyped-def]
    gpu, tmp_path: Path, table: str, loop_bound: str, launch_arg: str
) -> None:
    src = (
        f"{table}"
        "__global__ void k(float *a, int m) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  const float w[] = {1, 2, 3, 4, 5};\n"
        "  float s = a[i];\n"
        f"  for (int j = 0; j < {loop_bound}; j++) s = s * w[j] + 1.0f;\n"
        "  a[i] = s;\n"
        "}\n"
        "int main() {\n"
        "  int h[] = {10, 20, 30, 40, 50};\n"
        "  float *a;\n"
        f"  k<<<1024, 256>>>(a, {launch_arg});\n"
        "}\n"
    )
    a = count(gpu, tmp_path, src)
    assert [(lp.var, lp.trips) for lp in a.counts.loops] == [("j", 5)]


def test_a_mode_chosen_by_comparing_an_argument_with_a_text(tmp_path: Path) -> None:
    # ``./sort r`` sorts 2^20 random numbers, ``./sort data.txt`` counts a file's: the strcmp
    # decides the branch (either argument order); no argument given: nothing decides it
    src = (
        "#include <cstring>\n"
        "__global__ void k(float *a, int n) {}\n"
        "int main(int argc, char **argv) {\n"
        "  int n = 0;\n"
        '  if (strcmp(argv[1], "r") == 0) n = 1 << 20;\n'
        '  else { FILE *f = fopen(argv[1], "r"); fscanf(f, "%d", &n); }\n'
        '  int reps = !strcmp("fast", argv[2]) ? 1 : 10;\n'
        "  float *a; k<<<n / 256, 256>>>(a, n * reps);\n"
        "}\n"
    )
    assert ctx_for(tmp_path, {"s.cu": src}, "s.cu", args="r fast").get("n") == 1 << 20
    assert ctx_for(tmp_path, {"s.cu": src}, "s.cu", args="r slow").get("n") == 10 << 20
    assert ctx_for(tmp_path, {"s.cu": src}, "s.cu", args="data.txt fast").get("n") is None
    assert substitute_host('strcmp(argv[1], "b")', ["a"], {}) == "-1"
    assert substitute_host('strcmp(argv[3], "b")', ["a"], {}) == 'strcmp(argv[3], "b")'


# SimpleMOC's init.cu: the input struct with its defaults (egroups 128, segments 1000)
_SET_DEFAULT_INPUT = (
    "Input *set_default_input(void) {\n"
    "  Input *I = (Input *)malloc(sizeof(Input));\n"
    "  I->egroups = 128;\n"
    "  I->segments = 1000;\n"
    "  return I;\n"
    "}\n"
)


def _egroups_segments(
    tmp_path: Path, files: dict[str, str], kernel_file: str, args: str | None
) -> tuple[float | None, float | None]:
    """The values of ``egroups`` and ``segments`` at the launch in ``kernel_file``."""
    ctx = ctx_for(tmp_path, files, kernel_file, args=args)
    return ctx.get("egroups"), ctx.get("segments")


def test_an_input_struct_made_by_one_function_and_parsed_into_by_another(tmp_path: Path) -> None:
    # SimpleMOC's shape: set_default_input() (init.cu) mallocs the struct, sets egroups =
    # 128 and returns the pointer; read_CLI(argc, argv, I) (io.cu) loops over the arguments
    # and sets I->egroups for "-e" (``if (++i < argc) input->egroups = atoi(argv[i])``).
    # No arguments: the loop runs no trip, 128; "-s 5000 -e 64": 64; "-s 5000": -e not
    # given, 128.
    files = {
        "hdr.h": "typedef struct { int egroups; int segments; } Input;\n",
        "init.cu": ('#include <stdlib.h>\n#include "hdr.h"\n' + _SET_DEFAULT_INPUT),
        "io.cu": (
            '#include <string.h>\n#include "hdr.h"\n'
            "void read_CLI(int argc, char *argv[], Input *input) {\n"
            "  for (int i = 1; i < argc; i++) {\n"
            "    char *arg = argv[i];\n"
            '    if (strcmp(arg, "-e") == 0) {\n'
            "      if (++i < argc) input->egroups = atoi(argv[i]);\n"
            '    } else if (strcmp(arg, "-s") == 0) {\n'
            "      if (++i < argc) input->segments = atoi(argv[i]);\n"
            "    }\n"
            "  }\n"
            "}\n"
        ),
        "main.cu": (
            '#include "hdr.h"\n'
            "Input *set_default_input(void);\n"
            "void read_CLI(int argc, char *argv[], Input *input);\n"
            "__global__ void att(float *f, int egroups, int segments) {}\n"
            "int main(int argc, char **argv) {\n"
            "  Input *I = set_default_input();\n"
            "  read_CLI(argc, argv, I);\n"
            "  int egroups = I->egroups;\n"
            "  float *f;\n"
            "  att<<<(I->segments + 127) / 128, 128>>>(f, egroups, I->segments);\n"
            "}\n"
        ),
    }

    def values(args: str | None) -> tuple[float | None, float | None]:
        return _egroups_segments(tmp_path, files, "main.cu", args)

    assert values(None) == (128, 1000)
    assert values("-s 5000 -e 64") == (64, 5000)
    assert values("-s 5000") == (128, 5000)


def test_options_parsed_inside_preprocessor_conditionals(tmp_path: Path) -> None:
    # SimpleMOC's read_CLI: ``if (++i < argc)`` followed by ``#ifdef VERIFY`` / ``n = 1`` /
    # ``#else`` / ``n = atoi(argv[i])`` / ``#endif``. The parser gives the if an empty body
    # and the conditional as the next statement; read as the compiler sees it (directive
    # lines gone), "-s 5000" sets segments to 5000. VERIFY is defined nowhere in the files:
    # a -D flag may set it, so both branches stay as written. FAST is defined in the file:
    # the #else branch (egroups = 7) is dropped and the default 128 holds without "-e"
    # (whose test, in the else of the "-s" test, is not under "-s").
    files = {
        "io.cu": (
            "#include <stdlib.h>\n#include <string.h>\n#define FAST\n"
            "typedef struct { int egroups; int segments; } Input;\n"
            "void read_CLI(int argc, char *argv[], Input *input) {\n"
            "#ifndef FAST\n"
            "  input->egroups = 7;\n"
            "#endif\n"
            "  for (int i = 1; i < argc; i++) {\n"
            "    char *arg = argv[i];\n"
            '    if (strcmp(arg, "-s") == 0) {\n'
            "      if (++i < argc)\n"
            "#ifdef VERIFY\n"
            "        input->segments = 1;\n"
            "#else\n"
            "        input->segments = atoi(argv[i]);\n"
            "#endif\n"
            '    } else if (strcmp(arg, "-e") == 0) {\n'
            "      if (++i < argc) input->egroups = atoi(argv[i]);\n"
            "    }\n"
            "  }\n"
            "}\n"
            "__global__ void att(float *f, int egroups, int segments) {}\n"
            + _SET_DEFAULT_INPUT
            + "int main(int argc, char **argv) {\n"
            "  Input *I = set_default_input();\n"
            "  read_CLI(argc, argv, I);\n"
            "  float *f;\n"
            "  att<<<(I->segments + 127) / 128, 128>>>(f, I->egroups, I->segments);\n"
            "}\n"
        ),
    }

    def values(args: str | None) -> tuple[float | None, float | None]:
        return _egroups_segments(tmp_path, files, "io.cu", args)

    assert values("-s 5000 -e 64") == (64, 5000)
    assert values("-s 5000") == (128, 5000)
    # FAST defined nowhere: the build may leave it undefined, so ``egroups = 7`` is kept
    files["io.cu"] = files["io.cu"].replace("#define FAST\n", "")
    assert values("-s 5000") == (7, 5000)


def test_an_extern_global_another_file_defines(tmp_path: Path) -> None:
    # dslash's layout: lattice.h declares ``extern size_t even_sites;``, main.cpp defines
    # ``size_t sites = LDIM*LDIM*LDIM*LDIM; size_t even_sites = sites / 2;`` with LDIM 8
    # from the header, and kernels.cpp's region runs over even_sites: 8^4 / 2 = 2048. A name
    # the file declares extern that no file defines with a value stays unknown.
    files = {
        "lattice.h": (
            "#include <stddef.h>\n#define LDIM 8\nextern size_t even_sites;\nextern int rank;\n"
        ),
        "main.cpp": (
            '#include "lattice.h"\n'
            "size_t sites = LDIM*LDIM*LDIM*LDIM;\nsize_t even_sites = sites / 2;\nint rank;\n"
            "void run(double *a);\nint main() { double a[4096]; run(a); }\n"
        ),
        "kernels.cpp": (
            '#include "lattice.h"\n'
            "void run(double *a) {\n"
            "  size_t n = even_sites;\n"
            "  #pragma omp target teams distribute parallel for map(tofrom: a[0:n])\n"
            "  for (size_t s = 0; s < n; s++) a[s] += rank;\n"
            "}\n"
        ),
    }
    ctx = ctx_for(tmp_path, files, "kernels.cpp")
    assert ctx.get("n") == 2048
    assert ctx.get("rank") is None


def test_a_region_in_a_header_included_inside_a_function(tmp_path: Path) -> None:
    # hybridsort's OpenMP port: kernel_hist.h is a fragment (a target region) that
    # sort.c includes inside bucketSort(float *d, int listsize); main calls
    # bucketSort(data, numElements) with numElements = atoi(argv[1]) or SIZE. The region's
    # listsize is the including function's parameter where it includes the header, and
    # the includer's constants (BINS) are seen.
    files = {
        "kernel_hist.h": (
            "#pragma omp target teams distribute parallel for\n"
            "for (int pos = 0; pos < listsize; pos++) hist[(int)d[pos] % BINS]++;\n"
        ),
        "sort.c": (
            "#include <stdlib.h>\n"
            "#define SIZE (1 << 20)\n"
            "#define BINS 1024\n"
            "void bucketSort(float *d, int listsize) {\n"
            "  int hist[BINS];\n"
            '  #include "kernel_hist.h"\n'
            "}\n"
            "int main(int argc, char **argv) {\n"
            "  int numElements = argc > 1 ? atoi(argv[1]) : SIZE;\n"
            "  float *data = (float *)malloc(numElements * sizeof(float));\n"
            "  bucketSort(data, numElements);\n"
            "}\n"
        ),
    }
    assert ctx_for(tmp_path, files, "kernel_hist.h").get("listsize") == 1 << 20
    assert ctx_for(tmp_path, files, "kernel_hist.h", args="5000").get("listsize") == 5000
    assert ctx_for(tmp_path, files, "kernel_hist.h").get("BINS") == 1024


def test_a_loop_over_the_arguments_runs_no_trip_without_them(tmp_path: Path) -> None:
    # for (i = 1; i < argc; i++) parse(argv[i], &n): run without arguments the loop runs no
    # trip, so neither the call nor the read leave n unknown: the default 4096
    src = (
        "#include <cstdlib>\n"
        "#include <cstdio>\n"
        "__global__ void k(float *a, int n) {}\n"
        "void parse(const char *s, int *n) { *n = atoi(s); }\n"
        "int main(int argc, char **argv) {\n"
        "  int n = 4096, m = 8;\n"
        '  for (int i = 1; i < argc; i++) { parse(argv[i], &n); sscanf(argv[i], "%d", &m); }\n'
        "  float *a; k<<<n / 256, 256>>>(a, n * m);\n"
        "}\n"
    )
    assert ctx_for(tmp_path, {"p.cu": src}, "p.cu").get("n") == 4096 * 8


def test_a_template_length_deduced_from_the_arrays_and_types_a_call_passes(
    tmp_path: Path,
) -> None:
    # divergence's shape: the kernel is launched with np, a template parameter of
    # divergence_gpu (in a header); compare() calls it deducing np from element<np, real>,
    # main calls compare() deducing np from ``double v[NP][NP][2]`` with ``constexpr int NP
    # = 4``: np = 4, through both calls. Called with 4 x 4 and with 8 x 8 arrays, the
    # launch has no single np: unknown.
    header = (
        "template <int np, typename real> struct element { real m[np][np]; };\n"
        "template <typename real> __global__ void k(real *a, int np) {}\n"
        "template <int np, typename real>\n"
        "void divergence_gpu(const real v[np][np][2], const element<np, real> &e) {\n"
        "  real *d;\n"
        "  k<<<(np + 15) / 16, 16>>>(d, np);\n"
        "}\n"
    )
    main = (
        '#include "div.h"\n'
        "template <int np, typename real>\n"
        "void compare(const real v[np][np][2], const element<np, real> &e) {\n"
        "  for (int i = 0; i < 10; i++) divergence_gpu(v, e);\n"
        "}\n"
        "int main() {\n"
        "  constexpr const int NP = 4;\n"
        "  double v[NP][NP][2];\n"
        "  element<NP, double> e;\n"
        "  compare(v, e);\n"
        "}\n"
    )
    assert ctx_for(tmp_path, {"div.h": header, "main.cu": main}, "div.h").get("np") == 4
    two = (
        '#include "div.h"\n'
        "int main() {\n"
        "  double v[4][4][2], w[8][8][2];\n"
        "  element<4, double> e;\n"
        "  element<8, double> f;\n"
        "  divergence_gpu(v, e);\n"
        "  divergence_gpu(w, f);\n"
        "}\n"
    )
    (tmp_path / "two").mkdir()
    assert ctx_for(tmp_path / "two", {"div.h": header, "main.cu": two}, "div.h").get("np") is None


def test_command_line_options() -> None:
    assert option_values(["-n", "100", "--size=8", "-v", "--iters", "5"]) == {
        "n": "100",
        "size": "8",
        "iters": "5",
    }


def test_an_option_getter_with_a_default() -> None:
    # the command line's value of the option, else the call's last argument
    argv = argv_of("--niterations 100 --ne 40")
    call = 'Arguments_consume_int_or_default(&args, "--ne", 30)'
    assert substitute_host(call, argv, {}) == "40"
    assert substitute_host('get_int(&args, "--na", 33)', argv, {}) == "33"
    assert substitute_host('cli.get<int>("-n", 1024u) * 2', argv, {}) == "1024 * 2"
    # not an option's name and a number: left alone
    assert substitute_host('get(&args, "--na", m)', argv, {}) == 'get(&args, "--na", m)'
    assert substitute_host('printf("-%d", 3)', argv, {}) == 'printf("-%d", 3)'


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


def test_a_message_naming_the_wrapper_is_not_its_call(tmp_path: Path) -> None:
    # the wrapper's caller is in main.cpp, after a printf whose text names it: the call is
    # run(d, 3 * N) with N = 1 << 20, so n = 3,145,728 (the printf passes no n)
    kernel = (
        "__global__ void k(float *x, unsigned n) {\n"
        "  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) x[i] = 0;\n"
        "}\n"
        'extern "C" void run(float *d, unsigned n) { k<<<1, 128>>>(d, n); }\n'
    )
    host = (
        '#include <cstdio>\nextern "C" void run(float *d, unsigned n);\n'
        "const int N = 1 << 20;\n"
        "int main() {\n"
        "  float *d;\n"
        '  printf("Testing run()...\\n");\n'
        "  run(d, 3 * N);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"k.cu": kernel, "main.cpp": host}, "k.cu")
    assert ctx.get("n") == 3 * (1 << 20)


def test_a_qualified_call_of_another_scope_or_from_device_code_is_not_its_call(
    tmp_path: Path,
) -> None:
    # the wrapper reduce(size, threads, blocks) shares its name with cooperative groups'
    # cg::reduce, which a device function of its own file calls, and a __device__ helper
    # calls a reduce(...) of its own: neither call runs the host wrapper. Its caller is in
    # main.cpp: reduce(1 << 24, 256, 64), so the launch is 64 x 256 and size 16,777,216
    kernel = (
        "namespace cg { template <class T> __device__ T reduce(T v) { return v; } }\n"
        "__device__ float reduce(float v, int lane);\n"
        "__device__ float sum(float v) { return cg::reduce(v) + reduce(v, 0); }\n"
        "__global__ void k(float *x, int size) {\n"
        "  for (int i = threadIdx.x; i < size; i += blockDim.x) x[i] = sum(x[i]);\n"
        "}\n"
        "void reduce(int size, int threads, int blocks, float *d) {\n"
        "  k<<<blocks, threads>>>(d, size);\n"
        "}\n"
    )
    host = (
        "void reduce(int size, int threads, int blocks, float *d);\n"
        "int main() {\n"
        "  float *d;\n"
        "  reduce(1 << 24, 256, 64, d);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"k.cu": kernel, "main.cpp": host}, "k.cu")
    assert ctx.grid == (64, 1, 1) and ctx.block == (256, 1, 1)
    assert ctx.get("size") == 1 << 24


def test_a_c_linkage_constant_of_the_kernels_file_sizes_its_callers_loop(tmp_path: Path) -> None:
    # scan.cu defines MIN_SIZE (extern "C": C linkage) and the wrapper; main.cpp declares it
    # extern and calls the wrapper from a loop starting at it: len = 4 on the first call,
    # batch = N / 4 = 1,703,936 and the grid 1,703,936 x 4 / 1024 = 6,656 blocks
    kernel = (
        'extern "C" const unsigned MIN_SIZE = 4;\n'
        "__global__ void k(unsigned *d, unsigned len) { d[threadIdx.x] += len; }\n"
        'extern "C" void run(unsigned *d, unsigned batch, unsigned len) {\n'
        "  k<<<(batch * len) / (4 * 256), 256>>>(d, len);\n"
        "}\n"
    )
    host = (
        'extern "C" const unsigned MIN_SIZE;\n'
        'extern "C" void run(unsigned *d, unsigned batch, unsigned len);\n'
        "int main() {\n"
        "  unsigned *d;\n"
        "  const unsigned N = 13 * 1048576 / 2;\n"
        "  for (unsigned len = MIN_SIZE; len <= 1024; len <<= 1) run(d, N / len, len);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"scan.cu": kernel, "main.cpp": host}, "scan.cu")
    assert ctx.get("MIN_SIZE") == 4
    assert ctx.get("len") == 4 and ctx.get("batch") == 1703936
    assert ctx.grid == (6656, 1, 1)


def test_an_option_read_in_the_loop_over_the_words_sets_what_follows_it(tmp_path: Path) -> None:
    # run with "--warm-up --grid 256": the --grid branch reads 256 into nx, and make(nx)
    # builds the grid from it right after the loop; --tsize is not given, so its branch (an
    # else-if of the chain) leaves tsx at 10, and the --warm-up branch further down the chain
    # runs for its own word: warm = 1. Launch: 256 / 8 = 32 blocks of 8, n = 256 * 256
    src = (
        "#include <cstring>\n#include <cstdlib>\n"
        "struct G { long nx, ny; };\n"
        "struct G make(long n) { struct G g; g.nx = n; g.ny = n; return g; }\n"
        "__global__ void k(float *a, long n, long t, int w) { a[threadIdx.x] = n + t + w; }\n"
        "int main(int argc, char *argv[]) {\n"
        "  long nx = 100, tsx = 10;\n"
        "  int warm = 0;\n"
        "  for (int i = 1; i < argc; ++i) {\n"
        '    if (strcmp(argv[i], "--grid") == 0) {\n'
        "      ++i;\n"
        "      nx = strtoll(argv[i], NULL, 10);\n"
        '    } else if (strcmp(argv[i], "--tsize") == 0) {\n'
        "      ++i;\n"
        "      tsx = strtoll(argv[i], NULL, 10);\n"
        '    } else if (strcmp(argv[i], "--warm-up") == 0) {\n'
        "      warm = 1;\n"
        "    }\n"
        "  }\n"
        "  struct G g = make(nx);\n"
        "  float *a;\n"
        "  k<<<g.nx / 8, 8>>>(a, g.nx * g.ny, tsx, warm);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": src}, "main.cu", args="--warm-up --grid 256")
    assert ctx.grid == (32, 1, 1)
    assert ctx.get("n") == 65536 and ctx.get("t") == 10 and ctx.get("w") == 1
    # without the options, the defaults: 12 blocks, n = 10,000, no warm-up
    ctx = ctx_for(tmp_path, {"main.cu": src}, "main.cu", args="--tsize 4")
    assert ctx.grid == (12, 1, 1) and ctx.get("n") == 10000
    assert ctx.get("t") == 4 and ctx.get("w") == 0


def test_a_profiled_launch_is_the_site_its_host_values_size_as_measured(tmp_path: Path) -> None:
    # faces(u, 256, 27) launches the kernel once per face: front over z in [0, 27), top over
    # [27, 229); a profile of grid 26 x 4 x 32 with 8 x 8 x 8 blocks is the top face's launch
    # ((229 - 27 + 7) / 8 = 26, (27 + 7) / 8 = 4, 256 / 8 = 32), so z3 = 27 and z4 = 229
    src = (
        "__global__ void face(float *u, long z3, long z4) { u[z3 + threadIdx.x] = z4; }\n"
        "void faces(float *u, long n, long d) {\n"
        "  dim3 threads(8, 8, 8);\n"
        "  dim3 front((d + 7) / 8, (n + 7) / 8, (n + 7) / 8);\n"
        "  face<<<front, threads>>>(u, 0, d);\n"
        "  dim3 top((n - 2 * d + 7) / 8, (d + 7) / 8, (n + 7) / 8);\n"
        "  face<<<top, threads>>>(u, d, n - d);\n"
        "}\n"
        "int main() {\n"
        "  float *u;\n"
        "  faces(u, 256, 27);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": src}, "main.cu", block=(8, 8, 8), grid=(26, 4, 32))
    assert ctx.launch is not None and ctx.launch.line == 7
    assert ctx.get("z3") == 27 and ctx.get("z4") == 229
    ctx = ctx_for(tmp_path, {"main.cu": src}, "main.cu", block=(8, 8, 8), grid=(4, 32, 32))
    assert ctx.launch is not None and ctx.launch.line == 5
    assert ctx.get("z3") == 0 and ctx.get("z4") == 27


def test_a_vector_types_constructor_gives_its_components(tmp_path: Path) -> None:
    # dim = make_int2(10000, 100), dir = dim - 1 per component, the ray as long as the
    # longer one: 9,999 elements, ceil(9999 / 256) = 40 blocks; the kernel's n is dir.y = 99
    src = (
        "#include <cmath>\n"
        "typedef unsigned int uint;\n"
        "__global__ void k(float *a, int n) { a[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  int2 dim = make_int2(10000, 100);\n"
        "  int2 dir;\n"
        "  dir = make_int2(dim.x - 1, dim.y - 1);\n"
        "  int length = max(abs(dir.x), abs(dir.y));\n"
        "  dim3 block(256);\n"
        "  dim3 grid((uint)ceil(length / (double)block.x));\n"
        "  float *a;\n"
        "  k<<<grid, block>>>(a, dir.y);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": src}, "main.cu")
    assert ctx.grid == (40, 1, 1) and ctx.get("n") == 99


def test_the_call_taken_is_one_the_default_run_makes(tmp_path: Path) -> None:
    # benchmark's first call is in shmoo (n = 1 on its first trip), which runTest calls only
    # when the command line has "shmoo"; run without arguments, the flag is false and the
    # call in the else branch runs: n = size = 1 << 24
    host = (
        "#include <cstring>\n"
        "bool checkCmdLineFlag(int argc, const char **argv, const char *name) {\n"
        "  for (int i = 1; i < argc; i++) if (!strcmp(argv[i], name)) return true;\n"
        "  return false;\n"
        "}\n"
        "__global__ void k(float *x, int n) {\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = 0;\n"
        "}\n"
        "void wrapper(float *d, int n) { k<<<1, 256>>>(d, n); }\n"
        "void benchmark(float *d, int n) { wrapper(d, n); }\n"
        "void shmoo(float *d, int minN, int maxN) {\n"
        "  for (int i = minN; i <= maxN; i *= 2) benchmark(d, i);\n"
        "}\n"
        "bool runTest(int argc, char **argv) {\n"
        "  float *d;\n"
        "  int size = 1 << 24;\n"
        '  bool runShmoo = checkCmdLineFlag(argc, (const char **)argv, "shmoo");\n'
        "  if (runShmoo) {\n"
        "    shmoo(d, 1, 1 << 25);\n"
        "  } else {\n"
        "    benchmark(d, size);\n"
        "  }\n"
        "  return true;\n"
        "}\n"
        "int main(int argc, char **argv) { runTest(argc, argv); }\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu")
    assert ctx.get("n") == 1 << 24
    # given "shmoo", the first call it makes: n = 1
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu", args="shmoo")
    assert ctx.get("n") == 1


def test_a_field_each_element_gets_in_a_loop_over_the_devices(tmp_path: Path) -> None:
    # the work split over the GPUs the program finds, one plan each: the verdict's GPU is
    # the one found (GPU_N = 1), so plan[i].n = DATA_N / 1 = 2^25 for every element; the
    # loop adding the remainder (DATA_N % 1 = 0 trips) changes nothing, nor does the loop
    # giving each element its own slice of a buffer (another field)
    host = (
        "const int DATA_N = 1 << 25;\n"
        "typedef struct { int n; float *d; } Plan;\n"
        "__global__ void k(float *x, int n) {\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = 0;\n"
        "}\n"
        "int main() {\n"
        "  Plan plan[8]; int GPU_N, i;\n"
        "  cudaGetDeviceCount(&GPU_N);\n"
        "  for (i = 0; i < GPU_N; i++) plan[i].n = DATA_N / GPU_N;\n"
        "  for (i = 0; i < DATA_N % GPU_N; i++) plan[i].n++;\n"
        "  float *base; for (i = 0; i < GPU_N; i++) plan[i].d = base + i * 64;\n"
        "  for (i = 0; i < GPU_N; i++) k<<<32, 256>>>(plan[i].d, plan[i].n);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu")
    assert ctx.get("n") == 1 << 25
    # a field set from the element's own index is not every element's: unknown
    varying = host.replace("plan[i].n = DATA_N / GPU_N;", "plan[i].n = i * 1024;")
    assert ctx_for(tmp_path, {"main.cu": varying}, "main.cu").get("n") is None


def test_host_memory_the_kernel_reads_in_place(tmp_path: Path) -> None:
    # zero-copy: a is pinned and mapped (cudaHostAlloc), d_a its device pointer; b is
    # registered host memory passed as is; c is pinned but copied to the device buffer d_c
    # first, and the kernel's parameter named c gets d_c: only x and y are mapped
    host = (
        "__global__ void k(float *x, float *y, float *c, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) c[i] = x[i] + y[i];\n"
        "}\n"
        "int main() {\n"
        "  int n = 1 << 20; size_t bytes = n * sizeof(float);\n"
        "  float *a, *b = (float *)malloc(bytes), *c, *d_a, *d_c;\n"
        "  cudaHostAlloc((void **)&a, bytes, cudaHostAllocMapped);\n"
        "  cudaHostRegister(b, bytes, cudaHostRegisterMapped);\n"
        "  cudaMallocHost((void **)&c, bytes);\n"
        "  cudaMalloc((void **)&d_c, bytes);\n"
        "  cudaHostGetDevicePointer((void **)&d_a, (void *)a, 0);\n"
        "  k<<<n / 256, 256>>>(d_a, b, d_c, n);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu")
    assert ctx.mapped == {"x", "y"}
    assert ctx.extents["x"] == ctx.extents["y"] == 1 << 20  # a's size, b's registered size


def test_a_wrapper_s_default_argument_reaches_the_launch(tmp_path: Path) -> None:
    # run(d) leaves m to its default 4096: grid 4096 / 64 = 64, n = 4096
    host = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "void run(float *d, int m = 4096) { k<<<m / 64, 64>>>(d, m); }\n"
        "int main() { float *d; run(d); }\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu")
    assert ctx.grid == (64, 1, 1)
    assert ctx.get("n") == 4096


def test_a_program_argument_passed_straight_to_a_wrapper(tmp_path: Path) -> None:
    # run(d, atoi(argv[1])) with the program run as `prog 2048`: m = 2048, grid 2048 / 64
    host = (
        "#include <cstdlib>\n"
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "template <typename T> void run(T *d, int m) { k<<<m / 64, 64>>>(d, m); }\n"
        "int main(int argc, char **argv) { float *d; run(d, atoi(argv[1])); }\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu", args="2048")
    assert ctx.get("n") == 2048
    assert ctx.grid == (32, 1, 1)


def test_a_kernel_s_default_argument(tmp_path: Path) -> None:
    # k<<<...>>>(d) leaves steps to its default 24
    host = (
        "__global__ void k(float *x, int steps = 24) {\n"
        "  for (int s = 0; s < steps; s++) x[threadIdx.x] += s;\n"
        "}\n"
        "int main() { float *d; k<<<16, 64>>>(d); }\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu")
    assert ctx.get("steps") == 24


def test_a_helper_s_default_argument_sets_its_caller_s_variable(tmp_path: Path) -> None:
    # configure(n) leaves scale to its default 8: n = 8 * 512 = 4096
    host = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "void configure(int &n, int scale = 8) { n = scale * 512; }\n"
        "int main() { float *d; int n = 0; configure(n); k<<<n / 64, 64>>>(d, n); }\n"
    )
    ctx = ctx_for(tmp_path, {"main.cu": host}, "main.cu")
    assert ctx.get("n") == 4096


def test_a_launch_in_another_file_sees_that_file_s_constants(tmp_path: Path) -> None:
    # BLOCKS is a constant of the launching file only: grid 4096 / 128 = 32
    kernel = "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
    host = (
        '#include "k.cuh"\n'
        "const int N = 4096;\n"
        "const int THREADS = 128;\n"
        "int main() { float *d; k<<<N / THREADS, THREADS>>>(d); }\n"
    )
    ctx = ctx_for(tmp_path, {"k.cuh": kernel, "main.cu": host}, "k.cuh")
    assert ctx.grid == (32, 1, 1) and ctx.block == (128, 1, 1)


def test_elements_of_a_local_array_of_sizes(tmp_path: Path) -> None:
    # the loop's first trip: dim = dims[0] = 2; sizes[1] set to 4096 after its initializer
    # (grid 4096 / 256 = 16); other[] written at an index not known: its elements unknown
    src = (
        "__global__ void k(float *d, int n, int dim, int extra) {}\n"
        "int main() {\n"
        "  const int dims[] = {2, 5, 10};\n"
        "  int sizes[2] = {1024, 2048};\n"
        "  sizes[1] = 4096;\n"
        "  int other[3] = {1, 2, 3};\n"
        "  for (int q = 0; q < 3; q++) other[q] = q * 7;\n"
        "  for (int d = 0; d < 3; d++) {\n"
        "    float *p;\n"
        "    k<<<sizes[1] / 256, 256>>>(p, sizes[1], dims[d], other[0]);\n"
        "  }\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"a.cu": src}, "a.cu")
    assert ctx.grid == (16, 1, 1)
    assert (ctx.get("n"), ctx.get("dim"), ctx.get("extra")) == (4096, 2, None)


def test_an_allocation_of_records_holds_records(tmp_path: Path) -> None:
    """``cudaMalloc(&d_rv, n * sizeof(FOUR_VECTOR))`` of 16-byte records holds n = 1000 of
    them, not the 4000 words of its 16000 bytes: the extent caps the footprint of ``rv[i]``
    reads, which came out 4x the array."""
    src = (
        "typedef struct { float v, x, y, z; } FOUR_VECTOR;\n"
        "__global__ void k(FOUR_VECTOR *rv) { rv[threadIdx.x].v = 0.f; }\n"
        "int main() {\n"
        "  int n = 1000;\n"
        "  long mem = n * sizeof(FOUR_VECTOR);\n"
        "  FOUR_VECTOR *d_rv;\n"
        "  cudaMalloc((void **)&d_rv, mem);\n"
        "  k<<<1, 1000>>>(d_rv);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"a.cu": src}, "a.cu", struct_sizes={"FOUR_VECTOR": 16})
    assert ctx.extents["rv"] == 1000


def test_sizeof_through_a_pointer_is_its_elements(tmp_path: Path) -> None:
    """``sizeof(*rv)`` of ``FOUR_VECTOR *rv`` is the 16-byte record (it counted a word), and
    an allocation of n row pointers holds n 8-byte elements (it counted 2n words)."""
    types = {"rv": "FOUR_VECTOR *", "rows": "float **"}
    assert sizeof("*rv", types, {"FOUR_VECTOR": 16}) == 16
    assert sizeof("rv[0]", types, {"FOUR_VECTOR": 16}) == 16
    assert sizeof("*rows", types) == 8
    src = (
        "__global__ void k(float **r) { r[threadIdx.x][0] = 0.f; }\n"
        "int main() {\n"
        "  int n = 1000;\n"
        "  float **rows;\n"
        "  cudaMalloc((void **)&rows, n * sizeof(float *));\n"
        "  k<<<1, 1000>>>(rows);\n"
        "}\n"
    )
    assert ctx_for(tmp_path, {"a.cu": src}, "a.cu").extents["r"] == 1000


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


def test_a_buffer_main_allocates_keeps_its_size_in_the_callee(tmp_path: Path) -> None:
    # the region's own map clause does not size d (fwt's fwtBatchGPU: main maps it in a
    # target data region around the call): main's allocation does, DATA_SIZE / sizeof(float)
    # = (1 << 21) x 4 / 4 = 2^21 elements, through a constant sized with sizeof
    kernels = (
        "void transform(float *d, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n / 4; i++) { d[i] = d[i + n / 4] + d[i + n / 2]; }\n"
        "}\n"
    )
    main = (
        "const int dataN = 1 << 21;\n"
        "const int DATA_SIZE = dataN * sizeof(float);\n"
        "void transform(float *d, int n);\n"
        "int main() {\n"
        "  float *d = (float *)malloc(DATA_SIZE);\n"
        "  #pragma omp target data map(tofrom: d[0:dataN])\n"
        "  { transform(d, dataN); }\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"kernels.cpp": kernels, "main.cpp": main}, "kernels.cpp")
    assert ctx.get("n") == 2**21
    assert ctx.extents["d"] == 2**21


def test_an_element_passed_from_a_caller_is_not_its_array(tmp_path: Path) -> None:
    # main passes elements of an int array (``optr[6]``) as f's scalar bounds: in the region
    # they are ints, not the caller's ``int *`` (else ``ilast - ifirst`` is pointer arithmetic)
    src = (
        "void f(float *a, int ifirst, int ilast) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: a[0:ilast])\n"
        "  for (int i = ifirst; i < ilast; i++) a[i] *= 2.0f;\n"
        "}\n"
        "int main() {\n"
        "  int *optr = (int *)malloc(8 * sizeof(int));\n"
        "  float *a = (float *)malloc(1024 * sizeof(float));\n"
        "  f(&a[0], optr[6], optr[7]);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"o.cpp": src}, "o.cpp")
    assert ctx.types["ifirst"] == ctx.types["ilast"] == "int"
    assert ctx.types["a"].startswith("float") and "*" in ctx.types["a"]


def test_local_arrays_hold_every_dimension(tmp_path: Path) -> None:
    """``float a[N][M]`` holds N * M elements (2048 * 64 = 131072), not its last dimension's
    64: the extent caps the array's footprint, so a region reading all of it would have moved
    256 B per row walk instead of 512 kB. An initialised one (``= {0}``) too."""
    src = (
        "#define N 2048\n"
        "#define M 64\n"
        "int main() {\n"
        "  float a[N][M], c[N];\n"
        "  static double b[M][N][2] = {0};\n"
        "  #pragma omp target teams distribute parallel for map(to: a, b) map(from: c)\n"
        "  for (int i = 0; i < N; i++) c[i] = a[i][0] + b[0][i][1];\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"o.cpp": src}, "o.cpp")
    assert ctx.extents["a"] == 2048 * 64
    assert ctx.extents["b"] == 64 * 2048 * 2
    assert ctx.extents["c"] == 2048


def test_a_map_section_of_rows_holds_their_elements(tmp_path: Path) -> None:
    """A map section counts the rows of a pointer to arrays or of a 2-D array: ``a[0:n]`` of
    ``float (*a)[M]`` is n rows of M floats, 1024 * 512 elements (a cast that tree-sitter
    reads as an expression); ``g[0:N]`` of ``float g[N][M]`` is N * M = 2048 * 512 and
    ``g[0:N][0:M]`` the same; ``p[0:n]`` of ``float **p`` is n pointers. Had the extent been
    n, the 2 MB a region reads of a would have fitted in 4 kB."""
    src = (
        "#define N 2048\n"
        "#define M 512\n"
        "float g[N][M], h[N][M];\n"
        "void f(float *pa, float *pb, float **p, int n) {\n"
        "  float (*a)[M] = (float (*)[M])pa;\n"
        "  #pragma omp target teams distribute parallel for collapse(2) "
        "map(to: a[0:n], g[0:N], h[0:N][0:M], p[0:n]) map(from: pb[0:n*M])\n"
        "  for (int i = 0; i < n; i++)\n"
        "    for (int j = 0; j < M; j++) pb[i * M + j] = a[i][j] + g[i][j] + h[i][j] + p[i][j];\n"
        "}\n"
        "int main() {\n"
        "  float *pa = (float *)malloc(1024 * M * sizeof(float));\n"
        "  float *pb = (float *)malloc(1024 * M * sizeof(float));\n"
        "  f(pa, pb, 0, 1024);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"o.cpp": src}, "o.cpp")
    assert ctx.extents["a"] == 1024 * 512
    assert ctx.extents["g"] == ctx.extents["h"] == 2048 * 512
    assert ctx.extents["p"] == 1024
    assert ctx.extents["pb"] == 1024 * 512


def test_an_update_does_not_size_a_buffer(tmp_path: Path) -> None:
    """``target update to(u[0:64])`` copies 64 elements of a buffer main maps whole: it does
    not cap u's footprint at 256 B (the region reads 4 MB of it); a map clause does."""
    src = (
        "void step(float *u, float *v, int n) {\n"
        "  #pragma omp target update to(u[0:64])\n"
        "  #pragma omp target enter data map(alloc: v[0:n])\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) v[i] = u[i] * 2.0f;\n"
        "}\n"
        "int main() {\n"
        "  int n = 1 << 20;\n"
        "  float *u = (float *)malloc(n * 4), *v = (float *)malloc(n * 4);\n"
        "  #pragma omp target data map(to: u[0:n])\n"
        "  { step(u, v, n); }\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"o.cpp": src}, "o.cpp")
    assert ctx.extents.get("u") != 64
    assert ctx.extents["v"] == 1 << 20


def test_rounded_up_to_a_multiple_is_known(tmp_path: Path) -> None:
    """``while (m % 64 != 0) m++;`` leaves m at the next multiple of 64 (1000 -> 1024), a
    value known before the launch; a loop that counts something else stays unknown."""
    src = (
        "int main(int argc, char **argv) {\n"
        "  int n = atoi(argv[1]);\n"
        "  int m = n;\n"
        "  while (m % 64 != 0) m++;\n"
        "  int k = n;\n"
        "  while (k > 1) k++;\n"
        "  float *a;\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: a[0:m])\n"
        "  for (int i = 0; i < m; i++) a[i] = k;\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"r.cpp": src}, "r.cpp", args="1000")
    assert ctx.get("m") == 1024
    assert ctx.get("k") is None
    exact = ctx_for(tmp_path, {"r.cpp": src}, "r.cpp", args="2048")
    assert exact.get("m") == 2048


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


LAUNCH = Path(__file__).parent / "fixtures" / "launch"


def _fixture_ctx(name: str, **kw):  # type: ignore[no-untyped-def]
    path = LAUNCH / name
    det = detect(path.read_bytes(), str(path))
    return host_context(det.kernels[0], det, **kw)


def test_a_ceil_div_helper_launch() -> None:
    # n = 3,000,000, bs = 256: ceil_div(n, bs) = (3,000,000 + 255) / 256 = 11,719 blocks
    ctx = _fixture_ctx("ceil_div.cu")
    assert ctx.block == (256, 1, 1) and ctx.grid == (11719, 1, 1)
    assert ctx.get("n") == 3_000_000


def test_constexpr_function_macro_and_dim3_fields() -> None:
    # block.x = THREADS(4) = 128; grid = blocks_for(N) = (4,194,304 + 127) / 128 = 32,768
    ctx = _fixture_ctx("constexpr_blocks.cu")
    assert ctx.block == (128, 1, 1) and ctx.grid == (32768, 1, 1)
    assert ctx.get("n") == 1 << 22


def test_small_host_helpers_with_locals_ifs_and_loops() -> None:
    # see the fixture: n = next_pow2(1000) = 1024 (is_pow2(1000) is 0), grid 1024 / 256 = 4
    ctx = _fixture_ctx("pow2_helpers.cu")
    assert ctx.get("n") == 1024
    assert ctx.block == (256, 1, 1) and ctx.grid == (4, 1, 1)


def test_command_line_with_a_default() -> None:
    # no arguments: n = 1 << 20, blocks = (1,048,576 + 255) / 256 = 4,096; reps keeps 4
    ctx = _fixture_ctx("argv_default.cu")
    assert ctx.grid == (4096, 1, 1) and ctx.get("n") == 1 << 20
    # "65536 9": n = 65,536 -> 256 blocks
    ctx = _fixture_ctx("argv_default.cu", args="65536 9")
    assert ctx.grid == (256, 1, 1) and ctx.get("n") == 65536


def test_a_global_set_at_run_time_is_not_its_initial_value() -> None:
    # `int g_n = 0;` is assigned from argv in parse(): no 0-thread launch, the size is unknown
    ctx = _fixture_ctx("runtime_global.cu")
    assert ctx.grid is None and ctx.get("n") is None
    path = LAUNCH / "runtime_global.cu"
    assert "g_n" not in detect(path.read_bytes(), str(path)).constants


def test_values_read_or_counted_at_run_time_are_unknown(tmp_path: Path) -> None:
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  int rows = 0, nnz = 0, w = 0, fixed = 8;\n"
        "  std::cin >> rows;\n"  # read from a stream
        "  for (int i = 0; i < 100; i++) if (i % 3) nnz++;\n"  # counted in a loop
        '  load_image("a.ppm", &w);\n'  # set through its address
        "  fixed++;\n"  # once, outside any loop: 9
        "  float *d;\n"
        "  k<<<rows + nnz + w, 64>>>(d, fixed);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"r.cu": src}, "r.cu")
    assert ctx.grid is None  # neither 0 blocks nor a guess
    assert ctx.get("n") == 9


def test_dim3_components_assigned_after_declaration(tmp_path: Path) -> None:
    src = (
        "#define INSTANCES 224\n"
        "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
        "int main() {\n"
        "  dim3 block; dim3 grid;\n"
        "  block.x = 128;\n"
        "  grid.x = INSTANCES; grid.y = INSTANCES;\n"
        "  dim3 copy = grid;\n"
        "  float *d;\n"
        "  k<<<copy, block>>>(d);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"d.cu": src}, "d.cu")
    # 224 x 224 blocks of 128 threads: every component, not only x
    assert ctx.block == (128, 1, 1) and ctx.grid == (224, 224, 1)


def test_global_dim3s_sized_in_main_and_launched_elsewhere(tmp_path: Path) -> None:
    # cuda-samples' simpleMultiCopy shape: `dim3 block(512); dim3 grid;` at file scope, main
    # sets grid's components from N / block.x (4M / 512 = 8192 blocks), a helper launches:
    # 8192 x 1 blocks of 512 (before: block.x had no value, grid none, 2 M threads assumed)
    src = (
        "dim3 block(512);\n"
        "dim3 grid;\n"
        "int N = 1 << 22;\n"
        "__global__ void inc(int *o, int n) { o[blockIdx.x * blockDim.x + threadIdx.x] += n; }\n"
        "void run(int *o) { inc<<<grid, block>>>(o, N); }\n"
        "int main() {\n"
        "  int thread_blocks = N / block.x;\n"
        "  grid.x = thread_blocks % 65535;\n"
        "  grid.y = (thread_blocks / 65535 + 1);\n"
        "  int *o; run(o);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"m.cu": src}, "m.cu")
    assert ctx.block == (512, 1, 1) and ctx.grid == (8192, 1, 1)


def test_a_size_read_at_run_time_is_not_its_initial_value(tmp_path: Path) -> None:
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  int n = 1000;\n"
        '  scanf("%d", &n);\n'
        "  float *d;\n"
        "  k<<<(n + 255) / 256, 256>>>(d, n);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"s.cu": src}, "s.cu")
    # not the 4 blocks of the initial 1000: the grid is unknown (an assumed launch follows)
    assert ctx.block == (256, 1, 1) and ctx.grid is None and ctx.get("n") is None


def test_a_given_launch_size_gives_the_value_its_expression_lacks(tmp_path: Path) -> None:
    """``n`` is read at run time; the launch given as 8 blocks of ``(n + 255) / 256`` makes
    n one of 1793..2048, the roundest being 2048; with ``n / 256`` it is one of 2048..2303
    (again 2048); a grid of ``m`` blocks given as 300 makes m = 300 exactly."""
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "__global__ void j(float *x, int m) { x[threadIdx.x] = m; }\n"
        "__global__ void c(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  int n = 0, m = 0;\n"
        "  std::cin >> n >> m;\n"
        "  float *d;\n"
        "  k<<<(n + 255) / 256, 256>>>(d, n);\n"
        "  j<<<m, 1>>>(d, m);\n"
        "  c<<<std::min(1024, (n + 255) / 256), 256>>>(d, n);\n"
        "}\n"
    )
    (tmp_path / "s.cu").write_text(src)
    path = tmp_path / "s.cu"
    det = detect(path.read_bytes(), str(path))
    k, j, c = det.kernels
    assert host_context(k, det, (256, 1, 1), (8, 1, 1)).get("n") == 2048
    assert host_context(j, det, (1, 1, 1), (300, 1, 1)).get("m") == 300
    # below the cap, std::min(1024, ceil(n / 256)) = 6 makes n one of 1281..1536: 1536
    assert host_context(c, det, (256, 1, 1), (6, 1, 1)).get("n") == 1536
    # a capped grid implies no size; no given launch, nothing is solved
    assert host_context(c, det, (256, 1, 1), (1024, 1, 1)).get("n") is None
    assert host_context(k, det).get("n") is None
    src2 = src.replace("(n + 255) / 256, 256>>>(d, n);\n  j", "n / 256, 256>>>(d, n);\n  j")
    (tmp_path / "s.cu").write_text(src2)
    det = detect(path.read_bytes(), str(path))
    assert host_context(det.kernels[0], det, (256, 1, 1), (8, 1, 1)).get("n") == 2048


def test_a_given_launch_solves_a_size_its_dim3_components_both_use(tmp_path: Path) -> None:
    """``e`` is read at run time and used by both components the launch sets one by one:
    ``nthreads.x = std::min(e, 256)`` and ``nblocks.x = (e + nthreads.x - 1) / nthreads.x``.
    A given launch of 1844 blocks of 256 makes e one of 1843 * 256 + 1 .. 1844 * 256 =
    471,809..472,064, the roundest 472,064 (= 2^10 x 461); the grid-stride loop then runs
    once per thread. Before, ``nthreads`` counted as a second unknown and nothing was
    solved (16 trips assumed)."""
    src = (
        "__global__ void k(int e, float *w) {\n"
        "  for (int j = threadIdx.x + blockIdx.x * blockDim.x; j < e;\n"
        "       j += gridDim.x * blockDim.x) w[j] = 1.f;\n"
        "}\n"
        "int main() {\n"
        "  int e;\n"
        "  std::cin >> e;\n"
        "  float *d;\n"
        "  dim3 nthreads, nblocks;\n"
        "  nthreads.x = std::min(e, 256);\n"
        "  nblocks.x = (e + nthreads.x - 1) / nthreads.x;\n"
        "  k<<<nblocks, nthreads>>>(e, d);\n"
        "}\n"
    )
    path = tmp_path / "s.cu"
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    (k,) = det.kernels
    assert host_context(k, det, (256, 1, 1), (1844, 1, 1)).get("e") == 472064
    assert host_context(k, det).get("e") is None


def test_a_given_launch_solves_each_dim3_component_its_own_unknown(tmp_path: Path) -> None:
    """``dim3 grid(w / 16, (h + 15) / 16)`` with w and h read at run time: two unknowns in
    all, one in each component. A given grid of (32, 20) makes w one of 512..527 (the
    roundest 512) and h one of 305..320 (320); a product of both in one component solves
    nothing."""
    src = (
        "__global__ void k(float *x, int w, int h) { x[threadIdx.x] = w + h; }\n"
        "__global__ void j(float *x, int w, int h) { x[threadIdx.x] = w + h; }\n"
        "int main() {\n"
        "  int w, h;\n"
        "  std::cin >> w >> h;\n"
        "  float *d;\n"
        "  dim3 grid(w / 16, (h + 15) / 16);\n"
        "  k<<<grid, dim3(16, 16)>>>(d, w, h);\n"
        "  j<<<w * h / 256, 256>>>(d, w, h);\n"
        "}\n"
    )
    path = tmp_path / "s.cu"
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    k, j = det.kernels
    ctx = host_context(k, det, (16, 16, 1), (32, 20, 1))
    assert (ctx.get("w"), ctx.get("h")) == (512, 320)
    ctx = host_context(j, det, (256, 1, 1), (64, 1, 1))
    assert (ctx.get("w"), ctx.get("h")) == (None, None)


def test_a_pointer_argument_points_into_its_own_allocation() -> None:
    assert pointer_base("(float *)d_a + off") == "d_a"
    assert pointer_base("&d_a[b[i]]") == "d_a"
    assert pointer_base("plan[i].d_data") == "d_data"  # the field, not the struct array
    assert pointer_base("s->buf") == "buf"


def test_a_struct_array_is_not_the_buffer_its_field_points_to(tmp_path: Path) -> None:
    # plan[8] holds a pointer per device: the kernel's x points into plan[i].d_data's
    # allocation (of n floats), not into the 8-element array of structs
    src = (
        "struct Plan { float *d_data; int n; };\n"
        "__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n"
        "int main() {\n"
        "  Plan plan[8];\n"
        "  int n = 4096;\n"
        "  for (int i = 0; i < 8; i++) {\n"
        "    cudaMalloc((void **)&plan[i].d_data, n * sizeof(float));\n"
        "    k<<<16, 256>>>(plan[i].d_data);\n"
        "  }\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"a.cu": src}, "a.cu")
    assert ctx.extents["x"] == 4096


def test_options_parsed_into_struct_fields(tmp_path: Path) -> None:
    # ``-boxes1d 30`` is read into a field of a local struct and sizes the launch through
    # other fields: number = 30^3 = 27000 boxes of 128 threads
    src = (
        "__global__ void k(float *x, int boxes) { x[blockIdx.x] = boxes; }\n"
        "struct Dim { int boxes1d; int number; };\n"
        "int main(int argc, char **argv) {\n"
        "  Dim dim;\n"
        "  for (int i = 1; i < argc; i++) {\n"
        '    if (strcmp(argv[i], "-boxes1d") == 0) {\n'
        "      // a value must follow\n"
        "      if (argc >= i + 1) {\n"
        "        if (isInteger(argv[i + 1]) == 1) {\n"
        "          dim.boxes1d = atoi(argv[i + 1]);\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "  dim.number = dim.boxes1d * dim.boxes1d * dim.boxes1d;\n"
        "  float *d;\n"
        "  k<<<dim.number, 128>>>(d, dim.number);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"a.cu": src}, "a.cu", args="-boxes1d 30")
    assert ctx.grid == (27000, 1, 1)
    assert ctx.get("boxes") == 27000


def test_struct_fields_set_by_the_host_reach_the_callee_and_the_kernel(tmp_path: Path) -> None:
    # ``p.n = 4096`` before ``f(p)`` / ``k<<<...>>>(q)``: the callee's ``p.n`` and the
    # kernel's ``q.m`` are those values; a field set through a pointer is not followed
    omp = (
        "struct Params { int n; int m; };\n"
        "void f(float *a, Params p) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < p.n; i++) a[i] = p.m;\n"
        "}\n"
        "int main() {\n"
        "  Params p;\n"
        "  p.n = 4096;\n"
        "  p.m = 2 * p.n;\n"
        "  float *a = new float[p.n];\n"
        "  f(a, p);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"s.cpp": omp}, "s.cpp")
    assert (ctx.get("p.n"), ctx.get("p.m")) == (4096, 8192)
    cuda = (
        "struct Params { int n; int m; };\n"
        "__global__ void k(float *a, Params q, Params s) { a[threadIdx.x] = q.m + s.m; }\n"
        "int main() {\n"
        "  Params p;\n"
        "  p.m = 64;\n"
        "  set(&p);\n"  # through its address: every field unknown from here
        "  Params r;\n"
        "  r.m = 32;\n"
        "  float *a;\n"
        "  k<<<1, 32>>>(a, r, p);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"s.cu": cuda}, "s.cu")
    assert (ctx.get("q.m"), ctx.get("s.m")) == (32, None)


def test_a_value_set_on_some_iterations_of_a_loop_is_unknown(tmp_path: Path) -> None:
    # ``count`` is 1 only when the loop found nothing, so ``cells`` is counted at run time
    # (it was 0: ``count = 1`` was taken as the value every iteration has)
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  int cells = 0;\n"
        "  for (int i = 0; i < 100; i++) {\n"
        "    int count = 0;\n"
        "    for (int m = 0; m < 4; m++) count += rho[i * 4 + m] != 0.0;\n"
        "    if (count == 0) count = 1;\n"
        "    if (count > 1) cells++;\n"
        "  }\n"
        "  int mode = 0;\n"
        "  if (verbose) mode = 2;\n"  # once, outside any loop: the value it is set to
        "  float *d;\n"
        "  k<<<1, 64>>>(d, cells + mode);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"c.cu": src}, "c.cu")
    assert ctx.get("cells") is None
    assert ctx.get("mode") == 2
    assert ctx.get("n") is None


def test_a_count_stepped_inside_another_expression_is_unknown_after_a_loop(
    tmp_path: Path,
) -> None:
    # grep's line table: ``table[++lines] = i + 1`` counts the lines of a file read at run
    # time; the kernel's bound is not the 0 it started from (its grid-stride loop ran 0
    # trips). Once, outside a loop, the step is known: ``slot[++used]`` makes used 1.
    src = (
        "__global__ void k(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  int lines = 0, used = 0;\n"
        "  for (int i = 0; i < len; i++) {\n"
        "    if (text[i] == '\\n') table[++lines] = i + 1;\n"
        "  }\n"
        "  slot[++used] = 7;\n"
        "  float *d;\n"
        "  k<<<1, 64>>>(d, lines + used);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"c.cu": src}, "c.cu")
    assert ctx.get("lines") is None
    assert ctx.get("used") == 1
    assert ctx.get("n") is None


def test_a_local_copy_of_a_namespace_constant_keeps_its_value(tmp_path: Path) -> None:
    # meanshift's main: `constexpr auto N = ms::N;` (10000) sized the launch; the local N
    # referring to the namespace's N was read as N = f(N) and came out `ms::(10000)`
    src = (
        "namespace ms {\n"
        "  constexpr int N = 10000;\n"
        "  constexpr int BLOCKS = (N + 63) / 64;\n"
        "  __global__ void k(float *x) {\n"
        "    if (blockIdx.x * blockDim.x + threadIdx.x < N) x[0] = 1;\n"
        "  }\n"
        "}\n"
        "int main() {\n"
        "  constexpr auto N = ms::N;\n"
        "  constexpr auto BLOCKS = ms::BLOCKS;\n"
        "  float *d;\n"
        "  ms::k<<<BLOCKS, 64>>>(d);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"c.cu": src}, "c.cu")
    assert (ctx.get("N"), ctx.get("BLOCKS")) == (10000, 157)


def test_a_value_keeps_what_it_was_defined_from_when_that_changes(tmp_path: Path) -> None:
    # m = n * 2 with n = 2^20 is 2^21, whatever n is set to after: grid 2^21 / 256 = 8192
    src = (
        "__global__ void k(float *d, int count) {}\n"
        "int main() {\n"
        "  int n = 1 << 20;\n"
        "  int m = n * 2;\n"
        "  n = 10;\n"
        "  float *d;\n"
        "  k<<<m / 256, 256>>>(d, m);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"m.cu": src}, "m.cu")
    assert ctx.get("m") == 2**21 and ctx.get("n") == 10
    assert ctx.grid == (8192, 1, 1)


def test_values_a_host_loop_header_steps_are_known_after_it(tmp_path: Path) -> None:
    # for (; log2N > 11; log2N -= 2, N >>= 2, M <<= 2) from log2N = 23: (23 - 11) / 2 = 6
    # trips, so log2N = 11, N = 2^23 >> 12 = 2048, M = 1 << 12 = 4096 at the launch after it;
    # the launch inside sees the first trip's N = 2^23. A loop inside another loop (its
    # trips may differ each time) leaves what it steps unknown.
    src = (
        "__global__ void inner(float *d, int n) {}\n"
        "__global__ void outer(float *d, int n) {}\n"
        "void run(float *d, int M, int log2N) {\n"
        "  int N = 1 << log2N;\n"
        "  int s = 1;\n"
        "  for (; log2N > 11; log2N -= 2, N >>= 2, M <<= 2)\n"
        "    inner<<<N / 1024, 256>>>(d, N);\n"
        "  for (int r = 0; r < M; r++)\n"
        "    for (int t = s; t < M; t *= 2, s++) {}\n"
        "  outer<<<M, N / 4>>>(d, log2N + s);\n"
        "}\n"
        "int main() { float *d; run(d, 1, 23); }\n"
    )
    (tmp_path / "l.cu").write_text(src)
    det = detect((tmp_path / "l.cu").read_bytes(), str(tmp_path / "l.cu"))
    inner, outer = det.kernels
    ctx = host_context(outer, det)
    assert (ctx.get("log2N"), ctx.get("N"), ctx.get("M")) == (11, 2048, 4096)
    assert ctx.grid == (4096, 1, 1) and ctx.block == (512, 1, 1)
    assert ctx.get("s") is None
    ctx = host_context(inner, det)
    assert ctx.get("N") == 2**23 and ctx.grid == (8192, 1, 1)


def test_assignments_in_loop_headers_conditions_and_string_lengths(tmp_path: Path) -> None:
    # A chunked launch loop written ``for (start = 0; ...)``: the launch sees the first chunk,
    # start = 0, so remaining = 1000000 > 4000 and the kernel gets n = 4000 atoms. The chunk
    # count comes from the argument check ``(chunks = atoi(argv[1])) <= 0``: 3 with argv "3".
    # A key of 64 hexadecimal digits has strlen 64, so its bytes kernel gets 64 / 2 = 32.
    src = (
        "#include <cstring>\n"
        "#define MAXATOMS 4000\n"
        "__global__ void energy(int n, int chunks, float *out) {}\n"
        "__global__ void bytes(const char *key, int key_len, unsigned char *raw) {}\n"
        "int main(int argc, char **argv) {\n"
        "  int chunks, atomcount = 1000000;\n"
        "  if (argc < 2 || (chunks = atoi(argv[1])) <= 0) return 1;\n"
        "  float *out;\n"
        "  int start;\n"
        "  for (start = 0; start < atomcount; start += MAXATOMS) {\n"
        "    int n, remaining = atomcount - start;\n"
        "    if (remaining > MAXATOMS) n = MAXATOMS; else n = remaining;\n"
        "    energy<<<256, 256>>>(n, chunks, out);\n"
        "  }\n"
        '  const char *h_key = "000102030405060708090a0b0c0d0e0f"\n'
        '                      "101112131415161718191a1b1c1d1e1f";\n'
        "  const int key_len = strlen(h_key);\n"
        "  char *d_key; unsigned char *d_raw;\n"
        "  bytes<<<1, 256>>>(d_key, key_len / 2, d_raw);\n"
        "}\n"
    )
    (tmp_path / "c.cu").write_text(src)
    det = detect((tmp_path / "c.cu").read_bytes(), str(tmp_path / "c.cu"))
    energy, bytes_ = det.kernels
    ctx = host_context(energy, det, args="3")
    assert ctx.get("n") == 4000 and ctx.get("chunks") == 3
    assert host_context(bytes_, det).get("key_len") == 32


def test_a_given_launch_gives_an_offloaded_loop_s_unknown_bound(tmp_path: Path) -> None:
    # 8 teams of 256 threads for `i < width` (LLVM launches ceil(width / 256) teams):
    # width in (1792, 2048], the roundest 2048; the inner loop over width then has it too.
    # Not solved: teams fixed by num_teams (they need not follow the loop) or at the
    # runtime's 3200-team limit (the loop may be any longer)
    src = (
        "void f(const float *a, float *out, int width) {\n"
        "  #pragma omp target teams distribute parallel for {clause}\n"
        "  for (int i = 0; i < width; i++) {\n"
        "    float s = 0.f;\n"
        "    for (int j = 0; j < width; j++) s += a[j];\n"
        "    out[i] = s;\n"
        "  }\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  int width = read_width(argv[1]);\n"
        "  float *a, *out;\n"
        "  f(a, out, width);\n"
        "}\n"
    )
    files = {"w.cpp": src.replace("{clause}", "thread_limit(256)")}
    ctx = ctx_for(tmp_path, files, "w.cpp", block=(256, 1, 1), grid=(8, 1, 1))
    assert ctx.get("width") == 2048
    ctx = ctx_for(tmp_path, files, "w.cpp", block=(256, 1, 1), grid=(3200, 1, 1))
    assert ctx.get("width") is None
    files = {"w.cpp": src.replace("{clause}", "num_teams(8) thread_limit(256)")}
    ctx = ctx_for(tmp_path, files, "w.cpp", block=(256, 1, 1), grid=(8, 1, 1))
    assert ctx.get("width") is None


def test_a_launcher_passed_as_an_argument_is_bound_where_it_is_called(tmp_path: Path) -> None:
    # llm.c's dispatch: `run(..., T, launch_scale)` calls its parameter `step(x, T)`, which
    # is launch_scale: T = 1024 reaches the launch (grid 1024 / 128 = 8) and the kernel's n.
    # The address-of form `&launch_scale` is the same call.
    for passed in ("launch_scale", "&launch_scale"):
        src = (
            "__global__ void scale(float *x, int n) { if (threadIdx.x < n) x[threadIdx.x] *= 2; }\n"
            "void launch_scale(float *x, int n) { scale<<<n / 128, 128>>>(x, n); }\n"
            "template <class Step>\n"
            "void run(float *x, int T, Step step) { step(x, T); }\n"
            f"int main() {{ float *x; int T = 1024; run(x, T, {passed}); }}\n"
        )
        ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu")
        assert ctx.grid == (8, 1, 1)
        assert ctx.get("n") == 1024


def test_the_sm_count_a_launch_queries_is_the_target_gpu_s(tmp_path: Path) -> None:
    # grid = 4 blocks per SM, the SM count read from cudaDeviceProp or from
    # cudaDeviceGetAttribute: 4 * 108 = 432 on an A100, 4 * 68 = 272 on an RTX 3080; with
    # no GPU given the value is unknown (and so is the grid)
    for query in (
        "cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);"
        " int sms = prop.multiProcessorCount;",
        "int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);",
    ):
        src = (
            "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
            f"int main() {{ float *x; {query} k<<<4 * sms, 256>>>(x); }}\n"
        )
        for sms, grid in ((108, (432, 1, 1)), (68, (272, 1, 1)), (None, None)):
            device = {"multiProcessorCount": float(sms)} if sms else None
            ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
            assert ctx.grid == grid, (query, sms)


def test_device_limits_a_launch_queries_are_the_target_gpu_s(tmp_path: Path) -> None:
    # a launch sized by the queried block limit and a spin count from the clock:
    # maxThreadsPerBlock is 1024 on NVIDIA and AMD, so 1 << 20 elements take 1024 blocks;
    # clockRate is the boost clock in kHz (RTX 3080: 1710 MHz -> 1,710,000), so 10 ms of
    # spinning is 17,100,000 trips; l2CacheSize the profile's L2 (5 MiB = 5,242,880 B)
    src = (
        "__global__ void k(float *x, long spins, int l2) { x[threadIdx.x] = spins + l2; }\n"
        "int main() {\n"
        "  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
        "  int bs; cudaDeviceGetAttribute(&bs, cudaDevAttrMaxThreadsPerBlock, 0);\n"
        "  float *x; long spins = (long)(10 * prop.clockRate);\n"
        "  k<<<(1 << 20) / bs, bs>>>(x, spins, prop.l2CacheSize);\n"
        "}\n"
    )
    device = load_registry().get("rtx3080").device_properties
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
    assert (ctx.grid, ctx.block) == ((1024, 1, 1), (1024, 1, 1))
    assert ctx.get("spins") == 17_100_000
    assert ctx.get("l2") == 5 * 2**20
    # a warp-sized block follows the vendor: 64 lanes on an AMD Instinct GPU
    src = (
        "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
        "int main() { cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);"
        " float *x; k<<<8, p.warpSize>>>(x); }\n"
    )
    for gpu, lanes in (("a100", 32), ("mi250x", 64)):
        device = load_registry().get(gpu).device_properties
        ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
        assert ctx.block == (lanes, 1, 1), gpu


def test_work_sized_by_the_compute_capability_follows_the_target_gpu(tmp_path: Path) -> None:
    # simpleStreams' form: older GPUs get less work. RTX 3080 (8.6): major 8 >= 2, minor 6, so
    # n = 16 M elements, 65,536 blocks of 256; the attribute query gives the same minor.
    # An AMD profile has no compute capability: the branch is not decided, n not known.
    src = (
        "__global__ void k(float *x, int minor) {\n"
        "  x[blockIdx.x * blockDim.x + threadIdx.x] = minor;\n"
        "}\n"
        "int main() {\n"
        "  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
        "  int n = 16 * 1024 * 1024;\n"
        "  if (prop.major < 2) n = 4 * 1024 * 1024;\n"
        "  int minor; cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);\n"
        "  float *x; k<<<n / 256, 256>>>(x, minor);\n"
        "}\n"
    )
    device = load_registry().get("rtx3080").device_properties
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
    assert ctx.grid == (65536, 1, 1)
    assert ctx.get("minor") == 6
    device = load_registry().get("mi250x").device_properties
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
    assert ctx.grid is None or ctx.grid != (65536, 1, 1)
    assert ctx.get("minor") is None


def test_a_launch_the_occupancy_api_sizes_is_the_target_gpu_s(tmp_path: Path) -> None:
    # cudaOccupancyMaxPotentialBlockSize, from the SM's resident limits (registers and
    # shared memory not counted): the largest block reaching the most resident threads.
    # RTX 3080 (1536 threads, 16 blocks an SM): 1024 holds 1 block (1024 threads), 768
    # holds 2 (1536, all): block 768, grid 2 x 68 SMs = 136. A100 (2048, 32): 1024 holds
    # 2 (2048): block 1024, grid 2 x 108 = 216. A limit of 512: 3 x 512 = 1536 on the RTX
    # 3080, grid 3 x 68 = 204.
    # cudaOccupancyMaxActiveBlocksPerMultiprocessor of 256 threads: min(16, 1536 / 256) =
    # 6 on the RTX 3080 (grid 6 x 68 = 408), min(32, 2048 / 256) = 8 on the A100 (864);
    # of 32 threads: min(16, 48) = 16, the block limit (grid 1088).
    def potential(limit: int) -> str:
        return (
            "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
            "int main() {\n"
            "  int minGridSize, blockSize; float *x;\n"
            f"  cudaOccupancyMaxPotentialBlockSize(&minGridSize, &blockSize, k, 0, {limit});\n"
            "  k<<<minGridSize, blockSize>>>(x);\n"
            "}\n"
        )

    def active(threads: int) -> str:
        return (
            "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
            "int main() {\n"
            f"  int perSm = 0, numThreads = {threads}; float *x;\n"
            "  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
            "  checkCudaErrors(cudaOccupancyMaxActiveBlocksPerMultiprocessor(\n"
            "      &perSm, k, numThreads, 0));\n"
            "  k<<<prop.multiProcessorCount * perSm, numThreads>>>(x);\n"
            "}\n"
        )

    for gpu, src, grid, block in (
        ("rtx3080", potential(0), 136, 768),
        ("a100", potential(0), 216, 1024),
        ("rtx3080", potential(512), 204, 512),
        ("rtx3080", active(256), 408, 256),
        ("a100", active(256), 864, 256),
        ("rtx3080", active(32), 1088, 32),
    ):
        device = load_registry().get(gpu).device_properties
        ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
        assert (ctx.grid, ctx.block) == ((grid, 1, 1), (block, 1, 1)), (gpu, src)
    # the limit queried as a device attribute: 1536 / 256 = 6 blocks an SM on the RTX 3080
    src = (
        "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
        "int main() { float *x; int t;\n"
        "  cudaDeviceGetAttribute(&t, cudaDevAttrMaxThreadsPerMultiProcessor, 0);\n"
        "  k<<<68 * (t / 256), 256>>>(x);\n"
        "}\n"
    )
    device = load_registry().get("rtx3080").device_properties
    assert ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device).grid == (408, 1, 1)
    # a GPU whose limits are not modelled (AMD counts wavefronts per SIMD): unknown
    device = load_registry().get("mi250x").device_properties
    ctx = ctx_for(tmp_path, {"k.cu": potential(0)}, "k.cu", device=device)
    assert ctx.grid is None


def test_an_argument_a_helper_converts_is_the_program_argument(tmp_path: Path) -> None:
    # `int parse(const char *s) { return atoi(s); }` called with argv[1] ("2097152") and a
    # `std::stoi(std::string(argv[2]))` ("100"): the grid is 2097152 / 256 = 8192 blocks and
    # m is 100; a helper converting with strtol(s, NULL, 10) reads the same
    for convert in ("atoi(s)", "(int)strtol(s, NULL, 10)"):
        src = (
            "__global__ void k(float *a, int n, int m) { a[threadIdx.x] = n + m; }\n"
            f"int parse(const char *s) {{ return {convert}; }}\n"
            "int main(int argc, char **argv) {\n"
            "  int n = parse(argv[1]); int m = std::stoi(std::string(argv[2]));\n"
            "  float *a; k<<<(n + 255) / 256, 256>>>(a, n, m);\n"
            "}\n"
        )
        ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", args="2097152 100")
        assert ctx.grid == (8192, 1, 1), convert
        assert ctx.get("m") == 100


def test_a_listed_vector_of_sizes_is_known_element_by_element(tmp_path: Path) -> None:
    # std::vector<int> sizes = {2097152, 4096} swept by a range-for or an index loop: the
    # first launch is 2097152 / 256 = 8192 blocks; sizes.size() is 2
    for loop in (
        "for (int n : sizes) k<<<(n + 255) / 256, 256>>>(a, n);",
        "for (size_t s = 0; s < sizes.size(); s++)"
        " k<<<(sizes[s] + 255) / 256, 256>>>(a, sizes[s]);",
    ):
        src = (
            "#include <vector>\n"
            "__global__ void k(float *a, int n) { a[threadIdx.x] = n; }\n"
            f"int main() {{ std::vector<int> sizes = {{2097152, 4096}}; float *a; {loop} }}\n"
        )
        ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu")
        assert ctx.grid == (8192, 1, 1), loop
        assert ctx.get("sizes.size()") == 2


def test_a_helper_searching_an_empty_command_line_finds_nothing(tmp_path: Path) -> None:
    # the CUDA samples' `if (checkCmdLineFlag(argc, (const char **)argv, "wA")) dimsA.x =
    # getCmdLineArgumentInt(...)`: run without arguments the flag is absent, dimsA.x keeps
    # 320 and the grid is 320 / 32 = 10; given arguments, the helper's answer is unknown
    src = (
        "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
        "bool checkCmdLineFlag(int argc, const char **argv, const char *f);\n"
        "int getCmdLineArgumentInt(int argc, const char **argv, const char *f);\n"
        "int main(int argc, char **argv) {\n"
        "  dim3 dimsA(320, 320, 1);\n"
        '  if (checkCmdLineFlag(argc, (const char **)argv, "wA")) {\n'
        '    dimsA.x = getCmdLineArgumentInt(argc, (const char **)argv, "wA");\n'
        "  }\n"
        "  float *x; k<<<dimsA.x / 32, 32>>>(x);\n"
        "}\n"
    )
    assert ctx_for(tmp_path, {"k.cu": src}, "k.cu").grid == (10, 1, 1)
    assert ctx_for(tmp_path, {"k.cu": src}, "k.cu", args="-wA=64").grid is None


def test_the_launch_the_host_values_take_is_the_one_bound(tmp_path: Path) -> None:
    # `block_size` is 32, so of the two instantiations the else branch's <32> launch runs:
    # its template argument and block (32 x 32) are the ones used, not the first site's
    src = (
        "template <int BS> __global__ void mm(float *c) { c[threadIdx.x] = BS; }\n"
        "void run(float *c, int block_size) {\n"
        "  dim3 threads(block_size, block_size);\n"
        "  if (block_size == 16) mm<16><<<10, threads>>>(c);\n"
        "  else mm<32><<<10, threads>>>(c);\n"
        "}\n"
        "int main() { float *c; int block_size = 32; run(c, block_size); }\n"
    )
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu")
    assert ctx.block == (32, 32, 1)
    assert ctx.template_args == ("32",)


def test_a_launch_through_a_function_pointer_launches_what_it_points_to(tmp_path: Path) -> None:
    # the transpose sample: `kernel = &copy;` or `= transpose;` in a switch, then
    # `kernel<<<grid, threads>>>(...)`: both kernels get that launch (1024 / 32 = 32 blocks)
    src = (
        "__global__ void copy(float *o, const float *i) { o[threadIdx.x] = i[threadIdx.x]; }\n"
        "__global__ void transpose(float *o, const float *i) { o[threadIdx.x] = 0; }\n"
        "int main() {\n"
        "  void (*kernel)(float *, const float *) = transpose;\n"
        "  float *o, *i; int n = 1024;\n"
        "  for (int k = 0; k < 2; k++) {\n"
        "    if (k == 0) kernel = &copy;\n"
        "    kernel<<<n / 32, 32>>>(o, i);\n"
        "  }\n"
        "}\n"
    )
    (tmp_path / "k.cu").write_text(src)
    det = detect(src.encode(), str(tmp_path / "k.cu"))
    for kern in det.kernels:
        ctx = host_context(kern, det)
        assert ctx.launch is not None and ctx.grid == (32, 1, 1), kern.name


def test_a_kernel_passed_to_a_launch_helper_gets_the_helper_s_launch(tmp_path: Path) -> None:
    # `template <typename K, typename... Args> void launch1d(K kernel, int n, Args... args)`
    # launching `kernel<<<(n + 255) / 256, 256>>>(args...)`, called as launch1d(scale, n, x,
    # n) with n = 1 << 26 in main: scale's launch is the helper's, 262,144 blocks of 256,
    # n bound through the call although the pack takes more arguments than the helper names
    # (no launch was found: 1M threads assumed)
    src = (
        "__global__ void scale(float *x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) x[i] *= 2.0f;\n"
        "}\n"
        "template <typename K, typename... Args>\n"
        "void launch1d(K kernel, int n, Args... args) {\n"
        "  kernel<<<(n + 255) / 256, 256>>>(args...);\n"
        "}\n"
        "int main() { int n = 1 << 26; float *x; launch1d(scale, n, x, n); }\n"
    )
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu")
    assert ctx.launch is not None and ctx.launch.kernel == "scale"
    assert (ctx.grid, ctx.block) == ((262144, 1, 1), (256, 1, 1))


def test_a_global_the_caller_sets_before_the_call_is_known_in_the_callee(tmp_path: Path) -> None:
    # `num_sms` is 0 at file scope and set in main from the device before run() launches
    # with it: on a 108-SM GPU, 2 * 108 blocks. A global main sets only after the call
    # stays unknown in run()
    src = (
        "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
        "int num_sms = 0;\n"
        "int late = 0;\n"
        "void run(float *x) { k<<<2 * num_sms, 256>>>(x); k<<<late, 256>>>(x); }\n"
        "int main() {\n"
        "  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
        "  num_sms = prop.multiProcessorCount;\n"
        "  float *x; run(x);\n"
        "  late = 64;\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device={"multiProcessorCount": 108.0})
    assert ctx.grid == (216, 1, 1)
    assert ctx.get("late") is None


def test_globals_reach_a_function_without_parameters(tmp_path: Path) -> None:
    # run() takes nothing: the launch's n is the global main set from argv[1] = 3000000
    # before the call, and setup(n) sets g_m = n / 1000 = 3000 through its parameter:
    # (3000000 + 255) / 256 = 11719 blocks of 256, and m = 3000 in the launch's scope
    src = (
        "#include <cstdlib>\n"
        "__global__ void k(float *x, int n, int m) { x[threadIdx.x] = n + m; }\n"
        "int g_n, g_m;\n"
        "float *g_x;\n"
        "void setup(int n) { g_m = n / 1000; }\n"
        "void run() { k<<<(g_n + 255) / 256, 256>>>(g_x, g_n, g_m); }\n"
        "int main(int argc, char **argv) {\n"
        "  g_n = atoi(argv[1]);\n"
        "  setup(g_n);\n"
        "  run();\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", args="3000000")
    assert ctx.grid == (11719, 1, 1)
    assert ctx.get("g_m") == 3000
    # the same for an offloaded loop in a function without parameters: its bound g_n
    omp = (
        "#include <cstdlib>\n"
        "int g_n;\n"
        "float *g_x;\n"
        "void scale() {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < g_n; i++) g_x[i] *= 2.0f;\n"
        "}\n"
        "int main(int argc, char **argv) { g_n = atoi(argv[1]); scale(); }\n"
    )
    assert ctx_for(tmp_path, {"s.cpp": omp}, "s.cpp", args="3000000").get("g_n") == 3000000


def test_the_first_launch_in_the_file_is_the_one_taken_whatever_its_form(tmp_path: Path) -> None:
    # reset<int> runs first, through hipLaunchKernelGGL (its template argument in
    # HIP_KERNEL_NAME), with 64 blocks of 128; a chevron launch of reset<float> follows with
    # 256-thread blocks. The first launch gives the launch (as the first one profiled), not
    # the chevron found before the launch-API calls
    src = (
        "template <typename T> __global__ void reset(T *x, T v) { x[threadIdx.x] = v; }\n"
        "int main() {\n"
        "  int *a; float *b;\n"
        "  hipLaunchKernelGGL(HIP_KERNEL_NAME(reset<int>), dim3(64), dim3(128), 0, 0, a, 1);\n"
        "  reset<float><<<32, 256>>>(b, 0.0f);\n"
        "}\n"
    )
    det = detect(src.encode(), str(tmp_path / "r.cu"))
    assert [s.form for s in det.launches] == ["hipLaunchKernelGGL", "chevron"]
    ctx = host_context(det.kernels[0], det)
    assert ctx.block == (128, 1, 1) and ctx.grid == (64, 1, 1)


def test_hip_host_code_sizes_a_launch_with_warp_size(tmp_path: Path) -> None:
    # softmax's HIP version: a warp per slice, (100000 + 256 / 32 - 1) / (256 / 32) = 12500
    # blocks of 256 threads with warpSize 32 on the NVIDIA GPUs
    src = (
        "#define BLOCK_SIZE 256\n"
        "__global__ void soft(float *x, int n) { x[threadIdx.x] = n; }\n"
        "int main() {\n"
        "  const int numSlice = 100000;\n"
        "  float *x;\n"
        "  dim3 grids ((numSlice + BLOCK_SIZE / warpSize - 1) / (BLOCK_SIZE / warpSize));\n"
        "  hipLaunchKernelGGL(soft, grids, dim3(BLOCK_SIZE), 0, 0, x, numSlice);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"s.cu": src}, "s.cu")
    assert ctx.grid == (12500, 1, 1) and ctx.block == (256, 1, 1)


def test_a_symbol_the_host_copies_a_variable_to_holds_its_value(tmp_path: Path) -> None:
    # cudaMemcpyToSymbol(c_n, &n, sizeof(int)) with n = argv[1] = 5000: c_n is 5000; the
    # HIP spelling names the symbol through HIP_SYMBOL; a copy at an offset into a symbol
    # (c_part) leaves it unknown
    src = (
        "#include <cstdlib>\n"
        "__constant__ int c_n, c_m, c_part;\n"
        "__global__ void k(float *x) { x[threadIdx.x] = c_n + c_m + c_part; }\n"
        "int main(int argc, char **argv) {\n"
        "  int n = atoi(argv[1]), m = 7, p = 9;\n"
        "  cudaMemcpyToSymbol(c_n, &n, sizeof(int));\n"
        "  hipMemcpyToSymbol(HIP_SYMBOL(c_m), &m, sizeof(int), 0, hipMemcpyHostToDevice);\n"
        "  cudaMemcpyToSymbol(c_part, &p, sizeof(int), 4);\n"
        "  float *x; k<<<1, 256>>>(x);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"s.cu": src}, "s.cu", args="5000")
    assert (ctx.get("c_n"), ctx.get("c_m"), ctx.get("c_part")) == (5000, 7, None)


def test_the_size_of_a_whole_array_is_its_elements(tmp_path: Path) -> None:
    # sizeof(data) / sizeof(data[0]) of float data[] = {8 values}: 32 / 4 = 8 (a pointer's 8
    # bytes gave 2); int lens[5]: 20 / 4 = 5; a pointer stays 8 bytes: 8 / 4 = 2
    src = (
        "__global__ void k(float *x, int nd, int nl, int np) { x[threadIdx.x] = nd; }\n"
        "int main() {\n"
        "  float data[] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
        "  int lens[5];\n"
        "  float *p = data;\n"
        "  const int nd = sizeof(data) / sizeof(data[0]);\n"
        "  const int nl = sizeof(lens) / sizeof(int);\n"
        "  const int np = sizeof(p) / sizeof(float);\n"
        "  float *x; k<<<1, 32>>>(x, nd, nl, np);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"a.cu": src}, "a.cu")
    assert (ctx.get("nd"), ctx.get("nl"), ctx.get("np")) == (8, 5, 2)


def test_an_ifdef_in_a_host_loop_takes_the_default_build(tmp_path: Path) -> None:
    # flip's shape: #ifdef EXAMPLE push_back(2) #else push_back(dim_size) #endif, 3 trips.
    # Built without -DEXAMPLE the #else appends 64 each trip: n = 64^3 = 262144 (it was
    # unknown: either branch might be built). A branch on a name the compiler defines
    # (__CUDA_ARCH__) stays undecided: v's size is unknown
    src = (
        "#include <vector>\n"
        "__global__ void k(float *x, long n, long m) { x[threadIdx.x] = n + m; }\n"
        "int main() {\n"
        "  const int dim_size = 64;\n"
        "  std::vector<long> shape, v;\n"
        "  for (int i = 0; i < 3; i++) {\n"
        "#ifdef EXAMPLE\n"
        "    shape.push_back(2);\n"
        "#else\n"
        "    shape.push_back(dim_size);\n"
        "#endif\n"
        "#ifdef __CUDA_ARCH__\n"
        "    v.push_back(1);\n"
        "#endif\n"
        "  }\n"
        "  long n = 1;\n"
        "  for (int i = 0; i < 3; i++) n = n * shape[i];\n"
        "  long m = v.size();\n"
        "  float *x; k<<<1, 32>>>(x, n, m);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"f.cu": src}, "f.cu")
    assert ctx.get("n") == 64**3
    assert ctx.get("m") is None


def test_a_data_region_sizes_only_the_regions_inside_it(tmp_path: Path) -> None:
    # main maps b[0:n] with its n = 4096 * 4096 around the call; inside scale(), n is the
    # row length 4096. The region around the call must not size scale()'s b as 4096
    # elements (what main's clause read in scale()'s scope gave: a 16 kB working set for a
    # 64 MiB matrix): main's allocation does, 4096 * 4096 elements in main's own scope. A
    # data region around the offload region itself, and a standalone `target enter data`
    # before it in the same function, do size it
    src = (
        "void scale(float *b, int n) {\n"
        "  #pragma omp target teams distribute parallel for collapse(2)\n"
        "  for (int i = 0; i < n; i++)\n"
        "    for (int j = 0; j < n; j++) b[i * n + j] *= 2.0f;\n"
        "}\n"
        "void inner(float *c, int m) {\n"
        "  #pragma omp target enter data map(to: c[0:m])\n"
        "  #pragma omp target data map(tofrom: c[0:2 * m])\n"
        "  {\n"
        "    #pragma omp target teams distribute parallel for\n"
        "    for (int i = 0; i < m; i++) c[i] += 1.0f;\n"
        "  }\n"
        "}\n"
        "int main() {\n"
        "  int n = 4096 * 4096;\n"
        "  float *b = (float *)malloc(n * sizeof(float));\n"
        "  #pragma omp target data map(tofrom: b[0:n])\n"
        "  {\n"
        "    scale(b, 4096);\n"
        "    inner(b, 1000);\n"
        "  }\n"
        "}\n"
    )
    det = detected(tmp_path, src, "o.cpp")
    first, second = det.kernels
    assert host_context(first, det).extents["b"] == 4096 * 4096
    assert host_context(second, det).extents["c"] == 2000


def test_what_a_called_host_function_sets_is_known_after_the_call(tmp_path: Path) -> None:
    # the transpose sample's getParams(argc, argv, size_x, size_y): run without arguments
    # it takes its else branches, size_x = 2048 and size_y = 1024 through reference
    # parameters; llm.c's setup_main() sets the global num_sms from the device (108 SMs).
    # Grid (2048 / 32) x (1024 / 32), then 4 * 108 blocks
    src = (
        "__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
        "bool checkCmdLineFlag(int argc, const char **argv, const char *f);\n"
        "int num_sms = 0;\n"
        "void setup_main() {\n"
        "  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
        "  num_sms = prop.multiProcessorCount;\n"
        "}\n"
        "void getParams(int argc, char **argv, int &size_x, int &size_y, int max_dim) {\n"
        '  if (checkCmdLineFlag(argc, (const char **)argv, "dimX")) size_x = 7;\n'
        "  else size_x = max_dim;\n"
        "  size_y = max_dim / 2;\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  int size_x, size_y;\n"
        "  setup_main();\n"
        "  getParams(argc, argv, size_x, size_y, 2048);\n"
        "  dim3 grid(size_x / 32, size_y / 32), threads(32, 8);\n"
        "  float *x;\n"
        "  k<<<grid, threads>>>(x);\n"
        "  k<<<4 * num_sms, 256>>>(x);\n"
        "}\n"
    )
    device = {"multiProcessorCount": 108.0}
    ctx = ctx_for(tmp_path, {"k.cu": src}, "k.cu", device=device)
    assert ctx.grid == (64, 32, 1)
    assert ctx.eval_value("4 * num_sms") == 432


def test_a_driver_api_launch_of_a_module_function(tmp_path: Path) -> None:
    # the NVRTC / driver-API samples: the kernel is compiled at run time and launched as
    # cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, &arr[0], 0), with f
    # loaded by its name; its arguments are the array's items (casts and & removed)
    kernel = 'extern "C" __global__ void vadd(float *c, int n) { c[threadIdx.x] = n; }\n'
    host = (
        "int main() {\n"
        "  CUfunction f; CUmodule module;\n"
        '  cuModuleGetFunction(&f, module, "vadd");\n'
        "  int n = 50000; CUdeviceptr d_c;\n"
        "  int threads = 256, blocks = (n + threads - 1) / threads;\n"
        "  dim3 block(threads, 1, 1), grid(blocks, 1, 1);\n"
        "  void *arr[] = {reinterpret_cast<void *>(&d_c), reinterpret_cast<void *>(&n)};\n"
        "  cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, 0,\n"
        "                 &arr[0], 0);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"vadd_kernel.cu": kernel, "vadd.cpp": host}, "vadd_kernel.cu")
    assert ctx.launch is not None and ctx.launch.form == "cuLaunchKernel"
    assert (ctx.grid, ctx.block) == ((196, 1, 1), (256, 1, 1))
    assert ctx.get("n") == 50000


def test_a_method_s_offload_region_sees_its_class_s_data_members(tmp_path: Path) -> None:
    # Solver's members are its kernels' arrays and scalars: float pointers u and w, the
    # float dt, the int n, written bare (step, defined outside the class) or as this->x
    # (step2, inline). Their map sections size them (n = 4096 by a hint). Before, both
    # regions had neither types nor extents: the arithmetic was not counted
    src = (
        "class Solver {\n"
        " public:\n"
        "  float *u; float *w; int n; float dt;\n"
        "  void step();\n"
        "  void step2() {\n"
        "    #pragma omp target teams distribute parallel for \\\n"
        "      map(to: this->u[0:n]) map(from: w[0:n])\n"
        "    for (int i = 0; i < this->n; i++) this->w[i] = this->u[i] + this->dt * this->u[i];\n"
        "  }\n"
        "};\n"
        "void Solver::step() {\n"
        "  // roofline: n=4096\n"
        "  #pragma omp target teams distribute parallel for map(to: u[0:n]) map(from: w[0:n])\n"
        "  for (int i = 0; i < n; i++) w[i] = u[i] + dt * u[i];\n"
        "}\n"
    )
    det = detected(tmp_path, src, "solver.cpp")
    inline, outside = det.kernels
    for k in (inline, outside):
        ctx = host_context(k, det, values={"n": "4096"})
        assert (ctx.types["u"].replace(" ", ""), ctx.types["dt"].strip()) == ("float*", "float")
        assert ctx.extents["u"] == ctx.extents["w"] == 4096


def test_a_method_s_data_members_hold_what_the_constructor_gave_them(tmp_path: Path) -> None:
    # main constructs Solver s(n, iters) with n = 1 << 20 and iters = 300, then calls
    # s.step(): the constructor's initializers give n_ = n, iters_ = iters and its body
    # m_ = n / 4; Grid *g = new Grid(64) then g->sweep(): cells_ = 64 * 64
    src = (
        "class Solver {\n"
        " public:\n"
        "  Solver(int n, int iters) : n_(n), iters_{iters} { m_ = n / 4; }\n"
        "  void step() {\n"
        "    #pragma omp target teams distribute parallel for\n"
        "    for (int i = 0; i < n_; i++) for (int k = 0; k < iters_ + m_; k++) {}\n"
        "  }\n"
        "  int n_, iters_, m_;\n"
        "};\n"
        "struct Grid { Grid(int side); void sweep(); int cells_; };\n"
        "Grid::Grid(int side) : cells_(side * side) {}\n"
        "void Grid::sweep() {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int c = 0; c < cells_; c++) {}\n"
        "}\n"
        "int main() {\n"
        "  int n = 1 << 20, iters = 300;\n"
        "  Solver s(n, iters);\n"
        "  s.step();\n"
        "  Grid *g = new Grid(64);\n"
        "  g->sweep();\n"
        "}\n"
    )
    det = detected(tmp_path, src, "members.cpp")
    step, sweep = det.kernels
    ctx = host_context(step, det)
    assert (ctx.get("n_"), ctx.get("iters_"), ctx.get("m_")) == (1 << 20, 300, 1 << 18)
    assert host_context(sweep, det).get("cells_") == 64 * 64


def test_what_the_caller_does_to_an_object_before_the_call_reaches_its_members(
    tmp_path: Path,
) -> None:
    # Solver s(1 << 20, 0) then s.setIters(10): iters_ is 10 at s.step(), not the
    # constructor's 0; Plain p (no constructor) with p.n = 4096 and p.setScale(3): n = 4096,
    # scale = 3. A setter called in a loop (on some trips) leaves what it sets unknown.
    src = (
        "class Solver {\n"
        " public:\n"
        "  Solver(int n, int iters) : n_(n), iters_(iters) {}\n"
        "  void step() {\n"
        "    #pragma omp target teams distribute parallel for\n"
        "    for (int i = 0; i < n_; i++) for (int k = 0; k < iters_; k++) {}\n"
        "  }\n"
        "  void setIters(int t) { iters_ = t; }\n"
        "  int n_, iters_;\n"
        "};\n"
        "struct Plain {\n"
        "  void run() {\n"
        "    #pragma omp target teams distribute parallel for\n"
        "    for (int i = 0; i < n * scale; i++) {}\n"
        "  }\n"
        "  void setScale(int s) { scale = s; }\n"
        "  int n, scale;\n"
        "};\n"
        "int main() {\n"
        "  Solver s(1 << 20, 0);\n"
        "  s.setIters(10);\n"
        "  s.step();\n"
        "  Plain p;\n"
        "  p.n = 4096;\n"
        "  p.setScale(3);\n"
        "  p.run();\n"
        "  Solver t(64, 1);\n"
        "  for (int r = 0; r < 3; r++) t.setIters(r);\n"
        "  t.step();\n"
        "}\n"
    )
    det = detected(tmp_path, src, "setters.cpp")
    step, run = det.kernels
    ctx = host_context(step, det)
    assert (ctx.get("n_"), ctx.get("iters_")) == (1 << 20, 10)
    ctx = host_context(run, det)
    assert (ctx.get("n"), ctx.get("scale")) == (4096, 3)
    looped = src.replace("  s.setIters(10);\n  s.step();\n", "")
    det = detected(tmp_path, looped, "looped.cpp")
    ctx = host_context(det.kernels[0], det)
    assert ctx.get("n_") == 64 and ctx.get("iters_") is None


def test_a_callee_in_a_sibling_file_runs_for_its_effects(tmp_path: Path) -> None:
    # getLevels is defined in reference.cu with its own MAX_LEVELS; main.cu has only its
    # prototype. n = 4096 = 2^12: levels = 12; init_grid (grid.cu) returns a struct whose
    # ldim = 4096 + 2 * 4 = 4104. Editing reference.cu (48 levels at most, a 2^30 signal)
    # is seen by the next analysis.
    ref = (
        "#define MAX_LEVELS 24\n"
        "int getLevels(unsigned len, unsigned *levels) {\n"
        "  for (unsigned i = 0; i < MAX_LEVELS; ++i)\n"
        "    if (len == (1U << i)) { *levels = i; return 0; }\n"
        "  return 1;\n"
        "}\n"
    )
    grid = (
        "struct grid_t { int n, ldim; };\n"
        "struct grid_t init_grid(int n) {\n"
        "  struct grid_t g; g.n = n; g.ldim = n + 2 * 4; return g;\n"
        "}\n"
    )
    main = (
        "struct grid_t { int n, ldim; };\n"
        "int getLevels(unsigned len, unsigned *levels);\n"
        "struct grid_t init_grid(int n);\n"
        "__global__ void haar(float *a, unsigned levels, int ldim) {}\n"
        "int main(int argc, char **argv) {\n"
        "  unsigned n = atoi(argv[1]), levels = 0;\n"
        "  if (getLevels(n, &levels) == 1) return 1;\n"
        "  const struct grid_t grid = init_grid(n);\n"
        "  float *d;\n"
        "  haar<<<n / 256, 256>>>(d, levels, grid.ldim);\n"
        "}\n"
    )
    files = {"reference.cu": ref, "grid.cu": grid, "main.cu": main}
    ctx = ctx_for(tmp_path, files, "main.cu", args="4096")
    assert (ctx.get("levels"), ctx.get("ldim")) == (12, 4104)
    assert (
        ctx_for(
            tmp_path,
            files | {"reference.cu": ref.replace("24", "48")},
            "main.cu",
            args=str(1 << 30),
        ).get("levels")
        == 30
    )


def test_a_launch_four_calls_below_main_gets_main_s_values(tmp_path: Path) -> None:
    # main -> sortKeys -> step -> scanLarge -> scanLocal2 -> launch: numElements = 2^22,
    # arrayLength = 2^22 / 2 / 128 * 16 = 262,144, size = 262,144 / 1024 = 256 (8 trips
    # of off <<= 1), elements = 1 * 256 and one block of 256
    src = (
        "__global__ void k(unsigned *d, unsigned N, unsigned size) {}\n"
        "void scanLocal2(unsigned *d, unsigned n, unsigned size) {\n"
        "  const unsigned elements = n * size;\n"
        "  k<<<(elements + 255) / 256, 256>>>(d, elements, size);\n"
        "}\n"
        "void scanLarge(unsigned *d, unsigned batch, unsigned arrayLength) {\n"
        "  scanLocal2(d, batch, arrayLength / (4 * 256));\n"
        "}\n"
        "void step(unsigned *d, unsigned numElements, unsigned batch) {\n"
        "  scanLarge(d, batch, numElements / 2 / 128 * 16);\n"
        "}\n"
        "void sortKeys(unsigned *d, unsigned numElements, unsigned batch) {\n"
        "  for (unsigned bit = 0; bit < 32; bit += 4) step(d, numElements, batch);\n"
        "}\n"
        "int main() { unsigned *d; sortKeys(d, 128 * 128 * 128 * 2, 1); }\n"
    )
    ctx = ctx_for(tmp_path, {"chain.cu": src}, "chain.cu")
    assert ctx.get("size") == 256 and ctx.grid == (1, 1, 1)


def test_a_field_stored_through_a_pointer_is_read_back(tmp_path: Path) -> None:
    # initParams(&params): p->sp = 0.05, then p->nb = 6 * (int)(1.1 / p->sp) = 6 * 22
    src = (
        "struct Param { int nb; double sp; };\n"
        "__global__ void k(double *a, int nb) {}\n"
        "void initParams(Param *p) { p->sp = 0.05; p->nb = 6 * (int)(1.1 / p->sp); }\n"
        "int main() {\n"
        "  Param params;\n"
        "  initParams(&params);\n"
        "  double *a;\n"
        "  k<<<1, 256>>>(a, params.nb);\n"
        "}\n"
    )
    assert ctx_for(tmp_path, {"f.cu": src}, "f.cu").get("nb") == 132


def test_a_count_stepped_in_counted_loops_is_their_trips(tmp_path: Path) -> None:
    # for x < 40, for z < 40: nb++ twice: 2 * 40 * 40 = 3200. Counted under an if (per
    # element read), or in a triangular nest (z < x): unknown
    src = (
        "__global__ void k(float *a, int nb, int odd, int tri) {}\n"
        "int main() {\n"
        "  int nb = 0, odd = 0, tri = 0;\n"
        "  float v[40];\n"
        "  for (int x = 0; x < 40; x++)\n"
        "    for (int z = 0; z < 40; z++) { nb++; nb++; }\n"
        "  for (int x = 0; x < 40; x++) if (v[x] > 0) odd++;\n"
        "  for (int x = 0; x < 40; x++) for (int z = 0; z < x; z++) tri++;\n"
        "  float *a;\n"
        "  k<<<1, 256>>>(a, nb, odd, tri);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"n.cu": src}, "n.cu")
    assert ctx.get("nb") == 3200
    assert ctx.get("odd") is None and ctx.get("tri") is None


def test_a_value_accumulated_in_counted_loops_is_stepped_by_their_trips(tmp_path: Path) -> None:
    # n *= dim over 3 dims: 64^3 = 262144; total += n over 4 x 8 trips: 32 * 262144 =
    # 8388608; p = p * 2 over 10 trips: 1024. Unknown: an amount that changes in the loop
    # (sum += d: 0 + 1 + 2 ...), an element (len += sizes[d]), a step under an if
    src = (
        "__global__ void k(float *a, int n, int total, int p, int s, int e, int c) {}\n"
        "int main() {\n"
        "  int dims = 3, dim = 64, n = 1, total = 0, p = 1, s = 0, e = 0, c = 0;\n"
        "  int sizes[3] = {1, 2, 3};\n"
        "  float v[3];\n"
        "  for (int d = 0; d < dims; d++) n *= dim;\n"
        "  for (int r = 0; r < 4; r++)\n"
        "    for (int q = 0; q < 8; q++) total += n;\n"
        "  for (int d = 0; d < 10; d++) p = p * 2;\n"
        "  for (int d = 0; d < 3; d++) s += d;\n"
        "  for (int d = 0; d < 3; d++) e += sizes[d];\n"
        "  for (int d = 0; d < 3; d++) if (v[d] > 0) c += 2;\n"
        "  float *a;\n"
        "  k<<<1, 256>>>(a, n, total, p, s, e, c);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"n.cu": src}, "n.cu")
    assert (ctx.get("n"), ctx.get("total"), ctx.get("p")) == (262144, 8388608, 1024)
    assert ctx.get("s") is None and ctx.get("e") is None and ctx.get("c") is None


def test_a_vector_filled_with_one_value_gives_each_element(tmp_path: Path) -> None:
    # a tensor's shape: shape.push_back(dim) over 3 dims, then n = n * shape[i]: 64^3 =
    # 262144 (shape.size() 3); stride.push_back(shape[1] * shape[2]) at the top level is
    # stride[0] = 4096; w(5, 2.5f) has 5 elements of 2.5: 0.5 + 5 * 2.5 = 13. Unknown: ids
    # pushes i (it varies), so ids[0] is not known; filled by load(v), which may push
    # anything, v.size() is not known; pushes in a branch of the loop (odd) happen on some
    # trips only; u's elements, whatever fill(u.data(), 8) stores
    src = (
        "#include <vector>\n"
        "__global__ void k(float *a, long n) {}\n"
        "void load(std::vector<int> &v);\n"
        "int main() {\n"
        "  int dims = 3, dim = 64;\n"
        "  std::vector<long> shape, stride, ids, odd;\n"
        "  std::vector<float> w(5, 2.5f);\n"
        "  std::vector<int> v;\n"
        "  for (int i = 0; i < dims; i++) shape.push_back(dim);\n"
        "  for (int i = 0; i < dims; i++) ids.push_back(i);\n"
        "  for (int i = 0; i < dims; i++) if (i % 2) odd.push_back(dim);\n"
        "  stride.push_back(shape[1] * shape[2]);\n"
        "  long n = 1;\n"
        "  for (int i = 0; i < dims; i++) n = n * shape[i];\n"
        "  float total = 0.5f;\n"
        "  for (int i = 0; i < 5; i++) total += w[i];\n"
        "  load(v);\n"
        "  std::vector<int> u(8, 3);\n"
        "  fill(u.data(), 8);\n"
        "  float *a;\n"
        "  k<<<1, 256>>>(a, n);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"v.cu": src}, "v.cu")
    assert (ctx.get("n"), ctx.get("shape.size()"), ctx.get("stride[0]")) == (262144, 3, 4096)
    assert (ctx.get("total"), ctx.get("w.size()"), ctx.get("ids.size()")) == (13, 5, 3)
    assert ctx.get("ids[0]") is None and ctx.get("v.size()") is None
    assert ctx.get("odd.size()") is None and ctx.get("odd[0]") is None
    # u(8, 3) handed to fill(u.data(), 8): its 8 elements, no longer all 3
    assert ctx.get("u.size()") == 8 and ctx.get("u[2]") is None


def test_a_struct_handed_to_a_function_keeps_what_it_does_not_store(tmp_path: Path) -> None:
    # set_defaults(I) through a pointer variable: I->egroups = 128. init(&cfg) stores cfg.n
    # (n * 2 = 64) and leaves cfg.m = 7 alone; load(&cfg) hands the struct on to read_file:
    # any field may change there, so cfg.m is unknown after it
    src = (
        "struct Input { int egroups; };\n"
        "struct Cfg { int n, m; };\n"
        "void set_defaults(Input *in) { in->egroups = 128; }\n"
        "void init(Cfg *c, int n) { c->n = n * 2; }\n"
        "void load(Cfg *c) { read_file(c); }\n"
        "__global__ void k(float *a, int g, int n, int m, int m2) {}\n"
        "int main() {\n"
        "  Input *I = (Input *)malloc(sizeof(Input));\n"
        "  set_defaults(I);\n"
        "  Cfg cfg;\n"
        "  cfg.m = 7;\n"
        "  init(&cfg, 32);\n"
        "  int n = cfg.n, m = cfg.m;\n"
        "  load(&cfg);\n"
        "  float *a;\n"
        "  k<<<1, 256>>>(a, I->egroups, n, m, cfg.m);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"h.cu": src}, "h.cu")
    assert (ctx.get("g"), ctx.get("n"), ctx.get("m")) == (128, 64, 7)
    assert ctx.get("m2") is None


def test_a_copied_struct_carries_its_fields(tmp_path: Path) -> None:
    # dims.ne = 30; Dimensions b = dims (b.ne = 30); s.dims_b = dims (s.dims_b.ne = 30);
    # dims.ne = 7 afterwards changes neither copy; c = dims after dims.na was set at run
    # time: c.na is unknown, not what c held before
    src = (
        "struct Dimensions { int ne, na; };\n"
        "struct Sweeper { Dimensions dims_b; };\n"
        "__global__ void k(float *v, int a, int b, int c, int d) {}\n"
        "int main(int argc, char **argv) {\n"
        "  Dimensions dims, c;\n"
        "  Sweeper s;\n"
        "  dims.ne = 30;\n"
        "  c.na = 5;\n"
        "  Dimensions b = dims;\n"
        "  s.dims_b = dims;\n"
        "  dims.ne = 7;\n"
        "  dims.na = read_na(argv[1]);\n"
        "  c = dims;\n"
        "  float *v;\n"
        "  k<<<1, 256>>>(v, b.ne, s.dims_b.ne, c.ne, c.na);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"copy.cu": src}, "copy.cu")
    assert (ctx.get("a"), ctx.get("b"), ctx.get("c")) == (30, 30, 7)
    assert ctx.get("d") is None


def test_values_stored_through_a_pointer_argument(tmp_path: Path) -> None:
    # getIters(n, &iters) stores n / 1024 = 1024 through *iters; getLevels(n, &levels),
    # called in an if's condition, finds 1 << 20 == 1 << 20 at i = 20 and stores it
    # before its break: both reach the kernel as launch arguments
    src = (
        "__global__ void k(float *a, int iters, unsigned levels) {}\n"
        "void getIters(int n, int *iters) { *iters = n / 1024; }\n"
        "int getLevels(unsigned len, unsigned *levels) {\n"
        "  for (unsigned i = 0; i < 24; ++i)\n"
        "    if (len == (1U << i)) { *levels = i; break; }\n"
        "  return 0;\n"
        "}\n"
        "int main() {\n"
        "  int n = 1 << 20, iters;\n"
        "  unsigned levels = 0;\n"
        "  getIters(n, &iters);\n"
        "  if (getLevels(n, &levels) == 1) return 1;\n"
        "  float *d;\n"
        "  k<<<n / 256, 256>>>(d, iters, levels);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"p.cu": src}, "p.cu")
    assert (ctx.get("iters"), ctx.get("levels")) == (1024, 20)


def test_a_launch_in_a_method_sees_the_object_s_data_members(tmp_path: Path) -> None:
    # Solver s(1 << 20, 10); s.setIters(12); s.step(): the launch in step() has n_ = 2^20
    # (grid 4096 of 256) and iters_ = 12; a local of the method shadows a member (chunk)
    src = (
        "__global__ void solver(float *a, int nIter, int chunk) {}\n"
        "class Solver {\n"
        " public:\n"
        "  Solver(int n, int iters) : n_(n), iters_(iters), chunk(1) {}\n"
        "  void setIters(int t) { iters_ = t; }\n"
        "  void step() {\n"
        "    int chunk = 64;\n"
        "    float *d;\n"
        "    solver<<<n_ / 256, 256>>>(d, iters_, chunk);\n"
        "  }\n"
        " private:\n"
        "  int n_, iters_, chunk;\n"
        "};\n"
        "int main() { Solver s(1 << 20, 10); s.setIters(12); s.step(); }\n"
    )
    ctx = ctx_for(tmp_path, {"m.cu": src}, "m.cu")
    assert ctx.grid == (4096, 1, 1)
    assert (ctx.get("nIter"), ctx.get("chunk")) == (12, 64)


def test_default_member_initializers_hold_until_the_constructor_sets_them(
    tmp_path: Path,
) -> None:
    # Runner r(1 << 20): n_ from the constructor (grid 4096 of 256), reps_ = 12 and
    # scale{2} from the class's default member initializers, block_ = 128 given by both,
    # the constructor's winning
    src = (
        "__global__ void run(float *a, int reps, int scale) {}\n"
        "class Runner {\n"
        " public:\n"
        "  Runner(int n) : n_(n), block_(256) {}\n"
        "  void go() { float *d; run<<<n_ / block_, block_>>>(d, reps_, scale); }\n"
        " private:\n"
        "  int n_;\n"
        "  int block_ = 128;\n"
        "  int reps_ = 12;\n"
        "  int scale{2};\n"
        "};\n"
        "int main() { Runner r(1 << 20); r.go(); }\n"
    )
    ctx = ctx_for(tmp_path, {"r.cu": src}, "r.cu")
    assert ctx.grid == (4096, 1, 1) and ctx.block == (256, 1, 1)
    assert (ctx.get("reps"), ctx.get("scale")) == (12, 2)


def test_a_class_split_over_a_header_its_file_and_main_gives_its_members(
    tmp_path: Path,
) -> None:
    # The class is declared in sim.hpp (with an inline setter and getter), its methods are
    # defined in sim.cu / sim.cpp, and main.cu configures the object: Sim() sets npart_ to
    # 16000 through set_npart, sim.SetN(atoi(argv[1])) to the argument. Start() reads it
    # through get_npart(): n = 5000 with "5000", the constructor's 16000 with argc == 1
    # (the setter is behind ``if (argc > 1)``).
    header = (
        "#pragma once\n"
        "class Sim {\n"
        " public:\n"
        "  Sim();\n"
        "  void SetN(int N);\n"
        "  void Start();\n"
        " private:\n"
        "  int npart_;\n"
        "  void set_npart(const int &N) { npart_ = N; }\n"
        "  int get_npart() const { return npart_; }\n"
        "};\n"
    )
    methods = (
        "Sim::Sim() { set_npart(16000); }\n"
        "void Sim::SetN(int N) { set_npart(N); }\n"
        "void Sim::Start() {\n"
        "  int n = get_npart();\n"
        "  float *e;\n"
        "  %s\n"
        "}\n"
    )
    main = (
        "#include <cstdlib>\n"
        '#include "sim.hpp"\n'
        "int main(int argc, char **argv) {\n"
        "  Sim sim;\n"
        "  if (argc > 1) sim.SetN(std::atoi(argv[1]));\n"
        "  sim.Start();\n"
        "}\n"
    )
    launch = "energy<<<1, 1>>>(e, n);"
    cuda = (
        '#include "sim.hpp"\n__global__ void energy(float *e, const int n) {}\n' + methods % launch
    )
    files = {"sim.hpp": header, "sim.cu": cuda, "main.cu": main}
    assert ctx_for(tmp_path, files, "sim.cu", args="5000").get("n") == 5000
    assert ctx_for(tmp_path, files, "sim.cu").get("n") == 16000
    region = "#pragma omp target\n  for (int i = 1; i < n; i++) e[0] += e[i];"
    omp = {"sim.hpp": header, "sim.cpp": '#include "sim.hpp"\n' + methods % region}
    omp["main.cpp"] = main
    (tmp_path / "omp").mkdir()
    ctx = ctx_for(tmp_path / "omp", omp, "sim.cpp", args="5000")
    assert (ctx.get("n"), ctx.get("npart_")) == (5000, 5000)


def test_an_option_not_given_keeps_its_default(tmp_path: Path) -> None:
    # size defaults to 512, -s sets it (behind an optarg guard, with a two-word cast);
    # reps defaults to 3, --reps sets it (strcmp style). Not given: the defaults; given:
    # the values; given but not a number: unknown.
    src = (
        "__global__ void k(float *a, unsigned n, int r) {}\n"
        "int main(int argc, char **argv) {\n"
        "  unsigned size = 512;\n"
        "  int reps = 3, opt;\n"
        '  while ((opt = getopt(argc, argv, "s:")) != -1) {\n'
        "    switch (opt) {\n"
        "      case 's':\n"
        "        if (optarg != NULL) size = (unsigned int)(atoi(optarg));\n"
        "        break;\n"
        "    }\n"
        "  }\n"
        "  for (int i = 1; i < argc; i++)\n"
        '    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);\n'
        "  float *d;\n"
        "  k<<<64, 256>>>(d, size, reps);\n"
        "}\n"
    )
    files = {"o.cu": src}
    ctx = ctx_for(tmp_path, files, "o.cu")
    assert (ctx.get("n"), ctx.get("r")) == (512, 3)
    ctx = ctx_for(tmp_path, files, "o.cu", args="-s 16384 --reps 7")
    assert (ctx.get("n"), ctx.get("r")) == (16384, 7)
    assert ctx_for(tmp_path, files, "o.cu", args="-s 1x").get("n") is None


def test_a_cast_to_the_template_s_type_parameter_in_host_code(tmp_path: Path) -> None:
    # stddev(o, a, D, N) deduces IdxType = int: TeamX = (65536 + (IdxType)32 - 1) /
    # (IdxType)32 = 2048 teams; run<int>(d, 4096): m = (4096 + (T)3) / static_cast<T>(4)
    # = 1024
    src = (
        "template <typename Type, typename IdxType>\n"
        "void stddev(Type *o, const Type *a, IdxType N) {\n"
        "  const int TeamX = (N + (IdxType)32 - 1) / (IdxType)32;\n"
        "  #pragma omp target teams num_teams(TeamX) thread_limit(256)\n"
        "  { o[0] = a[0]; }\n"
        "}\n"
        "template <typename T> __global__ void k(float *a, T m) {}\n"
        "template <typename T> void run(float *d, T n) {\n"
        "  T m = (n + (T)3) / static_cast<T>(4);\n"
        "  k<T><<<n / 256, 256>>>(d, m);\n"
        "}\n"
        "int main() {\n"
        "  int N = 65536;\n"
        "  float *o, *a;\n"
        "  stddev(o, a, N);\n"
        "  run<int>(a, 4096);\n"
        "}\n"
    )
    det = detected(tmp_path, src, "t.cu")
    region = next(k for k in det.kernels if k.is_offload)
    launched = next(k for k in det.kernels if not k.is_offload)
    assert host_context(region, det).get("TeamX") == 2048
    assert host_context(launched, det).get("m") == 1024


def test_an_option_parser_object_gives_its_default_or_the_command_line(
    tmp_path: Path,
) -> None:
    # SHOC's OptionParser: addOption("PointCount", OPT_INT, "4096") in main, read with
    # op.getOptionInt("PointCount") in run(op): 4096 points (grid 4096 / 64 = 64), or
    # 2048 with --PointCount 2048 (grid 32)
    src = (
        "__global__ void k(int *c, int n) {}\n"
        "void run(OptionParser &op) {\n"
        '  int point_count = op.getOptionInt("PointCount");\n'
        "  int *c;\n"
        "  k<<<point_count / 64, 64>>>(c, point_count);\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  OptionParser op;\n"
        '  op.addOption("PointCount", OPT_INT, "4096", "point count");\n'
        "  op.parse(argc, argv);\n"
        "  run(op);\n"
        "}\n"
    )
    files = {"qtc.cu": src}
    ctx = ctx_for(tmp_path, files, "qtc.cu")
    assert ctx.get("n") == 4096 and ctx.grid == (64, 1, 1)
    ctx = ctx_for(tmp_path, files, "qtc.cu", args="--PointCount 2048")
    assert ctx.get("n") == 2048 and ctx.grid == (32, 1, 1)


def test_a_switch_on_a_known_value_runs_its_case(tmp_path: Path) -> None:
    # switch (size) with size = 2 runs case 2 (n = 8192), falls through to case 3
    # (m = 7) and stops at its break; case 4 and default do not run. On an unknown value
    # (argv[1] not given) the cases leave n unknown, not the last case's value.
    src = (
        "__global__ void k(float *d, int n, int m) {}\n"
        "int main(int argc, char **argv) {\n"
        "  int size = 2, n = 0, m = 1;\n"
        "  int which = atoi(argv[1]);\n"
        "  switch (size) {\n"
        "    case 1: n = 4096; break;\n"
        "    case 2: n = 8192;\n"
        "    case 3: m = 7; break;\n"
        "    case 4: m = 9; break;\n"
        "    default: n = 1;\n"
        "  }\n"
        "  int q = 5;\n"
        "  switch (which) { case 0: q = 6; break; case 1: q = 7; break; }\n"
        "  float *d;\n"
        "  k<<<n / 256, 256>>>(d, q, m);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"s.cu": src}, "s.cu")
    assert ctx.grid == (32, 1, 1) and ctx.get("m") == 7
    assert ctx.get("n") is None  # the kernel's n is q: which is not known
    assert ctx_for(tmp_path, {"s.cu": src}, "s.cu", args="1").get("n") == 7


def test_an_offload_region_in_a_function_template_takes_its_first_instantiation(
    tmp_path: Path,
) -> None:
    # axpy's T from its call's arguments (double *x: double); scale<T> called as scale<T>
    # from run<T>, instantiated as run<float> in main: float; fill's T from nothing (the
    # verdict names it assumed)
    src = (
        "template <typename T> void axpy(const T *x, T *y, T a, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) y[i] += a * x[i];\n"
        "}\n"
        "template <typename T> void scale(T *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) y[i] *= 2;\n"
        "}\n"
        "template <typename T> void run(T *y, int n) { scale<T>(y, n); }\n"
        "template <typename T> void fill(T *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) y[i] = 0;\n"
        "}\n"
        "int main() {\n"
        "  double *x = 0, *y = 0; float *z = 0;\n"
        "  axpy(x, y, 2.0, 64);\n"
        "  run<float>(z, 64);\n"
        "}\n"
    )
    det = detected(tmp_path, src, "t.cpp")
    axpy, scale, fill = det.kernels
    assert host_context(axpy, det).host_template == {"T": "double"}
    assert host_context(scale, det).host_template == {"T": "float"}
    assert host_context(fill, det).host_template == {"T": ""}


def test_a_class_template_s_method_takes_the_class_s_first_instantiation(tmp_path: Path) -> None:
    # BabelStream's form: `template <class T> void Stream<T>::copy()` with an offload
    # region, the class instantiated at the end of the file: T is double (the first one)
    src = (
        "template <class T> class Stream { T *a, *c; int n; public: void copy(); };\n"
        "template <class T> void Stream<T>::copy() {\n"
        "  T *a = this->a, *c = this->c;\n"
        "  #pragma omp target teams distribute parallel for\n"
        "  for (int i = 0; i < n; i++) c[i] = a[i];\n"
        "}\n"
        "template class Stream<double>;\n"
        "template class Stream<float>;\n"
    )
    det = detected(tmp_path, src, "stream.cpp")
    assert host_context(det.kernels[0], det).host_template == {"T": "double"}


def test_the_source_of_a_copy_keeps_its_value(tmp_path: Path) -> None:
    src = (
        "struct Params { int n; int m; };\n"
        "__global__ void k(const Params *p, float *x, int n) { x[threadIdx.x] = p->m; }\n"
        "int main() {\n"
        "  Params h; h.n = 4096; h.m = 1000;\n"
        "  int len = 64;\n"
        "  Params *d; int *d_len; float *x;\n"
        "  cudaMemcpy(d, &h, sizeof(Params), cudaMemcpyHostToDevice);\n"  # h is read
        "  CHECK(cudaMemcpy(d_len, &len, sizeof(int), cudaMemcpyHostToDevice));\n"
        "  k<<<(h.n + 255) / 256, 256>>>(d, x, len);\n"
        "  cudaMemcpy(&len, d_len, sizeof(int), cudaMemcpyDeviceToHost);\n"  # len is set
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"c.cu": src}, "c.cu")
    # 4096 / 256 = 16 blocks; the copy to the device left h (and len) as they were
    assert ctx.grid == (16, 1, 1) and ctx.get("n") == 64
    # the buffer the kernel's p points to holds h's fields as the host set them
    assert ctx.get("p->m") == 1000 and ctx.get("p->n") == 4096 and ctx.copied == {"p"}


def test_a_struct_field_set_by_an_option_getter(tmp_path: Path) -> None:
    src = (
        "struct Dims { int ne; int na; };\n"
        "int get_int_or_default(Args *a, const char *name, int d);\n"
        "__global__ void k(float *x, int ne, int na) { x[threadIdx.x] = ne * na; }\n"
        "int main(int argc, char **argv) {\n"
        "  Args args; Dims dims;\n"
        '  dims.ne = get_int_or_default(&args, "--ne", 30);\n'
        '  dims.na = get_int_or_default(&args, "--na", 33);\n'
        "  float *x;\n"
        "  k<<<dims.ne, 64>>>(x, dims.ne, dims.na);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"o.cu": src}, "o.cu", args="--na 8")
    # --ne not given: its default 30; --na given as 8
    assert ctx.grid == (30, 1, 1) and ctx.get("ne") == 30 and ctx.get("na") == 8


def test_a_struct_initialised_by_an_aggregate_and_a_list_of_them(tmp_path: Path) -> None:
    # sampling's ``std::vector<Dataset> inputs = {{1000, 0, 2000, 10}, ...}`` and ``for (auto
    # params : inputs)``: the fields by position, the loop variable the first element (what
    # the first launch in the body sees); designated initializers by name
    head = (
        "#include <vector>\n"
        "struct Dataset { int nrows; int nsampled; int ncols; int nbg; };\n"
        "__global__ void k(double *a, int ncols, int nbg) {}\n"
    )
    positional = head + (
        "int main() {\n"
        "  Dataset d = {1000, 0, 2000, 10};\n"
        "  k<<<d.nrows, 32>>>(0, d.ncols, d.nbg);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"p.cu": positional}, "p.cu")
    assert (ctx.get("d.nrows"), ctx.get("d.ncols"), ctx.get("d.nbg")) == (1000, 2000, 10)
    designated = positional.replace("{1000, 0, 2000, 10}", "{.nrows = 1000, .ncols = 2000}")
    ctx = ctx_for(tmp_path, {"d.cu": designated}, "d.cu")
    assert (ctx.get("d.nrows"), ctx.get("d.ncols"), ctx.get("d.nbg")) == (1000, 2000, None)
    listed = head + (
        "int main() {\n"
        "  std::vector<Dataset> inputs = {{1000, 0, 2000, 10}, {500, 0, 64, 3}};\n"
        "  for (auto params : inputs)\n"
        "    k<<<params.nrows, 32>>>(0, params.ncols, params.nbg);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"v.cu": listed}, "v.cu")
    assert (ctx.get("params.nrows"), ctx.get("params.ncols")) == (1000, 2000)
    assert ctx.get("inputs.size()") == 2
    array = listed.replace("std::vector<Dataset> inputs", "const Dataset inputs[]")
    ctx = ctx_for(tmp_path, {"a.cu": array}, "a.cu")
    assert (ctx.get("params.nrows"), ctx.get("params.nbg")) == (1000, 10)


def test_braces_call_a_constructor_not_an_aggregate(tmp_path: Path) -> None:
    # ``Img image{w, h}`` with a constructor storing h first: not the fields by position
    src = (
        "struct Img { int w; int h; Img(int a, int b) : w(b), h(a) {} };\n"
        "__global__ void k(float *p, int n) {}\n"
        "int main() {\n"
        "  Img image{640, 480};\n"
        "  k<<<image.w, 32>>>(0, image.h);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"i.cu": src}, "i.cu")
    assert ctx.get("image.w") in (None, 480)  # unknown, or what the constructor stores


def test_values_set_at_run_time_are_traced_to_the_variables_read(tmp_path: Path) -> None:
    # rows from fscanf, cols from a stream; n = rows * cols is passed as the kernel's len:
    # len comes from both. reps (atoi of an argument not given) is unknown but not read;
    # an argument given makes rows known, and nothing is then set at run time.
    src = (
        "#include <cstdio>\n"
        "#include <fstream>\n"
        "__global__ void k(float *a, int len, int reps) {}\n"
        "int main(int argc, char **argv) {\n"
        "  int rows, cols;\n"
        '  FILE *f = fopen(argv[1], "r");\n'
        '  fscanf(f, "%d", &rows);\n'
        "  std::ifstream in(argv[1]);\n"
        "  in >> cols;\n"
        "  int n = rows * cols;\n"
        "  int reps = atoi(argv[2]);\n"
        "  float *a; k<<<n / 256, 256>>>(a, n, reps);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"r.cu": src}, "r.cu")
    assert ctx.set_at_run_time("len") == ("rows", "cols")
    assert ctx.set_at_run_time("n / 256") == ("rows", "cols")
    assert ctx.set_at_run_time("reps") == ()
    known = ctx_for(tmp_path, {"r.cu": "// roofline: rows=64, cols=8\n" + src}, "r.cu")
    assert known.get("len") == 512 and known.set_at_run_time("len") == ()


def test_a_value_set_at_run_time_is_traced_through_the_launching_functions_caller(
    tmp_path: Path,
) -> None:
    # main reads height from the file and passes it to run(h), which launches with it: the
    # kernel's len comes from main's height
    src = (
        "#include <cstdio>\n"
        "__global__ void k(float *a, int len) {}\n"
        "void run(float *a, int h) { k<<<h, 256>>>(a, h * 2); }\n"
        "int main(int argc, char **argv) {\n"
        "  int height;\n"
        '  FILE *f = fopen(argv[1], "r");\n'
        '  fscanf(f, "%d", &height);\n'
        "  float *a; run(a, height);\n"
        "}\n"
    )
    ctx = ctx_for(tmp_path, {"c.cu": src}, "c.cu")
    assert ctx.get("len") is None
    assert ctx.set_at_run_time("len") == ("height",)


def test_what_was_set_at_run_time_survives_the_scan_kept_between_launches(
    tmp_path: Path,
) -> None:
    # two launches in one function: the second continues the scan the first left (kept
    # between launches), and still knows that n was read at run time
    src = (
        "#include <cstdio>\n"
        "__global__ void a(float *x, int n) {}\n"
        "__global__ void b(float *x, int n) {}\n"
        "int main(int argc, char **argv) {\n"
        '  int n; FILE *f = fopen(argv[1], "r"); fscanf(f, "%d", &n);\n'
        "  float *x;\n"
        "  a<<<n / 256, 256>>>(x, n);\n"
        "  b<<<n / 256, 256>>>(x, n);\n"
        "}\n"
    )
    path = tmp_path / "two.cu"
    path.write_text(src)
    det = detect(path.read_bytes(), str(path))
    assert [host_context(k, det).set_at_run_time("n") for k in det.kernels] == [("n",), ("n",)]


def test_a_launch_through_a_header_s_launching_function_is_sized_at_the_call(
    tmp_path: Path,
) -> None:
    """``linear_kernel(scale<float>, 0, nullptr, n, x, y, 2.0f)`` with the header's
    ``kernel<<<n_blocks_linear(n), 128, shmem, stream>>>(n, args...)``: the launch is
    written in the call's arguments, so main's n = 2^24 gives (2^24 + 127) / 128 = 131,072
    blocks of 128 threads, and the kernel's n is 2^24."""
    (tmp_path / "launch.h").write_text(
        "constexpr unsigned int N_THREADS_LINEAR = 128;\n"
        "template <typename T> constexpr unsigned int n_blocks_linear(T n) {\n"
        "  return (unsigned int)((n + N_THREADS_LINEAR - 1) / N_THREADS_LINEAR);\n"
        "}\n"
        "template <typename K, typename T, typename... Types>\n"
        "void linear_kernel(K kernel, unsigned int shmem, cudaStream_t stream, T n,\n"
        "                   Types... args) {\n"
        "  kernel<<<n_blocks_linear(n), N_THREADS_LINEAR, shmem, stream>>>(n, args...);\n"
        "}\n"
    )
    path = tmp_path / "a.cu"
    path.write_text(
        '#include "launch.h"\n'
        "template <typename T>\n"
        "__global__ void scale(const unsigned int n, const T *x, T *y, float a) {\n"
        "  const unsigned int i = threadIdx.x + blockIdx.x * blockDim.x;\n"
        "  if (i < n) y[i] = a * x[i];\n"
        "}\n"
        "int main() {\n"
        "  const unsigned int n = 1 << 24;\n"
        "  float *x, *y;\n"
        "  linear_kernel(scale<float>, 0, nullptr, n, x, y, 2.0f);\n"
        "}\n"
    )
    det = detect(path.read_bytes(), str(path))
    ctx = host_context(det.kernels[0], det)
    assert (ctx.block, ctx.grid) == ((128, 1, 1), (131072, 1, 1))
    assert ctx.get("n") == 1 << 24
