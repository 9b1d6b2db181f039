"""The other source files of a kernel's folder (``detect/program.py``), read from disk or
through a reader that answers an editor's unsaved buffers first."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.detect.program import (
    MAX_SIBLINGS,
    FunctionTable,
    defined_in_siblings,
    included_body,
    sibling_stamps,
    units_mentioning,
)
from roofline_lsp.estimate.roofline import estimate
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.syntax.sources import SourceReader, read_from_disk

KERNEL = b"""__device__ float work(float v);
__global__ void k(float *x) { int i = blockIdx.x * blockDim.x + threadIdx.x; x[i] = work(x[i]); }
"""
LIGHT = b"__device__ float work(float v) { return v + 1.0f; }\n"
HEAVY = (
    b"__device__ float work(float v) {\n"
    b"  for (int j = 0; j < 4096; j++) v = v * 1.0001f + 0.5f;\n"
    b"  return v;\n}\n"
)


def reader(buffers: dict[str, bytes]) -> SourceReader:
    """Open buffers first, then the disk (what the language server passes)."""
    return lambda p: buffers[p] if p in buffers else read_from_disk(p)


def folder(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "k.cu").write_bytes(KERNEL)
    (tmp_path / "dev.cu").write_bytes(LIGHT)
    return str(tmp_path / "k.cu"), str(tmp_path / "dev.cu")


def test_units_mentioning_reads_unsaved_siblings(tmp_path: Path) -> None:
    path, dev = folder(tmp_path)
    pat = re.compile(rb"\bwork\s*\(")
    assert [u.path for u in units_mentioning(path, pat)] == [dev]
    renamed = reader({dev: LIGHT.replace(b"work", b"other")})
    assert list(units_mentioning(path, pat, renamed)) == []
    heavy = reader({dev: HEAVY})
    (unit,) = units_mentioning(path, pat, heavy)
    assert unit.detection.source == HEAVY
    # the disk again: not the buffer's cached parse
    (unit,) = units_mentioning(path, pat)
    assert unit.detection.source == LIGHT


def test_a_sibling_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    # rewriting a file leaves its folder's time alone: the file's own version tells
    path, dev = folder(tmp_path)
    pat = re.compile(rb"\bwork\s*\(")
    (unit,) = units_mentioning(path, pat)
    assert unit.detection.source == LIGHT
    Path(dev).write_bytes(HEAVY)
    (unit,) = units_mentioning(path, pat)
    assert unit.detection.source == HEAVY


def test_a_bare_file_name_has_the_working_directory_s_siblings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``roofline-lsp check k.cu`` run in the folder: the siblings are those of ``./k.cu``;
    # a buffer with no file (``untitled:1``) has none
    folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    pat = re.compile(rb"\bwork\s*\(")
    assert [os.path.basename(u.path) for u in units_mentioning("k.cu", pat)] == ["dev.cu"]
    assert defined_in_siblings("k.cu", "work") is not None
    assert list(units_mentioning("untitled:1", pat)) == []


def test_defined_in_siblings_and_the_function_table_read_unsaved_siblings(
    tmp_path: Path,
) -> None:
    path, dev = folder(tmp_path)
    unit = defined_in_siblings(path, "work")
    assert unit is not None and unit.path == dev
    renamed = reader({dev: LIGHT.replace(b"work", b"other")})
    assert defined_in_siblings(path, "work", renamed) is None
    assert defined_in_siblings(path, "other", renamed) is not None
    det = detect(KERNEL, path)
    assert FunctionTable(det, read=renamed).get("work") is None
    node = FunctionTable(det, read=reader({dev: HEAVY})).get("work")
    assert node is not None and node.text is not None and b"4096" in node.text
    node = FunctionTable(det).get("work")
    assert node is not None and node.text is not None and b"4096" not in node.text


def test_a_device_function_in_an_unsaved_sibling_changes_the_verdict(tmp_path: Path) -> None:
    path, dev = folder(tmp_path)
    gpu = load_registry().get("h100")
    det = detect(KERNEL, path)
    disk = estimate(det.kernels[0], det, gpu)
    edited = estimate(det.kernels[0], det, gpu, read=reader({dev: HEAVY}))
    assert disk.bound == "bandwidth" and edited.bound == "compute"
    assert edited.counts.flops["fp32"] > disk.counts.flops["fp32"]
    assert estimate(det.kernels[0], det, gpu) == disk


def test_a_sibling_function_s_loop_bound_is_a_macro_of_its_own_file(tmp_path: Path) -> None:
    # fresnel: Asymptotic_Series in cosine.cu loops to NUM_TERMS, defined above it there and
    # not in the kernel's file: 34 trips of 2 FLOP (a multiply and an add) give 68 FP32 FLOP
    # per thread (before: the 16-trip default, 32)
    path, dev = folder(tmp_path)
    (tmp_path / "dev.cu").write_bytes(
        b"#define NUM_TERMS 35\n"
        b"__device__ float work(float v) {\n"
        b"  for (int i = 1; i < NUM_TERMS; i++) v = v * 0.5f + 1.0f;\n"
        b"  return v;\n}\n"
    )
    det = detect(KERNEL, path)
    a = estimate(det.kernels[0], det, load_registry().get("rtx3080"))
    assert a.counts.flops["fp32"] == 68


def test_a_sibling_header_seen_through_its_unit_is_current(tmp_path: Path) -> None:
    """A sibling's parse is cached with the headers it included: an edited header is seen."""
    path, dev = folder(tmp_path)
    (tmp_path / "dev.cu").write_bytes(b'#include "n.h"\n' + LIGHT)
    (tmp_path / "n.h").write_bytes(b"#define N 1\n")
    pat = re.compile(rb"\bwork\s*\(")
    (unit,) = units_mentioning(path, pat)
    assert unit.detection.constants["N"] == "1"
    (unit,) = units_mentioning(path, pat, reader({str(tmp_path / "n.h"): b"#define N 2\n"}))
    assert unit.detection.constants["N"] == "2"
    (unit,) = units_mentioning(path, pat)
    assert unit.detection.constants["N"] == "1"
    header = tmp_path / "n.h"
    st = header.stat()
    header.write_bytes(b"#define N 3\n")  # saved: the unit of dev.cu (unchanged) is stale
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    (unit,) = units_mentioning(path, pat)
    assert unit.detection.constants["N"] == "3"


def test_sibling_stamps(tmp_path: Path) -> None:
    path, dev = folder(tmp_path)
    disk = sibling_stamps(path)
    assert [os.path.basename(s.path) for s in disk] == ["dev.cu", "k.cu"]
    buffered = sibling_stamps(path, reader({dev: HEAVY}))
    assert [s.path for s in buffered] == [s.path for s in disk]
    assert buffered != sibling_stamps(path, reader({}))
    assert sibling_stamps("k.cu") == ()


REGION = b"""void scale(float *x, int n) {
  #pragma omp target teams distribute parallel for map(tofrom: x[0:n])
  for (int i = 0; i < n; i++) {
    #include "body.h"
  }
}
"""


def test_a_body_included_in_a_region_is_read_through_the_reader(tmp_path: Path) -> None:
    # body.h on disk does one FADD per iteration; the unsaved buffer does an FMA as well
    path = str(tmp_path / "scale.cpp")
    body = str(tmp_path / "body.h")
    (tmp_path / "scale.cpp").write_bytes(REGION)
    (tmp_path / "body.h").write_bytes(b"x[i] = x[i] + 1.0f;\n")
    found = included_body("body.h", path)
    assert found is not None and found[0] == body
    assert included_body("body.h", "") is None  # an unsaved file has no folder
    assert included_body("missing.h", path) is None
    gpu = load_registry().get("h100")
    det = detect(REGION, path)
    disk = estimate(det.kernels[0], det, gpu)
    edited = estimate(
        det.kernels[0], det, gpu, read=reader({body: b"x[i] = x[i] * 2.0f + 1.0f;\n"})
    )
    assert disk.counts is not None and edited.counts is not None
    assert disk.counts.flops["fp32"] == 1.0 and edited.counts.flops["fp32"] == 2.0


VARIANT_REGION = b"""#include "consts.h"
void relax(float *x) {
  #pragma omp target teams distribute parallel for map(tofrom: x[0:N])
  for (int i = 0; i < N; i++) {
#include "relax_body.h"
  }
}
"""


def test_headers_of_a_variant_folder_give_constants_and_bodies(tmp_path: Path) -> None:
    # app-omp/main.cpp includes consts.h and relax_body.h, which only app-cuda/ has (its
    # build adds -I../app-cuda): N = 10000 iterations, one FMA (2 FLOP) each
    (tmp_path / "app-cuda").mkdir()
    (tmp_path / "app-cuda" / "consts.h").write_bytes(b"constexpr int N = 10000;\n")
    (tmp_path / "app-cuda" / "relax_body.h").write_bytes(b"x[i] = x[i] * 0.5f + 1.0f;\n")
    (tmp_path / "app-omp").mkdir()
    path = str(tmp_path / "app-omp" / "main.cpp")
    (tmp_path / "app-omp" / "main.cpp").write_bytes(VARIANT_REGION)
    found = included_body("relax_body.h", path)
    assert found is not None and found[0] == str(tmp_path / "app-cuda" / "relax_body.h")
    det = detect(VARIANT_REGION, path)
    assert det.constants.get("N") == "10000"
    a = estimate(det.kernels[0], det, load_registry().get("h100"))
    assert a.counts is not None and a.counts.threads == 10000
    assert a.counts.flops["fp32"] == 2.0


def test_a_kernel_in_a_shared_header_folder_is_launched_from_the_project(tmp_path: Path) -> None:
    # inc/kern.cuh defines the kernel; src/main.cu includes it (-I../inc) and launches it
    # with 4096 x 256 threads: the header's kernel gets that launch (before: no launch
    # found, 1 M threads assumed), and the stamps that key it cover src/
    (tmp_path / "inc").mkdir()
    (tmp_path / "src").mkdir()
    header = tmp_path / "inc" / "kern.cuh"
    header.write_bytes(
        b"__global__ void scale(float *x) {\n"
        b"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  x[i] *= 2.0f;\n}\n"
    )
    main = tmp_path / "src" / "main.cu"
    main.write_bytes(b'#include "kern.cuh"\nint main() { float *x; scale<<<4096, 256>>>(x); }\n')
    pat = re.compile(rb"\bscale\s*<<<")
    assert [u.path for u in units_mentioning(str(header), pat)] == [str(main)]
    assert str(main) in {s.path for s in sibling_stamps(str(header))}
    det = detect(header.read_bytes(), str(header))
    v = estimate(det.kernels[0], det, load_registry().get("rtx3080"))
    assert v.counts is not None and v.counts.threads == 4096 * 256


def test_a_large_folder_s_closest_files_are_the_siblings(tmp_path: Path) -> None:
    # 30 sources, more than MAX_SIBLINGS: stencil_cuda.hpp's kernel is launched (through a
    # function pointer set to it) by stencil-cuda.cu, last by name; the files whose names
    # are closest come first, so the launch is found (before: the first 24 by name only,
    # no launch found, 1 M threads assumed)
    for k in range(29):
        (tmp_path / f"a{k:02d}.cu").write_bytes(b"int helper(int x) { return x; }\n")
    header = tmp_path / "stencil_cuda.hpp"
    header.write_bytes(
        b"__global__ void star1(float *x) {\n"
        b"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  x[i] *= 2.0f;\n}\n"
    )
    main = tmp_path / "stencil-cuda.cu"
    main.write_bytes(
        b'#include "stencil_cuda.hpp"\n'
        b"int main() { float *x; auto k = star1;\n  k<<<4096, 256>>>(x); }\n"
    )
    assert MAX_SIBLINGS < 30
    assert str(main) in {s.path for s in sibling_stamps(str(header))}
    det = detect(header.read_bytes(), str(header))
    v = estimate(det.kernels[0], det, load_registry().get("rtx3080"))
    assert v.counts is not None and v.counts.threads == 4096 * 256
