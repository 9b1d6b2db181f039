"""``roofline-lsp check`` (``cli/check.py``) end to end, in-process: text, JSON and SARIF,
several GPUs, bad files and usage errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import DETECT, EXAMPLES, run

from roofline_lsp.cli.arguments import EXIT_NOTHING, EXIT_OK, EXIT_USAGE
from roofline_lsp.model.gpus import load_registry


def test_check_text_one_line_per_kernel():
    code, out, err = run("check", str(DETECT / "omp_forms.cpp"), "--gpu", "h100")
    assert code == EXIT_OK
    lines = out.splitlines()
    assert len(lines) == 8
    assert lines[0].startswith(f"{DETECT / 'omp_forms.cpp'}:9: combined [omp] ")
    assert "(H100" in lines[0]
    assert "8 kernels in 1 file(s)" in err


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


def test_check_json_gives_the_display_s_bytes_apart():
    # few_threads_spin.cu on the RTX 3080: 4 frames of 20 MB over 32 threads = 2.5 MB per
    # thread read by the display (tests/test_roofline.py derives them); the H100 has none
    spin = Path(__file__).parent / "fixtures" / "estimator" / "few_threads_spin.cu"
    code, out, _ = run(
        "check", str(spin), "--gpu", "rtx3080,h100", "--format", "json", "--counts", "source"
    )
    assert code == EXIT_OK
    rtx, h100 = json.loads(out)[0]["verdicts"]
    assert rtx["counts"]["display_bytes"] == 2.5e6 and rtx["bound"] == "bandwidth"
    assert h100["counts"]["display_bytes"] == 0.0 and h100["bound"] == "compute"


def test_check_json_lists_what_was_assumed(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(
        "__global__ void k(float *x, int m) {\n"
        "  float s = 0.f;\n"
        "  for (int j = 0; j < m; j++) s += x[j];\n"
        "  x[threadIdx.x] = s;\n"
        "}\n"
    )
    code, out, _ = run("check", str(src), "--gpu", "h100", "--format", "json", "--counts", "source")
    assert code == EXIT_OK
    (v,) = json.loads(out)[0]["verdicts"]
    # no launch anywhere: 256 x 4096 threads assumed; m is given by no launch: 16 trips,
    # the whole work of the thread but the store, a hint on m settles it
    launch, loop = v["assumed"]
    assert launch == {"kind": "launch", "value": 1048576.0, "why": "no launch", "hint_names": []}
    assert (loop["kind"], loop["value"], loop["line"], loop["var"]) == ("trips", 16.0, 3, "j")
    assert loop["hint_names"] == ["m"] and loop["share"] > 0.8
    assert "read_at_run_time" not in loop
    # launched with an m the program reads from its input file: named as set at run time
    src.write_text(
        src.read_text() + "int main(int argc, char **argv) {\n"
        '  int m; FILE *f = fopen(argv[1], "r"); fscanf(f, "%d", &m);\n'
        "  float *x; k<<<64, 256>>>(x, m);\n"
        "}\n"
    )
    code, out, _ = run("check", str(src), "--gpu", "h100", "--format", "json", "--counts", "source")
    (v,) = json.loads(out)[0]["verdicts"]
    (loop,) = v["assumed"]
    assert (loop["why"], loop["hint_names"], loop["read_at_run_time"]) == ("input", ["m"], ["m"])
    assert "(m set at run time), assumed 16" in v["explanation"]


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


def _tree_args(tmp_path, *extra):
    # the examples and the detection fixtures: several programs, languages and GPUs
    return (
        str(tmp_path / "tree"),
        "--counts",
        "source",
        "--gpu",
        "h100,rtx3080",
        "--cache-dir",
        str(tmp_path / "cache"),
        *extra,
    )


def _copy_tree(tmp_path):
    import shutil

    dest = tmp_path / "tree"
    shutil.copytree(EXAMPLES, dest / "examples")
    shutil.copytree(DETECT, dest / "detect")
    return dest


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_jobs_do_not_change_the_output(tmp_path, fmt):
    _copy_tree(tmp_path)
    outs = []
    for extra in (("-j", "1", "--no-cache"), ("-j", "2", "--no-cache"), ("-j", "2")):
        code, out, err = run("check", *_tree_args(tmp_path, "--format", fmt, *extra))
        assert code == EXIT_OK and "Traceback" not in err
        outs.append((out, err))
    code, out, err = run("check", *_tree_args(tmp_path, "--format", fmt, "-j", "2"))  # warm
    outs.append((out, err))
    assert outs[0][0] and all(o == outs[0] for o in outs)


def test_union_of_shards_is_one_run(tmp_path):
    _copy_tree(tmp_path)
    _, whole, _ = run("check", *_tree_args(tmp_path, "--format", "sarif", "--no-cache"))
    results = []
    for i in (1, 2, 3):
        code, out, _ = run("check", *_tree_args(tmp_path, "--format", "sarif", "--shard", f"{i}/3"))
        assert code == EXIT_OK
        part = json.loads(out)["runs"][0]["results"]
        assert part  # every shard has work on this tree
        results += part
    key = json.dumps
    expected = json.loads(whole)["runs"][0]["results"]
    assert sorted(map(key, results)) == sorted(map(key, expected))
    assert len(results) == len(expected)


def test_changed_since_checks_the_changed_files_and_their_includers(tmp_path):
    import subprocess

    tree = _copy_tree(tmp_path)
    (tree / "examples" / "scale.cuh").write_text("#define FACTOR 2.0f\n")
    (tree / "examples" / "user.cu").write_text(
        '#include "scale.cuh"\n__global__ void mul(float *x) { x[threadIdx.x] *= FACTOR; }\n'
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tree, check=True)
    subprocess.run([*git, "add", "."], cwd=tree, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=tree, check=True)
    code, out, err = run("check", *_tree_args(tmp_path, "--changed-since", "HEAD"))
    assert code == EXIT_OK and out == "" and "0 kernels in 0 file(s)" in err
    (tree / "examples" / "scale.cuh").write_text("#define FACTOR 3.0f\n")
    code, out, err = run("check", *_tree_args(tmp_path, "--changed-since", "HEAD"))
    assert code == EXIT_OK
    assert [ln.split(":")[0] for ln in out.splitlines() if not ln.startswith(" ")] == [
        os.path.join("examples", "user.cu")
    ]
    code, _, err = run("check", *_tree_args(tmp_path, "--changed-since", "nope"))
    assert code == EXIT_USAGE and "nope: not a commit" in err


def test_bad_jobs_and_shard_are_usage_errors(tmp_path):
    _copy_tree(tmp_path)
    code, _, err = run("check", *_tree_args(tmp_path, "-j", "0"))
    assert code == EXIT_USAGE and "--jobs" in err
    code, _, err = run("check", *_tree_args(tmp_path, "--shard", "4/3"))
    assert code == EXIT_USAGE and "--shard 4/3" in err and "Traceback" not in err


def test_progress_only_on_a_terminal_unless_asked(tmp_path):
    _copy_tree(tmp_path)
    _, _, err = run("check", *_tree_args(tmp_path, "--no-cache"))
    assert "checking " not in err  # stderr is not a terminal here
    _, _, err = run("check", *_tree_args(tmp_path, "--no-cache", "--progress"))
    assert "\rchecking " in err and "files/s" in err


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_output_is_what_the_writers_make_of_the_reports(tmp_path, fmt):
    # the outcomes joined by the command equal the writers run over the reports of one
    # in-process run (engine.file_run.run_files), for every format
    from roofline_lsp.engine.file_run import run_files
    from roofline_lsp.engine.files import collect_files
    from roofline_lsp.engine.workspace import Workspace
    from roofline_lsp.model.config import Config
    from roofline_lsp.present.json_output import dumps, to_json
    from roofline_lsp.present.sarif import to_sarif
    from roofline_lsp.present.text_output import text_lines

    tree = _copy_tree(tmp_path)
    code, out, _ = run("check", *_tree_args(tmp_path, "--format", fmt, "-j", "2"))
    assert code == EXIT_OK
    files, _ = collect_files([str(tree)])
    ws = Workspace(Config(counts="source", gpu="h100", compare_gpus=("rtx3080",)))
    reports = run_files(ws, files, progress=lambda *a: None, say=lambda s: None)
    base = str(tree)
    if fmt == "text":
        expected = "".join(line + "\n" for line in text_lines(reports, base))
    elif fmt == "json":
        expected = dumps(to_json(reports, base))
    else:
        expected = dumps(to_sarif(reports, base))
    assert out == expected


def test_json_list_is_dumps_of_the_list():
    from roofline_lsp.cli.check import json_list
    from roofline_lsp.present.json_output import dumps

    items = [{"a": [1, {"b": "x\ny"}], "c": {}}, {"d": "é", "e": []}]
    assert json_list([dumps(d).rstrip("\n") for d in items]) == dumps(items)
    assert json_list([]) == dumps([])


# a GPU only the user's TOML knows, with a 1/64 fp64 rate
USER_GPU = """
[MY-GPU]
vendor = "NVIDIA"
sm_count = 40
clock_ghz = 1.5
fp64_tflops = 0.3125
fp32_tflops = 20.0
fp16_tflops = 40.0
int32_tops = 10.0
dram_gbs = 500.0
l2_mib = 4.0
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_advice_for_a_gpu_given_only_by_gpu_profiles(tmp_path, jobs):
    toml = tmp_path / "gpus.toml"
    toml.write_text(USER_GPU)
    src = os.path.join(os.path.dirname(__file__), "fixtures", "advice", "rl008_coalescing.cu")
    common = ("--gpu", "my-gpu", "--gpu-profiles", str(toml), "--counts", "source", "-j", jobs)
    code, out, err = run("check", src, *common, "--no-cache")
    assert code == EXIT_OK, err
    notes = [ln for ln in out.splitlines() if ": note: [RL008]" in ln]
    assert notes and all(ln.endswith("faster on MY-GPU)") for ln in notes)
    code, out, _ = run("check", src, *common, "--format", "json", "--no-cache")
    gains = [d["estimated_gain"] for k in json.loads(out) for d in k["diagnostics"]]
    assert len(gains) == len(notes) and all(g["gpu"] == "MY-GPU" for g in gains)
    code, out, _ = run("check", src, *common, "--format", "sarif", "--no-cache")
    results = json.loads(out)["runs"][0]["results"]
    assert sum(r["ruleId"] == "RL008" for r in results) == len(notes)
    # overriding a bundled GPU's numbers: the advice uses the user's (RL001 names the rate)
    fp32 = load_registry().get("rtx3080").fp32_flops / 1e12
    toml.write_text(f"[RTX-3080]\nfp64_tflops = {fp32 / 2}\n")
    lit = os.path.join(os.path.dirname(__file__), "fixtures", "advice", "rl001_fp64_literal.cu")
    code, out, _ = run(
        "check", lit, "--gpu", "rtx3080", "--gpu-profiles", str(toml), "--counts", "source",
        "--no-cache", "-j", jobs,
    )  # fmt: skip
    assert "fp64 runs at 1/2 of the fp32 rate on RTX-3080" in out
