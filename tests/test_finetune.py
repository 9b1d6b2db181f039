"""export-finetune (tests/fixtures/llm/dataset)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from roofline_lsp.cli.main import main
from roofline_lsp.detect.kernels import detect
from roofline_lsp.evaluation.dataset import DatasetError
from roofline_lsp.llm.answers import validate_answer
from roofline_lsp.llm.finetune import export_finetune
from roofline_lsp.llm.prompting import build_prompt
from roofline_lsp.llm.templates import PROMPT_VERSION, prompt_text
from roofline_lsp.model.gpus import load_registry

DATASET = Path(__file__).parent / "fixtures" / "llm" / "dataset"


@pytest.fixture(scope="module")
def rtx():
    return load_registry().get("rtx3080")


def test_export_writes_chat_jsonl(tmp_path, rtx):
    out = tmp_path / "train.jsonl"
    stats = export_finetune(str(DATASET), str(out), rtx)
    assert (stats.written, stats.missing_source, stats.not_detected, stats.unlabelled) == (
        5,
        1,
        1,
        1,
    )
    assert str(stats) == (
        f"wrote 5 example(s) to {out}; skipped 1 with no source file, 1 whose kernel was not "
        "found, 1 without a compute/bandwidth label"
    )
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(docs) == 5
    by_kernel = {}
    for d in docs:
        system, user, assistant = d["messages"]
        assert [m["role"] for m in d["messages"]] == ["system", "user", "assistant"]
        assert system["content"] == prompt_text(f"{PROMPT_VERSION}-system.md")
        assert rtx.name in user["content"]
        name = user["content"].split("Kernel to classify: `", 1)[1].split("`", 1)[0]
        by_kernel[name] = (user["content"], json.loads(assistant["content"]))
    assert set(by_kernel) == {
        "add_arrays",
        "add_arrays_twice",
        "transcendental",
        "gather",
        "accumulate",
    }
    user, ans = by_kernel["transcendental"]
    assert ans["bound"] == "compute" and ans["arithmetic_intensity"] == 310.0
    assert "reaches the ridge point in sp" in ans["rationale"]
    assert validate_answer(ans, 1, 100)["bound"] == "compute"  # what the backend accepts
    assert "sinf(v) * cosf(v)" in user and "block (128, 1, 1)" in user
    _, gather = by_kernel["gather"]
    assert gather["bound"] == "bandwidth" and gather["arithmetic_intensity"] == 0.0
    _, acc = by_kernel["accumulate"]
    assert acc["arithmetic_intensity"] == pytest.approx(0.042)  # fp64 region: dp_ai


def test_export_uses_the_zero_shot_prompt_builder(tmp_path, rtx):
    out = tmp_path / "train.jsonl"
    export_finetune(str(DATASET), str(out), rtx)
    first = json.loads(out.read_text().splitlines()[0])
    path = DATASET / "sources" / "demo" / "main.cu"
    det = detect(path.read_bytes(), str(path))
    from roofline_lsp.estimate.roofline import Inputs

    ctx = build_prompt(
        det.kernels[0],
        det,
        rtx,
        mode="zero-shot",
        inputs=Inputs(block=(256, 1, 1), grid=(4096, 1, 1), args="1048576"),
    )
    assert first["messages"][:2] == list(ctx.messages)


def test_export_errors(tmp_path, rtx):
    with pytest.raises(DatasetError, match="no kernels.jsonl"):
        export_finetune(str(tmp_path), str(tmp_path / "o.jsonl"), rtx)
    with pytest.raises(OSError):
        export_finetune(str(DATASET), str(tmp_path / "no" / "such" / "o.jsonl"), rtx)


def test_cli_export_finetune(tmp_path):
    out = tmp_path / "ft.jsonl"
    err = io.StringIO()
    with redirect_stderr(err):
        rc = main(["export-finetune", "--dataset", str(DATASET), "--out", str(out)])
    assert rc == 0 and "wrote 5 example(s)" in err.getvalue()
    assert len(out.read_text().splitlines()) == 5
    err = io.StringIO()
    with redirect_stderr(err):
        rc = main(["export-finetune", "--dataset", str(tmp_path), "--out", str(out)])
    assert rc == 2 and err.getvalue().count("\n") == 1
