"""Every output of ``check`` carries the advice: compiler-style notes in text, a
``diagnostics`` list per kernel in JSON, one SARIF result per diagnostic whose rule's
``helpUri`` is a README section; and the CLI details a new user trips on."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_helpers import ROOT, run

from roofline_lsp.advice.catalogue import RULES
from roofline_lsp.model.verdict import Counts, Verdict
from roofline_lsp.present.text_output import source_label

FIXTURE = Path(__file__).parent / "fixtures" / "advice" / "rl008_coalescing.cu"
NOTE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): note: \[(?P<rule>RL\d{3})\] ")


def _check(*args: str) -> tuple[int, str, str]:
    return run("check", "--no-cache", "--counts", "source", "-j", "1", *args, str(FIXTURE))


def _readme_anchors() -> set[str]:
    """GitHub's anchors of the README's headings."""
    out = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


def test_every_rule_links_to_its_readme_section() -> None:
    anchors = _readme_anchors()
    for rule in RULES.values():
        assert rule.href.endswith("README.md#" + rule.anchor)
        assert rule.anchor in anchors, rule.code


def test_text_prints_each_diagnostic_compiler_style_under_its_kernel() -> None:
    code, out, _err = _check()
    assert code == 0
    notes = [NOTE.match(line) for line in out.splitlines()]
    found = {(int(m["line"]), m["rule"]) for m in notes if m}
    assert {(12, "RL008"), (4, "RL008")} <= found
    src = FIXTURE.read_text().splitlines()
    for m in filter(None, notes):
        assert 1 <= int(m["col"]) <= len(src[int(m["line"]) - 1])
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if ": gather_stride [cuda]" in line)
    assert NOTE.match(lines[head + 1]) and "(est. " in lines[head + 1]


def test_json_has_a_diagnostics_list_per_kernel() -> None:
    code, out, _err = _check("--format", "json")
    assert code == 0
    kernels = json.loads(out)
    assert all(isinstance(k["diagnostics"], list) for k in kernels)
    d = next(k for k in kernels if k["kernel"] == "gather_stride")["diagnostics"][0]
    assert d["rule"] == "RL008" and d["line"] == 4 and d["column"] >= 1
    assert d["severity"] in ("information", "hint") and d["message"]
    assert d["estimated_gain"]["fewer_bytes"] > 1 and d["help_uri"].endswith(
        "#rl008-uncoalesced-access"
    )
    quiet = next(k for k in kernels if k["kernel"] == "per_block")
    assert quiet["diagnostics"] == []


def test_sarif_has_one_result_per_diagnostic_with_rule_metadata() -> None:
    from sarif_pydantic import Sarif

    code, out, _err = _check("--format", "sarif")
    assert code == 0
    log = json.loads(out)
    Sarif.model_validate(log)  # the 2.1.0 object model, fixes and regions included
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    anchors = _readme_anchors()
    for r in rules:
        assert {"id", "shortDescription", "helpUri", "defaultConfiguration"} <= set(r)
        if r["id"].startswith("RL"):
            assert r["helpUri"].split("#")[1] in anchors
    _code, js, _ = _check("--format", "json")
    n_diags = sum(len(k["diagnostics"]) for k in json.loads(js))
    advice = [r for r in run_["results"] if r["ruleId"].startswith("RL")]
    assert len(advice) == n_diags > 0
    for r in run_["results"]:
        assert ids[r["ruleIndex"]] == r["ruleId"]
        assert r["level"] in ("none", "note", "warning", "error")
        assert r["message"]["text"]
        region = r["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1
    assert all("startColumn" in r["locations"][0]["physicalLocation"]["region"] for r in advice)


def test_explain_prints_the_full_explanation_under_each_kernel() -> None:
    code, out, _err = _check("--explain")
    assert code == 0
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"^\S+:\d+: \w+ \[", line)]
    assert len(heads) == 7
    explained = [line for line in lines if line.startswith("    H100-SXM5-80GB: ")]
    assert len(explained) == len(heads)
    assert all("bound" in line for line in explained)


def test_label_says_ptx_counts_when_they_were_used() -> None:
    v = Verdict("k", "H100", "compute", "static", 0.9, {}, {}, None)
    assert source_label(v) == "static"
    ptx = Counts({"fp32": 1.0}, 0.0, 4.0, 4.0, counts_from="ptx")
    import dataclasses

    assert source_label(dataclasses.replace(v, counts=ptx)) == "static, PTX counts"


def test_a_named_non_source_file_is_skipped_like_a_folder_without_sources(tmp_path: Path) -> None:
    py = tmp_path / "tool.py"
    py.write_text("print('hi')\n")
    code, out, err = run("check", "--no-cache", str(py))
    assert code == 3 and out == ""
    assert "tool.py: skipped: not a source file" in err
    (tmp_path / "empty").mkdir()
    assert run("check", "--no-cache", str(tmp_path / "empty"))[0] == 3
    # with a source file beside it the run goes on (as the README's exit codes say)
    code, out, err = run("check", "--no-cache", "--counts", "source", str(py), str(FIXTURE))
    assert code == 0 and "tool.py: skipped: not a source file" in err and out


def test_flags_are_never_abbreviated() -> None:
    code, _out, err = run("gpus", "--gpu", "h100")
    assert code == 2 and "unrecognized arguments" in err
    assert run("check", "--form", "json", str(FIXTURE))[0] == 2


def test_gpus_table_fits_100_columns() -> None:
    code, out, _err = run("gpus")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "H100" in out and "Aliases:" in out


def test_sarif_carries_the_quick_fixes_as_replacements() -> None:
    from sarif_pydantic import Sarif

    path = FIXTURE.parent / "rl011_map_tofrom.cpp"
    code, out, _err = run(
        "check", "--no-cache", "--counts", "source", "--format", "sarif", str(path)
    )
    assert code == 0
    log = json.loads(out)
    Sarif.model_validate(log)
    fixed = [r for r in log["runs"][0]["results"] if r["ruleId"] == "RL011" and "fixes" in r]
    assert fixed
    change = fixed[0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert "map(to: a[0:n*n])" in change["insertedContent"]["text"]
    assert change["deletedRegion"]["startLine"] == 3
