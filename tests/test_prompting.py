"""Prompt building and the LLM cache key (tests/fixtures/llm)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.llm.prompting import MAX_PROMPT_CHARS, build_prompt, llm_cache_key
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.kernel import Detection

FIXTURES = Path(__file__).parent / "fixtures" / "llm"


@pytest.fixture(scope="module")
def gpu():
    return load_registry().get("h100")


def load(name: str, source: bytes | None = None) -> Detection:
    path = FIXTURES / name
    return detect(source if source is not None else path.read_bytes(), str(path))


def test_offload_prompt_has_the_region_and_its_context(gpu):
    det = load("offload.cpp")
    k = det.kernels[0]
    ctx = build_prompt(k, det, gpu)
    user = ctx.messages[1]["content"]
    assert "OpenMP offload" in user and "`#pragma omp target teams distribute" in user
    assert "const double damping = 0.99;" in user  # the enclosing function before the region
    assert "9|         pos[i] = pos[i] * damping + vel[i] * dt;" in user
    assert ctx.precision == "fp64" and (ctx.first_line, ctx.last_line) == (7, 9)


def test_a_huge_kernel_is_cut_in_the_middle(gpu):
    body = "".join(f"    acc += in[{i}] * {i}.0f;\n" for i in range(3000))
    src = (
        f"__global__ void big(const float *in, float *out)\n{{\n    float acc = 0;\n{body}"
        "    out[0] = acc;\n}\n"
    )
    det = detect(src.encode(), "big.cu")
    ctx = build_prompt(det.kernels[0], det, gpu)
    user = ctx.messages[1]["content"]
    assert ctx.chars < MAX_PROMPT_CHARS + 2000
    assert "lines omitted" in user
    assert "__global__ void big" in user and "out[0] = acc;" in user


def test_cache_key_depends_on_what_the_answer_depends_on(gpu):
    other = load_registry().get("rtx3080")
    text = "__global__ void k(float *x) { x[0] = 1; }"
    base = llm_cache_key(text, gpu, "m", "zero-shot")
    assert base == llm_cache_key("__global__ void k(float*x){x[0]=1;} // c", gpu, "m", "zero-shot")
    assert base != llm_cache_key(text, other, "m", "zero-shot")
    assert base != llm_cache_key(text, gpu, "m2", "zero-shot")
    assert base != llm_cache_key(text, gpu, "m", "hinted")
    assert base != llm_cache_key(text, gpu, "m", "zero-shot", prompt_version="v0")
    assert base != llm_cache_key(text, replace(gpu, dram_bandwidth=1e12), "m", "zero-shot")
    assert base == llm_cache_key(text, replace(gpu, aliases=("x",)), "m", "zero-shot")
