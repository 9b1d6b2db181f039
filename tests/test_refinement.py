"""Where a verdict comes from (``engine/refinement.py``): a measured profile outranks the
estimate, an LLM answer replaces only an estimate, and the launch in the LLM's prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.engine.refinement import AUTHORITY, ask_llm, kernel_verdicts, wants_llm
from roofline_lsp.estimate.roofline import Inputs
from roofline_lsp.measured.ncu import load_profile
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.verdict import Verdict

NCU = Path(__file__).parent / "fixtures" / "ncu"


@pytest.fixture(scope="module")
def gpus():  # type: ignore[no-untyped-def]
    reg = load_registry()
    return (reg.get("rtx3080"), reg.get("h100"))


def test_a_measured_kernel_gets_the_measured_verdict_the_others_the_estimate(gpus) -> None:  # type: ignore[no-untyped-def]
    path = NCU / "kernels.cu"
    det = detect(path.read_bytes(), str(path))
    measured = load_profile(str(NCU / "profile_raw.csv"))
    by_name = {k.name: k for k in det.kernels}
    saxpy = kernel_verdicts(by_name["saxpy"], det, gpus, Config(), measured=measured)
    assert [v.source for v in saxpy] == ["profile", "profile"]
    assert [v.gpu for v in saxpy] == [g.name for g in gpus]
    unmeasured = [k for k in det.kernels if measured.verdict_for(k, gpus[0]) is None]
    assert unmeasured
    for k in unmeasured:
        assert {v.source for v in kernel_verdicts(k, det, gpus, Config(), measured=measured)} == {
            "static"
        }


def test_only_an_estimate_is_replaced_by_an_llm_answer() -> None:
    assert AUTHORITY == ("profile", "llm", "static")

    def v(source: str) -> Verdict:
        return Verdict("k", "RTX-3080", "compute", source, 1.0, {}, {}, None)  # type: ignore[arg-type]

    assert [wants_llm(v(s)) for s in AUTHORITY] == [False, False, True]


class _Backend:
    """Records what the engine asks; the real backend is tested against a chat server."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    async def verdict(  # type: ignore[no-untyped-def]
        self, kernel, detection, gpu, static=None, measured=None, launch=None, *, inputs=None
    ):
        self.calls.append({"launch": launch, "inputs": inputs, "static": static})
        return static


async def test_the_prompt_carries_the_rows_launch_or_the_first_visible_one(gpus) -> None:  # type: ignore[no-untyped-def]
    src = (
        b"__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n"
        b"void host(float *x) { k<<<4, 256>>>(x); k<<<8, 128>>>(x); }\n"
    )
    det = detect(src, "k.cu")
    (kernel,) = det.kernels
    backend = _Backend()
    await ask_llm(backend, kernel, det, gpus[0], None)  # type: ignore[arg-type]
    rows = Inputs(block=(32, 1, 1), grid=(1, 1, 1))
    await ask_llm(backend, kernel, det, gpus[0], None, inputs=rows)  # type: ignore[arg-type]
    first, given = backend.calls
    assert first["launch"] is det.launches_of(kernel)[0] and first["inputs"] is None
    assert given["launch"] is None and given["inputs"] is rows
