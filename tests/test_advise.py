"""The advice entry point: its cache reuses and moves the advice of unchanged kernels."""

from __future__ import annotations

from roofline_lsp.advice.advise import advise
from roofline_lsp.engine.analysis import analyze_file


def test_advice_cache_reuses_unchanged_kernels_and_moves_their_advice():
    from roofline_lsp.model.gpus import load_registry

    gpu = load_registry().get("rtx3080")
    src = (
        b"__global__ void a(float *x, float *y) { int i = threadIdx.x;"
        b" y[i] = x[i] * (1.5 + x[0]); }\n"
        b"__global__ void b(float *x, float *y) { int i = threadIdx.x;"
        b" y[i] = x[i] * (2.5 + x[0]); }\n"
    )
    cache: dict = {}
    first = analyze_file(src, "k.cu", (gpu,))
    advise(first, gpu, cache)
    edited = b"// moved down by a comment\n" + src
    second = analyze_file(edited, "k.cu", (gpu,), previous=first)
    reused = advise(second, gpu, cache)
    fresh = advise(analyze_file(edited, "k.cu", (gpu,)), gpu)
    assert reused == fresh and any(a.code == "RL001" for a in reused)
    assert len(cache) == 2


def test_reused_advice_moves_its_line_references_with_the_kernel():
    from roofline_lsp.model.gpus import load_registry

    gpu = load_registry().get("rtx3080")
    src = (
        b"void step(int n, float *x, int reps)\n{\n"
        b"    for (int r = 0; r < reps; r++) {\n"
        b"        #pragma omp target teams distribute parallel for map(tofrom: x[0:n])\n"
        b"        for (int i = 0; i < n; i++) x[i] = x[i] * 0.5f + 1.0f;\n"
        b"    }\n}\n"
    )
    cache: dict = {}
    first = analyze_file(src, "s.cpp", (gpu,))
    before = advise(first, gpu, cache)
    assert any(a.code == "RL012" and "line 3" in a.message for a in before)
    edited = b"// one\n// two\n" + src
    second = analyze_file(edited, "s.cpp", (gpu,), previous=first)
    assert second.kernels[0].verdicts[0].bound == first.kernels[0].verdicts[0].bound
    reused = advise(second, gpu, cache)
    assert reused == advise(analyze_file(edited, "s.cpp", (gpu,)), gpu)
    assert any(a.code == "RL012" and "line 5" in a.message for a in reused)
