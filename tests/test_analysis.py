"""analyze_file: verdicts per kernel and GPU, and reuse of unchanged kernels across edits."""

from roofline_lsp.analysis import analyze_file
from roofline_lsp.gpus import load_registry

SRC = b"""#define N 1024
__global__ void first(float *a, int n)
{
    for (int i = 0; i < n; i++) a[threadIdx.x] += 1.0f;
}

__global__ void second(double *b)
{
    for (int k = 0; k < 64; k++) b[threadIdx.x] = b[threadIdx.x] * 2.0 + 1.0;
}
"""


def gpus():
    reg = load_registry()
    return (reg.get("h100"), reg.get("rtx3080"))


def test_one_verdict_per_kernel_and_gpu():
    report = analyze_file(SRC, "a.cu", gpus())
    assert [kr.kernel.name for kr in report.kernels] == ["first", "second"]
    for kr in report.kernels:
        assert [v.gpu for v in kr.verdicts] == ["H100-SXM5-80GB", "RTX-3080"]


def test_an_edit_re_estimates_only_the_kernel_it_touches():
    g = gpus()
    before = analyze_file(SRC, "a.cu", g)
    edited = SRC.replace(b"a[threadIdx.x] += 1.0f", b"a[threadIdx.x] += 2.0f")
    after = analyze_file(edited, "a.cu", g, previous=before)
    # `second` is unchanged: the very same verdict objects are reused
    assert after.kernels[1].verdicts is before.kernels[1].verdicts
    assert after.kernels[0].verdicts is not before.kernels[0].verdicts


def test_a_kernel_that_moves_keeps_its_verdict_with_line_references_moved():
    g = gpus()
    before = analyze_file(SRC, "a.cu", g)
    moved = SRC.replace(b"#define N 1024\n", b"#define N 1024\n// a comment\n// another\n")
    after = analyze_file(moved, "a.cu", g, previous=before)
    old, new = before.kernels[1].verdict, after.kernels[1].verdict
    assert after.kernels[1].kernel.line == before.kernels[1].kernel.line + 2
    assert new.bound == old.bound and new.ai == old.ai
    fresh = analyze_file(moved, "a.cu", g).kernels[1].verdict
    assert new.explanation == fresh.explanation  # identical to a from-scratch analysis


def test_a_changed_macro_invalidates_every_kernel():
    g = gpus()
    before = analyze_file(SRC, "a.cu", g)
    after = analyze_file(SRC.replace(b"N 1024", b"N 2048"), "a.cu", g, previous=before)
    assert all(
        a.verdicts is not b.verdicts for a, b in zip(after.kernels, before.kernels, strict=True)
    )
