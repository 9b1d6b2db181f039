"""Tests of roofline_lsp.compiler.compile_jobs: caching, cancellation and timeouts with
stand-in compilers written here, and real compiles when nvcc (or an offloading clang) is
found (the toolkit need not be on PATH)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from ptx_helpers import (
    FIX,
    NVCC,
    OMP_CLANG,
    check_dot,
    check_hash,
    check_saxpy,
    fake_tool,
    needs_nvcc,
    posix_only,
)

from roofline_lsp.compiler.compile_jobs import (
    CACHE_NAMESPACE,
    PtxFailure,
    PtxResult,
    compile_omp_ptx,
    compile_ptx,
    compile_ptx_async,
    valid_global_names,
)
from roofline_lsp.compiler.demangle import omp_region
from roofline_lsp.compiler.ptx_kernels import counts_for_kernel
from roofline_lsp.compiler.ptx_parser import parse_ptx
from roofline_lsp.compiler.toolchain import supported_archs
from roofline_lsp.store.cache import ResultCache

# copies the checked-in saxpy PTX to the -o argument, and logs each run
STANDIN = """
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$1" in --version) echo 'release 99.0, V99.0.1'; exit 0;; esac
echo run >> "{log}"
cp "{ptx}" "$out"
"""


@posix_only
def test_a_c_file_including_a_cxx_header_is_compiled_as_cxx(tmp_path: Path) -> None:
    # `#include <chrono>` has no C meaning: the file is built as C++ (`-x c++`), as the
    # project's C++ compiler builds it; a plain C file stays C
    log = tmp_path / "args.log"
    standin = f'echo "$@" >> "{log}"\n'
    standin += STANDIN.format(log=tmp_path / "runs.log", ptx=FIX / "saxpy.ptx")
    clang = fake_tool(tmp_path / "bin", "clang", standin)
    cxx, plain = tmp_path / "timed.c", tmp_path / "plain.c"
    cxx.write_text("#include <stdio.h>\n#include <chrono>\nint main() { return 0; }\n")
    plain.write_text("#include <stdio.h>\nint main() { return 0; }\n")
    for path in (cxx, plain):
        assert isinstance(compile_omp_ptx(str(path), None, clang, "sm_86", cache=None), PtxResult)
    first, second = [ln for ln in log.read_text().splitlines() if "-fopenmp" in ln]
    assert "-x c++" in first and "-std=c++17" in first
    assert "-x c " in second + " " and "-std=c++" not in second


@posix_only
def test_compile_cache_hits_and_invalidation(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    nv = fake_tool(tmp_path / "bin", "nvcc", STANDIN.format(log=log, ptx=FIX / "saxpy.ptx"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "defs.h").write_text("#define N 1\n")
    src = proj / "k.cu"
    src.write_text('#include "defs.h"\n__global__ void saxpy() {}\n')
    cache = ResultCache(str(tmp_path / "cache"), namespace=CACHE_NAMESPACE)

    def run(source: bytes | None = None) -> PtxResult | PtxFailure:
        return compile_ptx(str(src), source, str(nv), "sm_86", cache=cache)

    first = run()
    assert isinstance(first, PtxResult) and not first.cached
    assert first.compiler_version == "99.0.1"
    check_saxpy(parse_ptx(first.ptx))
    second = run()
    assert isinstance(second, PtxResult) and second.cached and second.ptx == first.ptx
    assert log.read_text().count("run") == 1
    (proj / "defs.h").write_text("#define N 2\n")  # a local include changed: recompile
    assert not run().cached
    assert not run(b'#include "defs.h"\n// edited buffer\n').cached  # unsaved edits: recompile
    assert log.read_text().count("run") == 3
    cache.close()


@posix_only
def test_buffer_compile_resolves_local_includes_and_names_the_original(tmp_path: Path) -> None:
    # the stand-in fails unless the original folder is on the include path, then writes a PTX
    # whose .file points at the temp copy it was given
    body = """
out=""; prev=""; src=""; inc=0
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  [ "$prev" = "-I" ] && [ "$a" = "{proj}" ] && inc=1
  prev="$a"
done
for a in "$@"; do case "$a" in *.cu) src="$a";; esac; done
[ $inc = 1 ] || {{ echo "$src(1): error: cannot open source file \\"defs.h\\"" >&2; exit 2; }}
sed "s#saxpy.cu#$src#" "{ptx}" > "$out"
"""
    proj = tmp_path / "proj"
    proj.mkdir()
    nv = fake_tool(tmp_path / "bin", "nvcc", body.format(proj=proj, ptx=FIX / "saxpy.ptx"))
    src = proj / "saxpy.cu"
    src.write_text("// on disk\n")
    res = compile_ptx(str(src), b"// unsaved buffer\n", str(nv), "sm_86")
    assert isinstance(res, PtxResult), res
    m = parse_ptx(res.ptx)
    assert m.files[1] == str(src)  # not the temp copy
    assert not any("roofline-ptx-" in a for a in res.command if a.endswith(".cu"))


@posix_only
def test_an_undeclared_type_named_like_a_float_is_defined_as_the_estimate_takes_it(
    tmp_path: Path,
) -> None:
    # the stand-in knows neither dfloat nor real_t until a -D defines them: dfloat is taken
    # as float by its name (the build's -Ddfloat=float), unless a hint says double; real_t
    # says nothing of its precision, so the compile fails with its first error as before
    body = """
out=""; prev=""; src=""; args="$*"
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$1" in --version) echo 'release 99.0, V99.0.1'; exit 0;; esac
echo "$args" >> "{log}"
undefined() {{ echo "k.cu(3): error: identifier \\"$1\\" is undefined" >&2; exit 1; }}
case "$args" in *-Ddfloat=*) ;; *) undefined dfloat;; esac
for a in "$@"; do case "$a" in *.cu) src="$a";; esac; done
if grep -q real_t "$src"; then undefined real_t; fi
cp "{ptx}" "$out"
"""
    log = tmp_path / "args.log"
    nv = fake_tool(tmp_path / "bin", "nvcc", body.format(log=log, ptx=FIX / "saxpy.ptx"))
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(dfloat *x) {}\n")
    assert isinstance(compile_ptx(str(src), None, str(nv), "sm_86", cache=None), PtxResult)
    assert "-Ddfloat=float" in log.read_text().splitlines()[-1]
    src.write_text("// roofline: dfloat=double\n__global__ void k(dfloat *x) {}\n")
    assert isinstance(compile_ptx(str(src), None, str(nv), "sm_86", cache=None), PtxResult)
    assert "-Ddfloat=double" in log.read_text().splitlines()[-1]
    src.write_text("__global__ void k(dfloat *x, real_t *y) {}\n")
    res = compile_ptx(str(src), None, str(nv), "sm_86", cache=None)
    assert isinstance(res, PtxFailure) and res.reason.endswith('"real_t" is undefined')


@posix_only
def test_a_file_whose_host_code_does_not_compile_here_gives_its_device_code_ptx(
    tmp_path: Path,
) -> None:
    # the stand-in fails on a missing header, then on host code using it (image.load); the
    # device-only text (host code blanked) with an empty stand-in header compiles, and the
    # result says what was left out. A kernel error stays the error shown.
    body = """
out=""; prev=""; src=""; found=0
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  [ "$prev" = "-I" ] && [ -f "$a/SDKBitMap.h" ] && found=1
  prev="$a"
done
case "$1" in --version) echo 'release 99.0, V99.0.1'; exit 0;; esac
for a in "$@"; do case "$a" in *.cu) src="$a";; esac; done
if grep -q SDKBitMap.h "$src" && [ $found = 0 ]; then
  echo "$src:1:10: fatal error: SDKBitMap.h: No such file or directory" >&2; exit 1; fi
if grep -q 'image.load' "$src"; then
  echo "$src(5): error: identifier \\"image\\" is undefined" >&2; exit 1; fi
if grep -q 'bad_kernel' "$src"; then echo "$src(3): error: kernel error" >&2; exit 1; fi
cp "{ptx}" "$out"
"""
    nv = fake_tool(tmp_path / "bin", "nvcc", body.format(ptx=FIX / "saxpy.ptx"))
    src = tmp_path / "k.cu"
    src.write_text(
        '#include "SDKBitMap.h"\n__global__ void k(float *x) { x[0] = 1; }\n'
        "int main() {\n  SDKBitMap image;\n  image.load(0);\n}\n"
    )
    res = compile_ptx(str(src), None, str(nv), "sm_86", cache=None)
    assert isinstance(res, PtxResult), res
    assert res.adapted == "device code only, host code left out: SDKBitMap.h not found"
    src.write_text(src.read_text().replace("x[0] = 1;", "bad_kernel;"))
    res = compile_ptx(str(src), None, str(nv), "sm_86", cache=None)
    assert isinstance(res, PtxFailure) and res.reason.endswith(
        "SDKBitMap.h: No such file or directory"
    )


@needs_nvcc
def test_real_nvcc_compiles_the_device_code_of_a_file_missing_a_host_header(
    tmp_path: Path,
) -> None:
    # the kernel's fma on line 4 is in the PTX, on its own line of the original file
    src = tmp_path / "app.cu"
    src.write_text(
        '#include "image_io.h"\n'
        "__global__ void k(float *x, float a) {\n"
        "  int i = threadIdx.x;\n"
        "  x[i] = a * x[i] + 1.0f;\n"
        "}\n"
        "int main(int argc, char **argv) {\n"
        "  Image img = load_image(argv[1]);\n"
        "  k<<<1, 32>>>(img.data, 2.0f);\n"
        "}\n"
    )
    res = compile_ptx(str(src), None, str(NVCC), "sm_86", cache=None)
    assert isinstance(res, PtxResult), res
    assert "image_io.h not found" in res.adapted
    fp32 = {
        ln: mix.flops_fp32
        for f in parse_ptx(res.ptx).functions.values()
        for (_, ln), mix in f.lines.items()
    }
    assert fp32.get(4) == 2


@posix_only
def test_compile_failure_keeps_the_first_error_line(tmp_path: Path) -> None:
    nv = fake_tool(
        tmp_path / "bin",
        "nvcc",
        'echo "warning: something harmless" >&2\n'
        'echo "$PWD/k.cu(3): error: identifier \\"q\\" is undefined" >&2\n'
        'echo "1 error detected" >&2\nexit 1\n',
    )
    src = tmp_path / "k.cu"
    src.write_text("x\n")
    res = compile_ptx(str(src), None, str(nv), "sm_86")
    assert isinstance(res, PtxFailure) and not res.ok
    assert res.reason.endswith('k.cu(3): error: identifier "q" is undefined')
    assert "\n" not in res.reason
    missing = compile_ptx(str(tmp_path / "gone.cu"), None, str(nv), "sm_86")
    assert isinstance(missing, PtxFailure) and "cannot read" in missing.reason
    no_nvcc = compile_ptx(str(src), None, str(tmp_path / "no-nvcc"), "sm_86")
    assert isinstance(no_nvcc, PtxFailure) and "cannot run" in no_nvcc.reason


VERSION = "case \"$1\" in --version) echo 'release 1.0, V1.0.0'; exit 0;; esac\n"


@posix_only
def test_timeout_kills_the_compiler(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    nv = fake_tool(tmp_path / "bin", "nvcc", VERSION + f'echo $$ > "{pidfile}"\nexec sleep 30\n')
    src = tmp_path / "k.cu"
    src.write_text("x\n")
    cache = ResultCache(str(tmp_path / "cache"), namespace=CACHE_NAMESPACE)
    t0 = time.monotonic()
    res = compile_ptx(str(src), None, str(nv), "sm_86", timeout=0.5, cache=cache)
    assert isinstance(res, PtxFailure) and "timed out" in res.reason
    assert time.monotonic() - t0 < 10
    assert not _alive(int(pidfile.read_text()))
    # a timeout is not cached: the next call runs the compiler again
    pidfile.unlink()
    compile_ptx(str(src), None, str(nv), "sm_86", timeout=0.3, cache=cache)
    assert pidfile.exists()
    cache.close()


def _alive(pid: int) -> bool:
    # a killed child may linger as a zombie until reaped; treat zombies as dead
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@posix_only
async def test_async_compile_is_bounded_and_cancel_kills(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    body = VERSION + f'echo $$ > "{runs}/$$"\nexec sleep 30\n'
    nv = fake_tool(tmp_path / "bin", "nvcc", body)
    srcs = []
    for i in range(3):
        s = tmp_path / f"k{i}.cu"
        s.write_text(f"// {i}\n")
        srcs.append(s)
    sem = asyncio.Semaphore(2)
    tasks = [
        asyncio.create_task(
            compile_ptx_async(str(s), None, str(nv), "sm_86", semaphore=sem, timeout=60)
        )
        for s in srcs
    ]
    for _ in range(100):
        await asyncio.sleep(0.05)
        if len(list(runs.iterdir())) >= 2:
            break
    await asyncio.sleep(0.3)
    started = [int(p.name) for p in runs.iterdir()]
    assert len(started) == 2  # the pool is bounded
    for t in tasks:
        t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    await asyncio.sleep(0.2)
    assert not any(_alive(pid) for pid in started)
    assert len(list(runs.iterdir())) == 2  # the queued one never started


@posix_only
async def test_async_compile_result_and_cache(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    nv = fake_tool(tmp_path / "bin", "nvcc", STANDIN.format(log=log, ptx=FIX / "int_hash.ptx"))
    src = tmp_path / "h.cu"
    src.write_text("// h\n")
    cache = ResultCache(str(tmp_path / "cache"), namespace=CACHE_NAMESPACE)
    res = await compile_ptx_async(str(src), None, str(nv), "sm_86", cache=cache)
    assert isinstance(res, PtxResult)
    check_hash(parse_ptx(res.ptx))
    again = await compile_ptx_async(str(src), None, str(nv), "sm_86", cache=cache)
    assert isinstance(again, PtxResult) and again.cached
    cache.close()


# --- real compiles (when the CUDA toolkit is installed) ----------------------------------------


@needs_nvcc
@pytest.mark.parametrize(
    ("fixture", "check"),
    [("saxpy.cu", check_saxpy), ("dot_fp64.cu", check_dot), ("int_hash.cu", check_hash)],
)
def test_real_nvcc_compiles_fixture(fixture: str, check: object, tmp_path: Path) -> None:
    assert NVCC is not None
    archs = supported_archs(NVCC)
    arch = "sm_86" if not archs or 86 in archs else f"sm_{archs[0]}"
    res = compile_ptx(str(FIX / fixture), None, NVCC, arch)
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    module = parse_ptx(res.ptx)
    assert module.files[1] == str(FIX / fixture)
    assert callable(check)
    check(module)


@needs_nvcc
def test_real_nvcc_buffer_with_local_include(tmp_path: Path) -> None:
    assert NVCC is not None
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    src = tmp_path / "k.cu"
    src.write_text("// saved version does not compile\n#error stale\n")
    buf = b'#include "scale.h"\n__global__ void k(float* y) {\n    y[threadIdx.x] *= SCALE;\n}\n'
    res = compile_ptx(str(src), buf, NVCC, "sm_86")
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    counts = counts_for_kernel(parse_ptx(res.ptx), "k")
    assert counts is not None
    l3 = counts[(str(src), 3)]
    assert l3.flops_fp32 == 1 and l3.ld_global_bytes == 4 and l3.st_global_bytes == 4


@needs_nvcc
def test_real_nvcc_finds_a_header_in_a_variant_folder(tmp_path: Path) -> None:
    # app-hip/k.cu includes "scale.h", which only app-cuda/ has (a build flag would add
    # -I../app-cuda): the variant folder is searched last; an unrelated folder is not
    assert NVCC is not None
    (tmp_path / "app-cuda").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "scale.h").write_text("#error wrong folder\n")
    (tmp_path / "app-cuda" / "scale.h").write_text("#define SCALE 2.0f\n")
    (tmp_path / "app-hip").mkdir()
    src = tmp_path / "app-hip" / "k.cu"
    src.write_text('#include "scale.h"\n__global__ void k(float* y) { y[threadIdx.x] *= SCALE; }\n')
    cache = ResultCache(str(tmp_path / "cache"), namespace=CACHE_NAMESPACE)
    res = compile_ptx(str(src), None, NVCC, "sm_86", cache=cache)
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    assert counts_for_kernel(parse_ptx(res.ptx), "k") is not None
    (tmp_path / "app-cuda" / "scale.h").write_text("#define SCALE 3.0f\n")
    again = compile_ptx(str(src), None, NVCC, "sm_86", cache=cache)
    assert isinstance(again, PtxResult) and not again.cached  # the header is in the key
    (tmp_path / "app-cuda" / "scale.h").unlink()
    gone = compile_ptx(str(src), None, NVCC, "sm_86", cache=cache)
    assert isinstance(gone, PtxFailure) and "scale.h" in gone.reason
    cache.close()


def _nvcc_line_fp32(src: Path, kernel: str, line: int) -> int:
    """The FP32 FLOPs on ``line`` of ``kernel`` in the PTX nvcc compiles ``src`` to (the
    compile must succeed, the kernel have line counts)."""
    assert NVCC is not None
    res = compile_ptx(str(src), None, NVCC, "sm_86")
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    counts = counts_for_kernel(parse_ptx(res.ptx), kernel)
    assert counts is not None
    return counts[(str(src), line)].flops_fp32


@needs_nvcc
def test_real_nvcc_finds_a_header_in_the_projects_include_folder(tmp_path: Path) -> None:
    # proj/src/k.cu includes "scale.h" from proj/include/, which a build names with
    # -I../include: without that folder the compile fails on the missing header
    assert NVCC is not None
    (tmp_path / "proj" / "src").mkdir(parents=True)
    (tmp_path / "proj" / "include").mkdir()
    (tmp_path / "proj" / "include" / "scale.h").write_text("#define SCALE 2.0f\n")
    src = tmp_path / "proj" / "src" / "k.cu"
    src.write_text('#include "scale.h"\n__global__ void k(float* y) { y[threadIdx.x] *= SCALE; }\n')
    assert _nvcc_line_fp32(src, "k", 2) == 1


@needs_nvcc
def test_real_nvcc_compiles_a_device_side_launch_as_relocatable_code(tmp_path: Path) -> None:
    # a kernel launching a kernel (dynamic parallelism) compiles only with -rdc=true, which
    # the project's build passes: the retry adds it and both kernels get counts
    assert NVCC is not None
    src = tmp_path / "cdp.cu"
    src.write_text(
        "__global__ void child(float* y) { y[threadIdx.x] *= 2.0f; }\n"
        "__global__ void parent(float* y, int n) {\n"
        "    if (threadIdx.x == 0) child<<<n / 32, 32>>>(y + blockIdx.x * n);\n"
        "}\n"
    )
    res = compile_ptx(str(src), None, NVCC, "sm_86")
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    assert "-rdc=true" in res.command
    module = parse_ptx(res.ptx)
    child = counts_for_kernel(module, "child")
    assert child is not None and child[(str(src), 1)].flops_fp32 == 1
    assert counts_for_kernel(module, "parent") is not None


@needs_nvcc
def test_real_nvcc_leaves_the_host_code_out_of_the_projects_headers_too(tmp_path: Path) -> None:
    # common.h declares a host handle of a library type from cublas_v2.h, which this
    # toolkit may lack: its empty stand-in leaves the type undeclared, so the device code
    # compiles only with the header's host code left out as well (a copy; the original is
    # untouched). The kernel's multiply on line 3 keeps its line; the struct whose
    # alignment macro the grammar misreads as a function stays: the kernel uses it
    (tmp_path / "common.h").write_text(
        '#include "cublas_v2.h"\n'
        "cublasHandle_t handle;\n"
        "void check(cublasStatus_t s) { if (s != CUBLAS_STATUS_SUCCESS) exit(1); }\n"
        "struct __align__(8) Pair { float a, b; };\n"
    )
    src = tmp_path / "scale.cu"
    src.write_text(
        '#include "common.h"\n'
        "__global__ void k(Pair *p, float *y) {\n"
        "    y[threadIdx.x] = p[threadIdx.x].a * p[threadIdx.x].b;\n"
        "}\n"
        "int main() { cublasCreate(&handle); }\n"
    )
    res = compile_ptx(str(src), None, NVCC, "sm_86")
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    assert res.adapted == (
        "device code only, host code left out of it and its headers: cublas_v2.h not found"
    )
    counts = counts_for_kernel(parse_ptx(res.ptx), "k")
    assert counts is not None and counts[(str(src), 3)].flops_fp32 == 1
    assert "cublasHandle_t handle;" in (tmp_path / "common.h").read_text()


@needs_nvcc
def test_real_nvcc_keeps_what_a_template_kernels_launcher_calls_as_a_declaration(
    tmp_path: Path,
) -> None:
    # llm.c's form: launch() is kept with the device code (it instantiates scale<float>) and
    # checks the launch through cuda_check, a host function of common.h, which also needs
    # cublas_v2.h. With the header's host code left out, cuda_check is undeclared; kept as
    # a declaration (its body is host code) it compiles, and scale<float> has its PTX
    (tmp_path / "common.h").write_text(
        '#include "cublas_v2.h"\n'
        "cublasHandle_t handle;\n"
        "void cuda_check(cudaError_t e, const char *file, int line) {\n"
        '    if (e != cudaSuccess) { printf("%s:%d", file, line); exit(1); }\n'
        "}\n"
        "#define cudaCheck(e) (cuda_check(e, __FILE__, __LINE__))\n"
    )
    src = tmp_path / "scale.cu"
    src.write_text(
        '#include "common.h"\n'
        "template <typename T> __global__ void scale(T *x) {\n"
        "    x[threadIdx.x] *= 2.0f;\n"
        "}\n"
        "void launch(float *d) { scale<float><<<1, 32>>>(d); cudaCheck(cudaGetLastError()); }\n"
        "int main() { cublasCreate(&handle); }\n"
    )
    assert _nvcc_line_fp32(src, "scale", 3) == 1


@needs_nvcc
def test_real_nvcc_a_missing_cuda_library_header_still_brings_the_numeric_types(
    tmp_path: Path,
) -> None:
    # the kernel's __nv_bfloat16 comes in through cublas_v2.h (as the real header includes
    # the toolkit's cuda_bf16.h): its stand-in includes those headers, so the device code
    # compiles without cuBLAS installed (with it, the whole file compiles)
    src = tmp_path / "bf.cu"
    src.write_text(
        "#include <cublas_v2.h>\n"
        "__global__ void k(__nv_bfloat16 *y, float *x) {\n"
        "    x[threadIdx.x] = __bfloat162float(y[threadIdx.x]) * 2.0f;\n"
        "}\n"
        "int main() { cublasHandle_t h; cublasCreate(&h); }\n"
    )
    assert _nvcc_line_fp32(src, "k", 3) == 1


@needs_nvcc
def test_real_nvcc_failure_is_clean() -> None:
    assert NVCC is not None
    res = compile_ptx(str(FIX / "broken.cu"), None, NVCC, "sm_86")
    assert isinstance(res, PtxFailure)
    expected = r'broken\.cu\(5\): error: identifier "undeclared_offset" is undefined'
    assert re.search(expected, res.reason)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_real_clang_openmp_offload(tmp_path: Path) -> None:
    assert OMP_CLANG is not None
    res = compile_omp_ptx(str(FIX / "omp_saxpy.c"), None, OMP_CLANG, "sm_86", nvcc=NVCC)
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    m = parse_ptx(res.ptx)
    regions = [omp_region(k.name) for k in m.kernels]
    assert ("saxpy_omp", 6) in regions


def _clang_compiles(path: Path, text: str) -> PtxResult:
    """``text`` written to ``path`` and compiled by the OpenMP clang, which must succeed."""
    assert OMP_CLANG is not None
    path.write_text(text)
    res = compile_omp_ptx(str(path), None, OMP_CLANG, "sm_86", nvcc=NVCC)
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    return res


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_real_clang_counts_a_pragma_unrolled_body_once(tmp_path: Path) -> None:
    # `#pragma unroll` forces clang's unroller even under -fno-unroll-loops: the 8-trip body
    # on line 7 (one fma, 2 FP32 FLOP) came out 8 times, the body of unknown count on line 10
    # (one add, 1 FP32 FLOP) 4 times plus a remainder copy; the trip-count model multiplies
    # each line by its executions, so each line must hold one copy
    res = _clang_compiles(
        tmp_path / "unrolled.c",
        "void relax(float *u, const int *b, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: u[0:8*n])\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    float s = 0.0f, t = 0.0f;\n"
        "    #pragma unroll\n"
        "    for (int k = 0; k < 8; k++)\n"
        "      s += u[8 * i + k] * 1.5f;\n"
        "    #pragma unroll\n"
        "    for (int k = b[i]; k < b[i + 1]; k++)\n"
        "      t += u[k];\n"
        "    u[8 * i] = s + t;\n"
        "  }\n"
        "}\n",
    )
    fp32: dict[int, int] = {}
    for f in parse_ptx(res.ptx).functions.values():
        for (file, ln), mix in f.lines.items():
            if file.endswith("unrolled.c"):
                fp32[ln] = fp32.get(ln, 0) + mix.flops_fp32
    assert (fp32.get(7), fp32.get(10)) == (2, 1), fp32


@needs_nvcc
def test_real_nvcc_is_given_the_first_configuration_a_header_demands(tmp_path: Path) -> None:
    # int.h stops the build at `#error` unless one of SHORT, INT, LONG is defined (a
    # Makefile's -DINT): the compile gets the first, as the analysis reads the first branch
    (tmp_path / "int.h").write_text(
        "#if defined SHORT\ntypedef short int_t;\n#elif defined INT\ntypedef int int_t;\n"
        "#elif defined LONG\ntypedef long int_t;\n#else\n"
        "#error Must define one of SHORT, INT, or LONG\n#endif\n"
    )
    src = tmp_path / "k.cu"
    src.write_text('#include "int.h"\n__global__ void k(int_t *x) { x[threadIdx.x] += 1; }\n')
    assert NVCC is not None
    res = compile_ptx(str(src), None, NVCC, "sm_86")
    assert isinstance(res, PtxResult), getattr(res, "reason", "")
    assert [name for name, _ in res.required] == ["SHORT"] and "-DSHORT" in res.command
    assert "ld.global.u16" in res.ptx  # int_t is short
    chosen = compile_ptx(str(src), None, NVCC, "sm_86", extra_flags=["-DINT"])
    assert isinstance(chosen, PtxResult) and chosen.required == ()
    assert "ld.global.u32" in chosen.ptx


def test_global_names_the_nvptx_back_end_rejects_are_made_valid() -> None:
    ir = (
        '@"__const.<captured>.d" = private unnamed_addr constant [2 x i8] c"\\00\\01"\n'
        '@"__const.<captured>.d.1" = private unnamed_addr constant [2 x i8] c"\\01\\02"\n'
        "@__const__captured__d = global i32 0\n"
        '  %p = getelementptr inbounds [2 x i8], ptr @"__const.<captured>.d", i64 0, i64 %i\n'
        '  %q = load i8, ptr @"__const.<captured>.d.1"\n'
    )
    fixed = valid_global_names(ir)
    assert fixed.splitlines() == [
        '@__const__captured__d_1 = private unnamed_addr constant [2 x i8] c"\\00\\01"',
        '@__const__captured__d_1_1 = private unnamed_addr constant [2 x i8] c"\\01\\02"',
        "@__const__captured__d = global i32 0",  # a name already there is kept, not reused
        "  %p = getelementptr inbounds [2 x i8], ptr @__const__captured__d_1, i64 0, i64 %i",
        "  %q = load i8, ptr @__const__captured__d_1_1",
    ]


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_real_clang_compiles_a_region_with_a_local_constant_table(tmp_path: Path) -> None:
    # clang 16 stops with "Symbol name with unsupported characters" on the private global it
    # makes of a local const array (`__const.<captured>.bits`): compiled through IR with
    # the name made valid, the region is in the PTX with its lines
    res = _clang_compiles(
        tmp_path / "table.cpp",
        "void bits(const unsigned char *x, int *y, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(to: x[0:n]) map(from: y[0:n])\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    const unsigned char bits[16] = {0,1,1,2,1,2,2,3,1,2,2,3,2,3,3,4};\n"
        "    y[i] = bits[x[i] & 15] + bits[x[i] >> 4];\n"
        "  }\n"
        "}\n",
    )
    m = parse_ptx(res.ptx)
    assert [omp_region(k.name) for k in m.kernels] == [("bits", 2)]
    assert any(k[1] == 5 for f in m.functions.values() for k in f.lines)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
def test_real_clang_accepts_the_register_keyword_of_legacy_code(tmp_path: Path) -> None:
    # C++17 (the default standard here) makes `register` an error in clang, a warning in nvcc
    _clang_compiles(
        tmp_path / "legacy.cpp",
        "void scale(float *x, int n) {\n"
        "  #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        "  for (int i = 0; i < n; i++) { register float v = x[i]; x[i] = 2.0f * v; }\n"
        "}\n",
    )
