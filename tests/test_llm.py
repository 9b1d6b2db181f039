"""The LLM backend against a real HTTP chat-completions server on 127.0.0.1 (tests/chat_server.py),
through the real ``openai`` client."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import replace
from pathlib import Path

import diskcache
import pytest
from chat_server import ChatServer, Reply, answer, await_requests
from cli_helpers import run

from roofline_lsp.detect.kernels import detect
from roofline_lsp.llm import backend as llm
from roofline_lsp.llm.backend import LlmBackend, LlmError
from roofline_lsp.model.config import LlmConfig
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.kernel import Detection, Kernel
from roofline_lsp.model.terms import NoteTerm
from roofline_lsp.model.verdict import Counts, Verdict

FIXTURES = Path(__file__).parent / "fixtures" / "llm"
KEY_ENV = "ROOFLINE_TEST_LLM_KEY"
SECRET = "sk-roofline-test-SECRET-4f9a8b7c6d5e3f2a1b0c"


@pytest.fixture(scope="module")
def gpu():
    return load_registry().get("h100")


def load(name: str, source: bytes | None = None) -> Detection:
    path = FIXTURES / name
    return detect(source if source is not None else path.read_bytes(), str(path))


def kernel(det: Detection, name: str) -> Kernel:
    return next(k for k in det.kernels if k.name == name)


def make_backend(
    server: ChatServer, tmp_path: Path, env: dict[str, str] | None = None, **cfg: object
) -> LlmBackend:
    config = LlmConfig(
        base_url=server.base_url,
        model="test-model",
        api_key_env=KEY_ENV,
        cache_dir=str(tmp_path / "cache"),
        timeout=5.0,
    )
    config = replace(config, **cfg)  # type: ignore[arg-type]
    return LlmBackend(config, env={KEY_ENV: SECRET} if env is None else env, backoff=0.01)


# --------------------------------------------------------------------------------------------
# a verdict end to end
# --------------------------------------------------------------------------------------------


async def test_answer_becomes_an_llm_verdict(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "smooth_rows")
    chat_server.script(
        answer(
            "bandwidth",
            confidence=0.8,
            arithmetic_intensity=0.31,
            rationale="Streams three floats per element.",
            suggestions=[{"line": 13, "message": "Load in[i-1..i+1] once via shared memory."}],
        )
    )
    b = make_backend(chat_server, tmp_path)
    try:
        v = await b.verdict(k, det, gpu)
    finally:
        await b.aclose()
    assert (v.source, v.bound, v.gpu, v.kernel) == ("llm", "bandwidth", gpu.name, "smooth_rows")
    assert v.confidence == pytest.approx(0.8)
    assert v.rationale == "Streams three floats per element."
    assert v.ai["fp32"] == pytest.approx(0.31) and v.deciding == "fp32"
    assert v.ridge == gpu.ridges()
    assert [(s.line, s.message) for s in v.suggestions] == [
        (13, "Load in[i-1..i+1] once via shared memory.")
    ]
    assert v.extra["cached"] is False and v.extra["model"] == "test-model"
    assert (b.stats.requests, b.stats.prompt_tokens, b.stats.completion_tokens) == (1, 100, 20)

    (req,) = chat_server.chat_requests()
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    body = req.json
    assert body["model"] == "test-model"
    assert body["max_tokens"] == 1024 and body["temperature"] == pytest.approx(0.1)
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["required"][0] == "bound"
    # context: the kernel, the device function it calls, its launch, the GPU's ridge points
    user = req.user
    assert "out[i] = blend(in[i - 1], in[i + 1]) + in[i];" in user
    assert "13|" in user and "9| __global__ void smooth_rows" in user
    assert "Device function `blend`" in user and "0.25f * a + 0.75f * b" in user
    assert "grid `n / 128`" in user and "block `128` = (128, 1, 1)" in user
    assert gpu.name in user and "ridge point 20 FLOP/byte" in user
    assert "int main()" not in user  # the rest of the file is not sent
    assert req.messages[0]["role"] == "system" and "roofline" in req.messages[0]["content"]


async def test_second_run_is_served_from_the_cache(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "scale")
    chat_server.script(
        answer("bandwidth", 0.7, 0.125, "One multiply per 8 bytes.", [{"line": 19, "message": "m"}])
    )
    b1 = make_backend(chat_server, tmp_path)
    v1 = await b1.verdict(k, det, gpu)
    await b1.aclose()
    b2 = make_backend(chat_server, tmp_path)  # a new process would do the same
    v2 = await b2.verdict(k, det, gpu)
    await b2.aclose()
    assert len(chat_server.chat_requests()) == 1
    assert (b2.stats.requests, b2.stats.cache_hits) == (0, 1)
    assert v2.extra["cached"] is True
    assert (v2.bound, v2.rationale, v2.suggestions, v2.ai) == (
        v1.bound,
        v1.rationale,
        v1.suggestions,
        v1.ai,
    )


async def test_comment_only_edit_hits_the_cache_and_keeps_suggestion_lines(
    chat_server, tmp_path, gpu
):
    original = (FIXTURES / "kernels.cu").read_bytes()
    det = load("kernels.cu", original)
    chat_server.script(answer("bandwidth", suggestions=[{"line": 19, "message": "vectorise"}]))
    b = make_backend(chat_server, tmp_path)
    v1 = await b.verdict(kernel(det, "scale"), det, gpu)
    assert v1.suggestions[0].line == 19  # `if (i < n) x[i] *= s;`
    # comments added above and inside the kernel, indentation changed: same code
    edited = original.replace(
        b"__global__ void scale(float *x, float s, int n)\n{\n",
        b"// scales x in place\n/* a block\n   comment */\n"
        b"__global__ void scale(float *x, float s, int n)\n{\n  // the index\n\n",
    ).replace(b"    if (i < n) x[i] *= s;", b"        if (i < n) x[i] *= s; // scale")
    assert edited != original
    det2 = load("kernels.cu", edited)
    v2 = await b.verdict(kernel(det2, "scale"), det2, gpu)
    await b.aclose()
    assert len(chat_server.chat_requests()) == 1 and b.stats.cache_hits == 1
    line = v2.suggestions[0].line
    assert edited.splitlines()[line - 1].strip().startswith(b"if (i < n) x[i] *= s;")
    assert line == 24


async def test_code_edit_misses_the_cache(chat_server, tmp_path, gpu):
    original = (FIXTURES / "kernels.cu").read_bytes()
    det = load("kernels.cu", original)
    chat_server.script(answer("bandwidth"), answer("compute"))
    b = make_backend(chat_server, tmp_path)
    await b.verdict(kernel(det, "scale"), det, gpu)
    det2 = load("kernels.cu", original.replace(b"x[i] *= s;", b"x[i] *= s * s;"))
    v = await b.verdict(kernel(det2, "scale"), det2, gpu)
    await b.aclose()
    assert v.bound == "compute" and len(chat_server.chat_requests()) == 2


# --------------------------------------------------------------------------------------------
# failures end in a verdict or a clear message
# --------------------------------------------------------------------------------------------


async def test_timeout_is_retried_once_then_reported(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(Reply(content=answer(), delay=3), Reply(content=answer(), delay=3))
    b = make_backend(chat_server, tmp_path, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(LlmError) as err:
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert time.monotonic() - start < 2.5
    assert str(err.value) == "no answer within 0.3 s (tried twice)"
    assert len(chat_server.chat_requests()) == 2 and b.stats.errors == 1


async def test_timeout_then_answer(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(Reply(content=answer(), delay=3), answer("compute", 0.6))
    b = make_backend(chat_server, tmp_path, timeout=0.3)
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert (v.bound, v.confidence) == ("compute", 0.6)


async def test_429_waits_for_retry_after(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(
        Reply(status=429, headers={"Retry-After": "1"}, body={"error": {"message": "slow down"}}),
        answer("bandwidth"),
    )
    b = make_backend(chat_server, tmp_path)
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    first, second = chat_server.chat_requests()
    assert second.received_at - first.received_at >= 0.9
    assert v.bound == "bandwidth" and b.stats.requests == 2


async def test_retry_after_is_capped(chat_server, tmp_path, gpu, monkeypatch):
    monkeypatch.setattr(llm, "MAX_RETRY_AFTER", 0.2)
    det = load("kernels.cu")
    chat_server.script(Reply(status=429, headers={"Retry-After": "3600"}), answer("compute"))
    b = make_backend(chat_server, tmp_path)
    start = time.monotonic()
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert v.bound == "compute" and time.monotonic() - start < 3


async def test_500s_are_retried_with_backoff_then_reported(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(*[Reply(status=500, body={"error": {"message": "overloaded"}})] * 3)
    b = make_backend(chat_server, tmp_path)
    with pytest.raises(LlmError) as err:
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert len(chat_server.chat_requests()) == 3
    msg = str(err.value)
    assert "HTTP 500" in msg and "after 3 attempts" in msg and "overloaded" in msg
    assert "\n" not in msg


async def test_500_then_answer(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(Reply(status=503, body="<html>bad gateway</html>"), answer("compute"))
    b = make_backend(chat_server, tmp_path)
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert v.bound == "compute"


async def test_malformed_json_is_retried_once(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script("{'bound': compute,", answer("compute", 0.9))
    b = make_backend(chat_server, tmp_path)
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert v.bound == "compute"
    retry = chat_server.chat_requests()[1]
    assert retry.messages[-2] == {"role": "assistant", "content": "{'bound': compute,"}
    assert "not valid" in retry.messages[-1]["content"]


async def test_malformed_json_twice_keeps_a_clear_error(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script("I think it is memory bound.", "Still no JSON, sorry.")
    b = make_backend(chat_server, tmp_path)
    with pytest.raises(LlmError, match=r"^invalid answer twice: no JSON object in the reply$"):
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert b.cache.get("anything") is None
    assert len(chat_server.chat_requests()) == 2


async def test_wrong_schema_is_rejected(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(json.dumps({"verdict": "compute"}), json.dumps({"bound": "fast"}))
    b = make_backend(chat_server, tmp_path)
    with pytest.raises(LlmError, match="'bound' must be compute or bandwidth"):
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()


async def test_a_body_that_is_not_a_completion(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(Reply(body="this is not json"), Reply(body="[1, 2"))
    b = make_backend(chat_server, tmp_path)
    with pytest.raises(LlmError) as err:
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert "\n" not in str(err.value)


async def test_out_of_range_lines_are_clamped_and_junk_dropped(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "scale")  # lines 16-20
    chat_server.script(
        json.dumps(
            {
                "bound": "Compute-bound",
                "confidence": 7,
                "arithmetic_intensity": -3,
                "rationale": "ok\u0007",
                "suggestions": [
                    {"line": 1, "message": "before the kernel"},
                    {"line": 999, "message": "after the kernel"},
                    {"line": "18", "message": "a string line"},
                    {"line": 18},
                    "not an object",
                    {"line": True, "message": "a bool is not a line"},
                ],
                "shell": "rm -rf /",
            }
        )
    )
    b = make_backend(chat_server, tmp_path)
    v = await b.verdict(k, det, gpu)
    await b.aclose()
    assert v.bound == "compute"
    assert v.confidence == pytest.approx(0.07)  # 7 read as a percentage
    assert v.extra["llm_ai"] is None
    assert v.rationale == "ok"
    assert [(s.line, s.message) for s in v.suggestions] == [
        (16, "before the kernel"),
        (20, "after the kernel"),
        (18, "a string line"),
    ]
    assert "shell" not in v.extra and "rm -rf" not in repr(v)


async def test_unsupported_response_format_falls_back_and_is_remembered(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(
        Reply(
            status=400,
            body={"error": {"message": "response_format json_schema is not supported"}},
        ),
        'Sure! ```json\n{"bound": "bandwidth", "confidence": 0.5}\n```',
        'Here: {"bound": "compute", "rationale": "many flops"} -- done',
    )
    b = make_backend(chat_server, tmp_path)
    v1 = await b.verdict(kernel(det, "scale"), det, gpu)
    v2 = await b.verdict(kernel(det, "smooth_rows"), det, gpu)
    await b.aclose()
    first, second, third = chat_server.chat_requests()
    assert "response_format" in first.json
    assert "response_format" not in second.json and "response_format" not in third.json
    assert (v1.bound, v2.bound, v2.rationale) == ("bandwidth", "compute", "many flops")


async def test_max_tokens_renamed_when_the_model_wants_max_completion_tokens(
    chat_server, tmp_path, gpu
):
    det = load("kernels.cu")
    msg = "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."
    chat_server.script(Reply(status=400, body={"error": {"message": msg}}), answer("compute"))
    b = make_backend(chat_server, tmp_path)
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    second = chat_server.chat_requests()[1].json
    assert v.bound == "compute"
    assert "max_tokens" not in second and second["max_completion_tokens"] == 1024


async def test_reasoning_effort_is_sent_to_reasoning_models(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(answer("compute"))
    b = make_backend(chat_server, tmp_path, reasoning_effort="low")
    await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    body = chat_server.chat_requests()[0].json
    assert body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] == 1024 and "temperature" not in body


async def test_401_names_the_variable_not_the_key(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(Reply(status=401, body={"error": {"message": "bad key"}}))
    b = make_backend(chat_server, tmp_path, env={})
    with pytest.raises(LlmError) as err:
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert str(err.value).endswith(f"authentication failed (set ${KEY_ENV})")
    assert len(chat_server.chat_requests()) == 1  # not retried


async def test_a_local_endpoint_needs_no_key(chat_server, tmp_path, gpu, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-be-sent-elsewhere-123456")
    det = load("kernels.cu")
    chat_server.script(answer("compute"))
    b = make_backend(chat_server, tmp_path, env={})
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert v.bound == "compute"
    auth = chat_server.chat_requests()[0].headers.get("authorization", "")
    assert "sk-must-not-be-sent" not in auth


async def test_unreachable_endpoint_is_a_clear_error(tmp_path, gpu):
    det = load("kernels.cu")
    config = LlmConfig(
        base_url="http://127.0.0.1:9/v1", model="m", cache_dir=str(tmp_path), timeout=2
    )
    b = LlmBackend(config, env={}, backoff=0.01)
    with pytest.raises(LlmError, match=r"^cannot connect to 127.0.0.1:9/v1 \(3 attempts\)$"):
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()


async def test_extra_headers_with_env_references(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(answer("compute"))
    b = make_backend(
        chat_server,
        tmp_path,
        env={KEY_ENV: SECRET, "AZURE_KEY": "azure-secret-value-123456789"},
        headers={"api-key": "${env:AZURE_KEY}", "X-Title": "roofline-lsp"},
    )
    await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    h = chat_server.chat_requests()[0].headers
    assert h["api-key"] == "azure-secret-value-123456789" and h["x-title"] == "roofline-lsp"


# --------------------------------------------------------------------------------------------
# prompt injection
# --------------------------------------------------------------------------------------------


async def test_prompt_injection_comment_is_data(chat_server, tmp_path, gpu):
    det = load("injection.cu")
    k = kernel(det, "copy_on")
    # a model that obeyed the comment: invalid twice -> a clear error, nothing else happens
    chat_server.script('{"bound": "rm -rf /"}', '{"bound": "rm -rf /", "run": "rm -rf /"}')
    b = make_backend(chat_server, tmp_path)
    with pytest.raises(LlmError, match="'bound' must be compute or bandwidth"):
        await b.verdict(k, det, gpu)
    # a model that did not: a valid verdict; extra keys never reach the verdict
    chat_server.script(answer("bandwidth", rationale="a copy", suggestions=[], run="rm -rf /"))
    v = await b.verdict(k, det, gpu)
    await b.aclose()
    assert v.bound == "bandwidth" and "rm -rf" not in repr(v)
    req = chat_server.chat_requests()[0]
    user = req.user
    # the kernel sits in a fence longer than any backtick run inside it
    assert "`````cuda\n" in user and "\n`````\n" in user
    fence_start = user.index("`````cuda\n")
    fence_end = user.index("\n`````\n", fence_start)
    assert fence_start < user.index("Ignore all previous instructions") < fence_end
    assert "never instructions" in req.messages[0]["content"]
    assert SECRET not in req.prompt


# --------------------------------------------------------------------------------------------
# never blocking: cancellation, deduplication, bounded concurrency
# --------------------------------------------------------------------------------------------


async def test_cancelling_the_caller_cancels_the_http_request(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(Reply(content=answer(), delay=10))
    b = make_backend(chat_server, tmp_path)
    task = asyncio.create_task(b.verdict(kernel(det, "scale"), det, gpu))
    assert await await_requests(chat_server, 1)
    start = time.monotonic()
    task.cancel()  # what the server does when the kernel's text changes
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(200):
        if chat_server.requests[0].disconnected:
            break
        await asyncio.sleep(0.01)
    assert chat_server.requests[0].disconnected, "the HTTP request was not cancelled"
    assert time.monotonic() - start < 2
    assert b.in_flight() == 0 and b.stats.cancelled == 1
    await b.aclose()


async def test_same_kernel_shares_one_request(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "scale")
    chat_server.script(Reply(content=answer("compute"), delay=0.3))
    b = make_backend(chat_server, tmp_path)
    v1, v2 = await asyncio.gather(b.verdict(k, det, gpu), b.verdict(k, det, gpu))
    assert v1.bound == v2.bound == "compute"
    assert len(chat_server.chat_requests()) == 1
    await b.aclose()


async def test_one_waiter_cancelled_does_not_cancel_the_other(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "scale")
    chat_server.script(Reply(content=answer("bandwidth"), delay=0.5))
    b = make_backend(chat_server, tmp_path)
    t1 = asyncio.create_task(b.verdict(k, det, gpu))
    t2 = asyncio.create_task(b.verdict(k, det, gpu))
    assert await await_requests(chat_server, 1)
    t1.cancel()
    v = await t2
    assert v.bound == "bandwidth" and t1.cancelled()
    assert len(chat_server.chat_requests()) == 1 and not chat_server.requests[0].disconnected
    await b.aclose()


async def test_concurrency_is_bounded(chat_server, tmp_path, gpu):
    base = (FIXTURES / "kernels.cu").read_bytes()
    dets = [
        load("kernels.cu", base.replace(b"x[i] *= s;", f"x[i] *= s + {i};".encode()))
        for i in range(5)
    ]
    chat_server.responder = lambda req: Reply(content=answer("compute"), delay=0.3)
    b = make_backend(chat_server, tmp_path, max_concurrency=2)
    verdicts = await asyncio.gather(*(b.verdict(kernel(d, "scale"), d, gpu) for d in dets))
    await b.aclose()
    assert [v.bound for v in verdicts] == ["compute"] * 5
    assert len(chat_server.chat_requests()) == 5
    assert chat_server.max_concurrent() == 2


# --------------------------------------------------------------------------------------------
# the key never leaks
# --------------------------------------------------------------------------------------------


async def test_the_key_never_appears_in_logs_cache_or_errors(chat_server, tmp_path, gpu, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, the openai client's and httpx's included
    det = load("kernels.cu")
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}. Key {SECRET[:20]}"}}
    chat_server.script(
        answer("bandwidth", rationale="fine"),
        Reply(status=401, body=echo),
        Reply(status=500, body=echo),
        Reply(status=500, body=echo),
        Reply(status=500, body=echo),
    )
    b = make_backend(chat_server, tmp_path)
    v = await b.verdict(kernel(det, "scale"), det, gpu)
    errors = []
    for _ in range(2):
        try:
            await b.verdict(kernel(det, "smooth_rows"), det, gpu)
        except LlmError as e:
            errors.append(e)
    await b.aclose()
    assert len(errors) == 2
    assert "401" in str(errors[0]) and "HTTP 500" in str(errors[1])
    assert chat_server.chat_requests()[0].headers["authorization"] == f"Bearer {SECRET}"
    texts = [caplog.text, repr(v), repr(b), repr(b.stats), *(str(e) for e in errors)]
    texts += [repr(e.__cause__) + repr(e.__context__) for e in errors]
    for f in (tmp_path / "cache").rglob("*"):
        if f.is_file():
            texts.append(f.read_bytes().decode("latin-1"))
    for text in texts:
        assert SECRET not in text
        assert SECRET[:20] not in text


# --------------------------------------------------------------------------------------------
# cache robustness
# --------------------------------------------------------------------------------------------


async def test_unusable_cache_degrades_to_no_cache(chat_server, tmp_path, gpu, caplog):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    det = load("kernels.cu")
    chat_server.script(answer("compute"), answer("compute"))
    b = make_backend(chat_server, tmp_path, cache_dir=str(not_a_dir))
    with caplog.at_level(logging.WARNING):
        await b.verdict(kernel(det, "scale"), det, gpu)
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert len(chat_server.chat_requests()) == 2  # no cache, no crash
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "without a cache" in warnings[0].getMessage()


async def test_a_tampered_cache_entry_is_revalidated(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "scale")
    chat_server.script(answer("compute"), answer("bandwidth"))
    b = make_backend(chat_server, tmp_path)
    ctx = await b.prompt(k, det, gpu)
    b.cache.set(ctx.key, {"bound": "rm -rf /", "suggestions": "x"})
    v = await b.verdict(k, det, gpu)  # not trusted: asked again
    assert v.bound == "compute" and b.stats.cache_hits == 0
    b.cache.set(ctx.key, {"bound": "bandwidth", "confidence": 9, "suggestions": [{"x": 1}]})
    v = await b.verdict(k, det, gpu)
    await b.aclose()
    assert (v.bound, v.confidence, v.suggestions) == ("bandwidth", 1.0, ())


# --------------------------------------------------------------------------------------------
# modes
# --------------------------------------------------------------------------------------------


def _static(gpu, kernel_name: str) -> Verdict:
    ridge = gpu.ridges()
    return Verdict(
        kernel=kernel_name,
        gpu=gpu.name,
        bound="bandwidth",
        source="static",
        confidence=0.6,
        ai={"fp64": None, "fp32": 0.125, "fp16": None, "int": 0.5},
        ridge=ridge,
        deciding="fp32",
        rationale="static",
        terms=(NoteTerm("x[i] load 4 B"), NoteTerm("x[i] store 4 B")),
        counts=Counts(flops={"fp32": 1.0}, int_ops=4.0, bytes_loaded=4.0, bytes_stored=4.0),
    )


async def test_hinted_mode_adds_the_static_estimate(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    k = kernel(det, "scale")
    chat_server.script(answer("bandwidth"), answer("bandwidth"))
    b = make_backend(chat_server, tmp_path, mode="hinted")
    v = await b.verdict(k, det, gpu, static=_static(gpu, "scale"))
    assert v.ai["int"] == 0.5 and v.deciding == "fp32"
    measured = replace(
        _static(gpu, "scale"),
        source="profile",
        ai={"fp64": None, "fp32": 0.17, "fp16": None, "int": 0.75},
        extra={"measured": {"launch_id": "3", "time_ns": 265216.0}},
    )
    await b.verdict(k, det, gpu, static=_static(gpu, "scale"), measured=measured)
    await b.aclose()
    first, second = chat_server.chat_requests()
    assert "Static estimate from the source" in first.user
    assert "DRAM bytes loaded 4, stored 4" in first.user and "fp32 0.125" in first.user
    assert "Measured by Nsight Compute" in second.user and "fp32 0.17" in second.user
    assert "Static estimate" not in second.user


async def test_zero_shot_mode_sends_no_hints_or_examples(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    chat_server.script(answer("bandwidth"))
    b = make_backend(chat_server, tmp_path)
    await b.verdict(kernel(det, "scale"), det, gpu, static=_static(gpu, "scale"))
    await b.aclose()
    user = chat_server.chat_requests()[0].user
    assert "Static estimate" not in user and "Labelled examples" not in user


async def test_few_shot_mode_adds_bundled_and_nearest_examples(chat_server, tmp_path, gpu):
    dataset = FIXTURES / "dataset"
    path = dataset / "sources" / "demo" / "main.cu"
    det = detect(path.read_bytes(), str(path))
    k = kernel(det, "add_arrays")
    chat_server.script(answer("bandwidth"))
    b = make_backend(chat_server, tmp_path, mode="few-shot", dataset=str(dataset), few_shot_k=2)
    await b.verdict(k, det, gpu)
    await b.aclose()
    user = chat_server.chat_requests()[0].user
    assert "Labelled examples" in user
    assert "`vec_add`" in user and "`mix_keys`" in user  # the bundled set
    # the nearest dataset kernels, never from the kernel's own benchmark (program `demo`):
    # only `other`'s kernel is left
    assert "`accumulate`" in user and "`add_arrays_twice`" not in user
    assert user.count("Example ") == 6 + 1
    assert "Label on the dataset's GPU: bandwidth-bound" in user


async def test_few_shot_with_a_broken_dataset_is_a_clear_error(chat_server, tmp_path, gpu):
    det = load("kernels.cu")
    b = make_backend(
        chat_server, tmp_path, mode="few-shot", dataset=str(tmp_path / "nope"), few_shot_k=2
    )
    with pytest.raises(LlmError, match="few-shot dataset: .*no kernels.jsonl"):
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert chat_server.chat_requests() == []


# --------------------------------------------------------------------------------------------
# the CLI: `check --backend llm|auto|static`
# --------------------------------------------------------------------------------------------


def run_cli(args: list[str]) -> tuple[int, str, str]:
    return run(*args)


def llm_args(server: ChatServer, tmp_path: Path, backend: str = "llm") -> list[str]:
    return [
        "--backend",
        backend,
        "--base-url",
        server.base_url,
        "--model",
        "test-model",
        "--api-key-env",
        KEY_ENV,
        "--cache-dir",
        str(tmp_path / "cache"),
    ]


def by_kernel(text: str) -> dict[str, str]:
    return {line.split(": ", 1)[1].split(" [")[0]: line for line in text.splitlines()}


def test_check_shows_the_llm_verdict_then_serves_the_cache(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    chat_server.responder = lambda req: Reply(
        content=answer("compute", 0.9, 40.0, "LLM says compute")
        if "`scale`" in req.user
        else answer("bandwidth", 0.8, 0.2, "LLM says bandwidth")
    )
    path = str(FIXTURES / "kernels.cu")
    rc, out, err = run_cli(["check", path, "--gpu", "h100", *llm_args(chat_server, tmp_path)])
    assert rc == 0, err
    lines = by_kernel(out)
    assert lines["scale"].endswith("[llm]") and "compute-bound" in lines["scale"]
    assert lines["smooth_rows"].endswith("[llm]") and "bandwidth-bound" in lines["smooth_rows"]
    assert "LLM: 2 request(s), 0 cache hit(s)" in err
    assert len(chat_server.chat_requests()) == 2
    # a second run: zero requests
    rc, out2, err2 = run_cli(["check", path, "--gpu", "h100", *llm_args(chat_server, tmp_path)])
    assert rc == 0 and out2 == out
    assert len(chat_server.chat_requests()) == 2
    assert "LLM: 0 request(s), 2 cache hit(s)" in err2


def test_check_keeps_the_static_verdict_when_the_llm_fails(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    chat_server.responder = lambda req: Reply(content="no json here")
    path = str(FIXTURES / "kernels.cu")
    rc, out, err = run_cli(["check", path, *llm_args(chat_server, tmp_path)])
    assert rc == 0
    kernels = [line for line in out.splitlines() if ": note: [RL" not in line]
    assert kernels and all(re.search(r"\[static(, PTX counts)?\]$", k) for k in kernels)
    assert "LLM: invalid answer twice: no JSON object in the reply (kept the static verdict)" in err
    assert "Traceback" not in err


def test_backend_off_sends_nothing(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    chat_server.responder = lambda req: Reply(content=answer("compute"))
    path = str(FIXTURES / "kernels.cu")
    for extra in (llm_args(chat_server, tmp_path, backend="static"), []):
        rc, out, err = run_cli(["check", path, *extra, "--format", "json"])
        assert rc == 0, err
        assert {v["source"] for k in json.loads(out) for v in k["verdicts"]} == {"static"}
    assert chat_server.requests == []
    # --cache-dir holds check's results cache too; the LLM's namespace stays empty
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        assert not [k for k in cache if str(k).startswith("llm:")]


def test_the_key_never_reaches_json_output(chat_server, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, SECRET)
    echo = {"error": {"message": f"bad key {SECRET}"}}
    chat_server.responder = lambda req: (
        Reply(status=403, body=echo)
        if "`scale`" in req.user
        else Reply(content=answer("bandwidth", rationale="fine"))
    )
    path = str(FIXTURES / "kernels.cu")
    texts = []
    for fmt in ("json", "sarif", "text"):
        rc, out, err = run_cli(["check", path, *llm_args(chat_server, tmp_path), "--format", fmt])
        assert rc == 0
        texts += [out, err]
    assert "HTTP 403" in texts[1] and "bad key ***" in texts[1]
    assert any(r.headers.get("authorization") == f"Bearer {SECRET}" for r in chat_server.requests)
    texts.append(caplog.text)
    for f in (tmp_path / "cache").rglob("*"):
        if f.is_file():
            texts.append(f.read_bytes().decode("latin-1"))
    for text in texts:
        assert SECRET not in text


def test_eval_reports_accuracy_tokens_and_cache_hits(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)

    chat_server.responder = lambda req: Reply(content=answer("compute"))  # always "compute"
    dataset = str(FIXTURES / "dataset")
    args = ["eval", "--dataset", dataset, *llm_args(chat_server, tmp_path)]
    rc, out, err = run_cli(args)
    assert rc == 0, err
    doc = json.loads(out)
    # 7 labelled rows, 5 found; one has no source, one points at no kernel (predicted None)
    assert doc["confusion"]["compute"] == {"compute": 1, "None": 1}
    assert doc["confusion"]["bandwidth"] == {"compute": 4, "None": 1}
    assert doc["accuracy"] == round(1 / 7, 4)
    assert doc["balanced_accuracy"] == 0.25
    stats = doc["llm"]
    # 6 rows found; the unlabelled row repeats `gather` without its launch dimensions, and
    # the launch is part of the prompt (and so of the cache key): 6 distinct requests
    assert stats["requests"] == 6 and stats["cache_hits"] == 0
    assert stats["prompt_tokens"] == 600 and stats["completion_tokens"] == 120
    rc, out, err = run_cli(args)
    stats = json.loads(out)["llm"]
    assert (stats["requests"], stats["cache_hits"]) == (0, 6)
    assert len(chat_server.chat_requests()) == 6


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/v1", "base URL must start with http:// or https://"),
        ("localhost:8080/v1", "base URL must start with http:// or https://"),
        ("http://[::1", "invalid base URL 'http://[::1'"),
    ],
)
async def test_a_bad_base_url_is_reported_by_verdict(tmp_path, gpu, url, message):
    det = load("kernels.cu")
    b = LlmBackend(LlmConfig(base_url=url, cache_dir=str(tmp_path)), env={})
    with pytest.raises(LlmError) as err:
        await b.verdict(kernel(det, "scale"), det, gpu)
    await b.aclose()
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert b.stats.errors == 1


async def test_hinted_mode_cache_survives_a_comment_only_edit(chat_server, tmp_path, gpu):
    from roofline_lsp.estimate.roofline import estimate

    src = (
        b"__global__ void sweep(const float *a, float *b, int n)\n{\n"
        b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        b"    float acc = 0.0f;\n"
        b"    for (int k = 0; k < 64; k++)\n"
        b"        acc += a[i] * k;\n"
        b"    b[i] = acc;\n}\n"
    )
    edited = b"// a comment\n// another\n" + src.replace(b"float acc", b"float acc /* sum */")
    chat_server.script(answer("compute"))
    b = make_backend(chat_server, tmp_path, mode="hinted")
    for text in (src, edited):
        det = detect(text, "sweep.cu")
        k = det.kernels[0]
        await b.verdict(k, det, gpu, static=estimate(k, det, gpu))
    await b.aclose()
    assert len(chat_server.chat_requests()) == 1 and b.stats.cache_hits == 1
    assert "Static estimate" in chat_server.chat_requests()[0].user
