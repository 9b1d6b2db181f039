"""One file's analysis (``engine/analysis.py``): a verdict per kernel and GPU, and kernels
given a compile's outcome are estimated again with it."""

from roofline_lsp.compiler.kernel_ptx import CompiledCounts
from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.terms import NoteTerm
from roofline_lsp.syntax.sources import read_from_disk

SRC = b"""__global__ void first(float *a) { a[threadIdx.x] *= 2.0f; }
__global__ void second(double *b) { b[threadIdx.x] = b[threadIdx.x] * 2.0 + 1.0; }
"""


def gpus():  # the target GPU first
    registry = load_registry()
    return (registry.get("h100"), registry.get("rtx3080"))


def test_one_verdict_per_kernel_and_gpu():
    report = analyze_file(SRC, "a.cu", gpus())
    assert [kr.kernel.name for kr in report.kernels] == ["first", "second"]
    for kr in report.kernels:
        assert [v.gpu for v in kr.verdicts] == ["H100-SXM5-80GB", "RTX-3080"]


def test_a_kernel_given_a_compile_outcome_is_estimated_again_with_it():
    before = analyze_file(SRC, "a.cu", gpus())
    failed = CompiledCounts(reason="nvcc: error: boom")
    after = analyze_file(SRC, "a.cu", gpus(), previous=before, compiled={1: failed})
    first, second = after.kernels
    assert first.verdicts is not before.kernels[0].verdicts  # estimated again
    assert first.verdict.terms[-1] == NoteTerm("counts: source (nvcc: error: boom)")
    assert second.verdicts is before.kernels[1].verdicts  # no outcome: reused


def test_an_unsaved_header_changes_the_verdict_of_the_kernel_that_includes_it(tmp_path):
    header = tmp_path / "work.h"
    header.write_bytes(b"__device__ float work(float v) { return v + 1.0f; }\n")
    main = tmp_path / "main.cu"
    src = b"""#include "work.h"
__global__ void k(float *x) { int i = blockIdx.x * blockDim.x + threadIdx.x; x[i] = work(x[i]); }
"""
    main.write_bytes(src)
    heavy = (
        b"__device__ float work(float v) {\n"
        b"  for (int j = 0; j < 4096; j++) v = v * 1.0001f + 0.5f;\n"
        b"  return v;\n}\n"
    )
    buffers = {str(header): heavy}

    def read(path):
        return buffers[path] if path in buffers else read_from_disk(path)

    disk = analyze_file(src, str(main), gpus())
    edited = analyze_file(src, str(main), gpus(), read=read)
    assert disk.kernels[0].verdict.bound == "bandwidth"
    assert edited.kernels[0].verdict.bound == "compute"
    assert edited.kernels[0].verdict.counts.flops != disk.kernels[0].verdict.counts.flops
    # without a reader the disk is read again, not the buffer's cached result
    assert analyze_file(src, str(main), gpus()).kernels[0].verdict == disk.kernels[0].verdict


def test_an_unsaved_header_s_typedef_changes_the_kernel_s_precision(tmp_path):
    # real.h's alias reaches the kernel that includes it, from the editor's buffer: float
    # on disk, double in the unsaved buffer (the same 2 FLOP per thread, now FP64)
    header = tmp_path / "real.h"
    header.write_bytes(b"typedef float real_t;\n")
    main = tmp_path / "main.cu"
    src = b"""#include "real.h"
__global__ void k(real_t *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i] = x[i] * x[i] + x[i];
}
"""
    main.write_bytes(src)
    buffers = {str(header): b"typedef double real_t;\n"}

    def read(path):
        return buffers[path] if path in buffers else read_from_disk(path)

    disk = analyze_file(src, str(main), gpus()).kernels[0].verdict.counts.flops
    edited = analyze_file(src, str(main), gpus(), read=read).kernels[0].verdict.counts.flops
    assert (disk["fp32"], disk["fp64"]) == (2.0, 0.0)
    assert (edited["fp32"], edited["fp64"]) == (0.0, 2.0)


def test_an_unsaved_sibling_changes_the_verdict_of_a_kernel_calling_into_it(tmp_path):
    dev = tmp_path / "dev.cu"
    dev.write_bytes(b"__device__ float work(float v) { return v + 1.0f; }\n")
    main = tmp_path / "main.cu"
    src = b"""__device__ float work(float v);
__global__ void k(float *x) { int i = blockIdx.x * blockDim.x + threadIdx.x; x[i] = work(x[i]); }
"""
    main.write_bytes(src)
    heavy = (
        b"__device__ float work(float v) {\n"
        b"  for (int j = 0; j < 4096; j++) v = v * 1.0001f + 0.5f;\n"
        b"  return v;\n}\n"
    )

    def read(path):
        return heavy if path == str(dev) else read_from_disk(path)

    disk = analyze_file(src, str(main), gpus())
    edited = analyze_file(src, str(main), gpus(), read=read)
    assert disk.kernels[0].verdict.bound == "bandwidth"
    assert edited.kernels[0].verdict.bound == "compute"
    assert analyze_file(src, str(main), gpus()).kernels[0].verdict == disk.kernels[0].verdict
