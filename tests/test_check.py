"""``roofline-lsp check`` (``cli/check.py``) end to end, in-process: text, JSON and SARIF,
several GPUs, bad files and usage errors."""

from __future__ import annotations

import json
import os

import pytest
from cli_helpers import DETECT, EXAMPLES, run

from roofline_lsp.cli.arguments import EXIT_NOTHING, EXIT_OK, EXIT_USAGE


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
