"""The CLI end to end (in-process and through the installed console script)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_lsp.cli.main import EXIT_NOTHING, EXIT_OK, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DETECT = Path(__file__).parent / "fixtures" / "detect"


def run(*argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    err_buf = io.StringIO()
    old = sys.stderr
    sys.stderr = err_buf
    try:
        code = main(list(argv), out=out)
    finally:
        sys.stderr = old
    return code, out.getvalue(), err_buf.getvalue()


def test_check_text_one_line_per_kernel():
    code, out, err = run("check", str(DETECT / "omp_forms.cpp"), "--gpu", "h100")
    assert code == EXIT_OK
    lines = out.splitlines()
    assert len(lines) == 7
    assert lines[0].startswith(f"{DETECT / 'omp_forms.cpp'}:9: combined [omp] ")
    assert "(H100" in lines[0]
    assert "7 kernels in 1 file(s)" in err


def test_check_several_gpus_gives_a_verdict_per_gpu():
    code, out, _ = run(
        "check", str(EXAMPLES / "saxpy.cu"), "--gpu", "h100,rtx3080", "--format", "json"
    )
    assert code == EXIT_OK
    (k,) = json.loads(out)
    assert [v["gpu"] for v in k["verdicts"]] == ["H100-SXM5-80GB", "RTX-3080"]


def test_check_json_fields(tmp_path):
    dest = tmp_path / "out.json"
    code, out, _ = run("check", str(EXAMPLES), "--format", "json", "--output", str(dest))
    assert code == EXIT_OK and out == ""
    data = json.loads(dest.read_text())
    assert {d["kernel"] for d in data} >= {"saxpy", "forces", "horner", "hash_rounds", "jacobi"}
    for d in data:
        assert {"file", "line", "kernel", "language", "verdicts"} <= set(d)
        assert not os.path.isabs(d["file"])  # relative to the folder given
        for v in d["verdicts"]:
            assert v["bound"] in ("compute", "bandwidth", "unknown")
            assert v["source"] in ("static", "llm", "profile")


def test_check_sarif_is_valid_2_1_0():
    from sarif_pydantic import Sarif

    code, out, _ = run("check", str(EXAMPLES), "--format", "sarif", "--gpu", "a100")
    assert code == EXIT_OK
    doc = json.loads(out)
    log = Sarif.model_validate(doc)
    assert log.version == "2.1.0"
    run0 = doc["runs"][0]
    assert run0["tool"]["driver"]["name"] == "roofline-lsp"
    rule_ids = {r["id"] for r in run0["tool"]["driver"]["rules"]}
    assert run0["results"]
    for r in run0["results"]:
        assert r["ruleId"] in rule_ids and r["level"] == "note"
        loc = r["locations"][0]["physicalLocation"]
        assert loc["region"]["startLine"] >= 1
        assert not loc["artifactLocation"]["uri"].startswith("/")


@pytest.mark.parametrize(
    ("content", "expect_err"),
    [
        (b"", None),
        (b"\x00\x01binary\x00" * 10, "binary file"),
        (b"__global__ void k(float *a) { a[0] = 1.0f; } // \xff\xfe invalid utf-8\n", None),
    ],
)
def test_bad_files_give_one_line_and_exit_ok(tmp_path, content, expect_err):
    f = tmp_path / "x.cu"
    f.write_bytes(content)
    code, _out, err = run("check", str(f))
    assert code == EXIT_OK
    if expect_err:
        assert expect_err in err
    assert "Traceback" not in err


def test_huge_file_is_skipped_with_a_message(tmp_path):
    f = tmp_path / "huge.cu"
    f.write_bytes(b"// filler\n" * 2_000_000)  # 20 MB
    code, out, err = run("check", str(f))
    assert code == EXIT_OK and out == ""
    assert "20.0 MB is over the 4 MB limit" in err


def test_missing_path_unknown_gpu_and_empty_folder(tmp_path):
    code, _, err = run("check", str(tmp_path / "nope.cu"))
    assert code == EXIT_USAGE and "no such file or directory" in err
    code, _, err = run("check", str(EXAMPLES), "--gpu", "h10")
    assert code == EXIT_USAGE and "unknown GPU 'h10'" in err and "H100" in err
    (tmp_path / "notes.txt").write_text("nothing here")
    code, _, err = run("check", str(tmp_path))
    assert code == EXIT_NOTHING and "no source files" in err


def test_broken_user_toml(tmp_path):
    bad = tmp_path / "gpus.toml"
    bad.write_text("[mygpu\nfp32 = ")
    code, _, err = run("check", str(EXAMPLES), "--gpu-profiles", str(bad))
    assert code == EXIT_USAGE and str(bad) in err
    assert len(err.strip().splitlines()) == 1


def test_gpus_lists_ridge_points():
    code, out, _ = run("gpus")
    assert code == EXIT_OK
    assert "RTX-3080" in out and "H100-SXM5-80GB" in out


def test_eval_detection_only_on_a_tiny_dataset(tmp_path):
    (tmp_path / "sources" / "p").mkdir(parents=True)
    (tmp_path / "sources" / "p" / "a.cu").write_bytes((EXAMPLES / "saxpy.cu").read_bytes())
    rows = [
        {"id": "p/saxpy", "language": "cuda", "file": "p/a.cu", "line": 4, "label": "bandwidth"},
        {"id": "p/ghost", "language": "cuda", "file": "p/a.cu", "line": 1, "label": "compute"},
    ]
    (tmp_path / "kernels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_json = tmp_path / "r.json"
    code, out, _ = run(
        "eval", "--dataset", str(tmp_path), "--detection-only", "--json", str(out_json)
    )
    assert code == EXIT_OK
    res = json.loads(out_json.read_text())
    assert res["kernels"] == 2 and res["detected"] == 1 and res["detection_recall"] == 0.5
    assert res["by_language"]["cuda"]["detected"] == 1
    assert res["predictions"][0] == {
        "id": "p/saxpy",
        "found": True,
        "label": "bandwidth",
        "predicted": None,
    }
    assert "seconds" in res
    code, out, _ = run("eval", "--dataset", str(tmp_path))
    res = json.loads(out)
    # the missing kernel counts as wrong: compute recall 0
    assert res["confusion"]["compute"] == {"None": 1}
    assert res["balanced_accuracy"] <= 0.5


def test_eval_missing_dataset(tmp_path):
    code, _, err = run("eval", "--dataset", str(tmp_path))
    assert code == EXIT_USAGE and "kernels.jsonl" in err


def test_console_script_never_shows_a_traceback(tmp_path):
    exe = Path(sys.executable).parent / "roofline-lsp"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "roofline_lsp"]
    for args in (["check", "/nonexistent"], ["check", "--gpu"], ["eval"], ["bogus"]):
        p = subprocess.run(cmd + args, capture_output=True, text=True, timeout=60)
        assert p.returncode == EXIT_USAGE, (args, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
