"""Reuse across edits (``engine/reuse.py``, through ``engine/analysis.py``): an edit
re-estimates only the kernels whose context changed; a moved kernel keeps its verdicts with
their line fields moved, only when everything it refers to moved with it."""

import pytest

from roofline_lsp.engine.analysis import analyze_file
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.terms import LoopTerm
from roofline_lsp.present.explanations import explanation
from roofline_lsp.syntax.sources import SourceView

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
    assert explanation(new) == explanation(fresh)  # identical to a from-scratch analysis


def test_a_changed_macro_invalidates_every_kernel():
    g = gpus()
    before = analyze_file(SRC, "a.cu", g)
    after = analyze_file(SRC.replace(b"N 1024", b"N 2048"), "a.cu", g, previous=before)
    assert all(
        a.verdicts is not b.verdicts for a, b in zip(after.kernels, before.kernels, strict=True)
    )


CALLS = b"""__device__ double poly(double x)
{
    double r = 0.0;
    for (int k = 0; k < 40; k++)
        r = r * x + 1.0 / (k + 1);
    return r;
}

__global__ void apply(int n, const double *x, double *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = poly(x[i]);
}
"""


def test_a_kernel_moving_with_its_callee_is_reused_with_callee_lines_moved():
    g = gpus()
    before = analyze_file(CALLS, "c.cu", g)
    moved = b"// header comment\n// two\n// three\n" + CALLS
    after = analyze_file(moved, "c.cu", g, previous=before)
    assert after.kernels[0].verdicts is not before.kernels[0].verdicts  # moved: shifted copy
    fresh = analyze_file(moved, "c.cu", g).kernels[0].verdicts
    assert [explanation(v) for v in after.kernels[0].verdicts] == [explanation(v) for v in fresh]
    assert [v.terms for v in after.kernels[0].verdicts] == [v.terms for v in fresh]
    assert any(
        isinstance(t, LoopTerm) and t.line == 7 for t in fresh[0].terms
    )  # the callee's loop, 3 lines lower


def test_an_edit_between_a_kernel_and_its_callee_re_estimates_it():
    g = gpus()
    before = analyze_file(CALLS, "c.cu", g)
    edited = CALLS.replace(b"}\n\n__global__", b"}\n// a note\n\n__global__")
    after = analyze_file(edited, "c.cu", g, previous=before)
    fresh = analyze_file(edited, "c.cu", g).kernels[0].verdicts
    assert after.kernels[0].verdicts == fresh
    assert after.kernels[0].key != before.kernels[0].key


CHAIN = b"""struct Cell { float v[4]; };

__global__ void scale(int n, Cell *c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) for (int k = 0; k < 4; k++) c[i].v[k] *= 2.0f;
}

void run(int n, Cell *c)
{
    scale<<<(n + 255) / 256, 256>>>(n, c);
}

int main()
{
    int n = 1 << 10;
    Cell *c;
    cudaMalloc(&c, n * sizeof(Cell));
    run(n, c);
    return 0;
}
"""


@pytest.mark.parametrize(
    "old, new",
    [
        (b"int n = 1 << 10;", b"int n = 1 << 26;"),  # the size, two calls away
        (b"float v[4];", b"double v[4];"),  # a file-scope type
    ],
)
def test_edits_outside_the_kernel_that_change_its_inputs_re_estimate_it(old, new):
    g = gpus()
    before = analyze_file(CHAIN, "chain.cu", g)
    edited = CHAIN.replace(old, new)
    after = analyze_file(edited, "chain.cu", g, previous=before)
    fresh = analyze_file(edited, "chain.cu", g)
    assert after.kernels[0].verdicts == fresh.kernels[0].verdicts
    assert after.kernels[0].verdicts != before.kernels[0].verdicts


OMP = b"""#include <stdlib.h>
void work(int n, float *x)
{
    float *y = (float *)malloc(n * sizeof(float));
    #pragma omp target teams distribute parallel for map(to: x[0:n]) map(from: y[0:n])
    for (int i = 0; i < n; i++) y[i] = x[i] * 2.0f;
}

int main() { float x[64]; work(1 << 8, x); return 0; }
"""


def test_an_edit_in_a_regions_host_function_or_its_caller_re_estimates_it():
    g = gpus()
    before = analyze_file(OMP, "o.cpp", g)
    for old, new in ((b"float *y = (float", b"double *y = (double"), (b"1 << 8", b"1 << 24")):
        edited = OMP.replace(old, new)
        after = analyze_file(edited, "o.cpp", g, previous=before)
        assert after.kernels[0].key != before.kernels[0].key
        assert after.kernels[0].verdicts == analyze_file(edited, "o.cpp", g).kernels[0].verdicts


def test_reads_of_the_file_itself_never_stop_reuse(tmp_path):
    # the folder scan for sibling files also versions the analysed file; its own edits are
    # covered by the context keys, so they must not throw away every kernel's verdicts
    path = tmp_path / "a.cu"
    path.write_bytes(SRC)
    buffers = {str(path): SRC}
    before = analyze_file(SRC, str(path), gpus(), read=SourceView(buffers.get, overlay=True))
    assert all(s.path != str(path) for s in before.reads)
    edited = SRC.replace(b"k < 64", b"k < 65")  # touches the second kernel only
    buffers[str(path)] = edited
    after = analyze_file(
        edited, str(path), gpus(), previous=before, read=SourceView(buffers.get, overlay=True)
    )
    assert after.kernels[0].verdicts is before.kernels[0].verdicts
    assert after.kernels[1].verdicts is not before.kernels[1].verdicts


HELPER = b"""static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

__global__ void grow(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < gridDim.x; k++) x[i] += 1.0f;
}

void run(float *x) { grow<<<ceil_div(1 << 20, 256), 256>>>(x, 1 << 20); }
"""


def test_an_edit_in_a_helper_the_launch_calls_re_estimates_the_kernel():
    g = gpus()
    before = analyze_file(HELPER, "h.cu", g)
    edited = HELPER.replace(b"return (a + b - 1) / b;", b"return 4 * ((a + b - 1) / b);")
    after = analyze_file(edited, "h.cu", g, previous=before)
    assert after.kernels[0].key != before.kernels[0].key
    assert after.kernels[0].verdicts == analyze_file(edited, "h.cu", g).kernels[0].verdicts
    assert after.kernels[0].verdicts != before.kernels[0].verdicts
