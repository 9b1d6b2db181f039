"""Tests of roofline_lsp.compiler.compiled_file: compile_file, the one call the CLI and the
server make."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from ptx_helpers import FIX, NVCC, OMP_CLANG, check_saxpy, fake_tool, needs_nvcc, posix_only

from roofline_lsp.compiler.compiled_file import compile_file, compile_file_sync
from roofline_lsp.compiler.demangle import omp_region
from roofline_lsp.compiler.ptx_kernels import find_kernels

# answers --version, lists no archs, and writes the saxpy PTX for files named main*, the hash
# PTX for anything else
PICKY = """
case "$1" in --version) echo 'release 1.0, V1.0.0'; exit 0;; --list-gpu-arch) exit 0;; esac
out=""; prev=""; src=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
for a in "$@"; do case "$a" in *.cu) src="$a";; esac; done
case "$(basename "$src")" in main*) cp "{saxpy}" "$out";; *) cp "{hash}" "$out";; esac
"""


@posix_only
async def test_compile_file_through_includers_and_wanted_kernels(tmp_path: Path) -> None:
    nv = fake_tool(
        tmp_path / "bin",
        "nvcc",
        PICKY.format(saxpy=FIX / "saxpy.ptx", hash=FIX / "int_hash.ptx"),
    )
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "k.cuh").write_text("// kernels\n")
    (proj / "main.cu").write_text('#include "k.cuh"\n')
    (proj / "other.cu").write_text('#include "k.cuh"\n')
    from roofline_lsp.model.gpus import load_registry

    gpu = load_registry().get("rtx3080")
    res = await compile_file(str(proj / "k.cuh"), b"// unsaved", gpu=gpu, nvcc_setting=str(nv))
    assert res.ok and res.unit == str(proj / "main.cu") and res.arch == "sm_86"
    assert "compiled through main.cu" in res.note
    assert res.module is not None and find_kernels(res.module, "saxpy")
    # the kernel wanted is only in the other includer's PTX: that one is tried next
    res2 = await compile_file(
        str(proj / "k.cuh"), None, gpu=gpu, nvcc_setting=str(nv), want=("hash_keys",)
    )
    assert res2.ok and res2.unit == str(proj / "other.cu")
    # a wanted kernel nowhere: the first successful unit is returned
    res3 = await asyncio.to_thread(  # the blocking form, from a thread without a loop
        compile_file_sync,
        str(proj / "k.cuh"),
        None,
        gpu=gpu,
        nvcc_setting=str(nv),
        want=("nowhere",),
    )
    assert res3.ok and res3.unit == str(proj / "main.cu")


async def test_compile_file_without_a_compiler_gives_a_reason(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    res = await compile_file(str(src), None, nvcc_setting=str(tmp_path / "no-nvcc"))
    assert not res.ok and res.module is None and "not an executable nvcc" in res.reason
    lonely = tmp_path / "lonely.cuh"
    lonely.write_text("// nobody includes me\n")
    if NVCC is not None:
        res2 = await compile_file(str(lonely), None, nvcc_setting=NVCC)
        assert not res2.ok and "no file includes it" in res2.reason


@needs_nvcc
async def test_compile_file_real_nvcc_with_unsaved_buffer(tmp_path: Path) -> None:
    src = tmp_path / "saxpy.cu"
    src.write_text("#error the saved file is stale\n")
    from roofline_lsp.model.gpus import load_registry

    res = await compile_file(
        str(src), (FIX / "saxpy.cu").read_bytes(), gpu=load_registry().get("h100"),
        nvcc_setting=NVCC, want=("saxpy",),
    )  # fmt: skip
    assert res.ok, res.reason
    assert res.arch == "sm_90" and res.unit == str(src) and res.compiler == "nvcc"
    assert res.module is not None
    check_saxpy(res.module)


@pytest.mark.skipif(OMP_CLANG is None, reason="no clang with the OpenMP NVPTX runtime")
async def test_a_region_an_ifdef_keeps_out_is_compiled_with_the_name_defined(
    tmp_path: Path,
) -> None:
    # without -DOMP_TARGET the region on line 4 is a host loop and its PTX has no kernel;
    # the analysis reads it as offloaded, so it is compiled again with the name defined
    src = tmp_path / "saxpy.c"
    src.write_text(
        "void saxpy(int n, float a, const float *x, float *y) {\n"
        "  int i;\n"
        "#ifdef OMP_TARGET\n"
        "#pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n])\n"
        "#endif\n"
        "  for (i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n"
        "}\n"
    )
    res = await compile_file(str(src), language="omp", arch="sm_86", want=("@4",))
    assert res.ok and res.module is not None
    assert res.adapted == "-DOMP_TARGET: the #ifdef around the region"
    assert [omp_region(k.name) for k in res.module.kernels] == [("saxpy", 4)]


@needs_nvcc
async def test_a_kernel_an_ifdef_keeps_out_is_compiled_with_the_name_defined(
    tmp_path: Path,
) -> None:
    # the kernel exists only with -DGPU (the build's flag): a second compile defines it
    src = tmp_path / "haar.cu"
    src.write_text(
        "#ifdef GPU\n"
        "__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }\n"
        "#endif\n"
        "int main() { return 0; }\n"
    )
    res = await compile_file(str(src), arch="sm_86", nvcc_setting=str(NVCC), want=("scale",))
    assert res.ok and res.module is not None and find_kernels(res.module, "scale")
    assert res.adapted == "-DGPU: the #ifdef around the kernel"
