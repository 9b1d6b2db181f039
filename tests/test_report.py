"""``roofline-lsp report`` (``cli/report.py``) end to end, in-process: HTML and SVG files,
several GPUs, a measured profile beside the estimates, and usage errors."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import EXAMPLES, run

from roofline_lsp.cli.arguments import EXIT_NOTHING, EXIT_OK, EXIT_USAGE

NCU = Path(__file__).parent / "fixtures" / "ncu"


def test_report_writes_html_and_svg(tmp_path):
    html, svg = tmp_path / "chart.html", tmp_path / "chart.svg"
    code, out, err = run(
        "report", str(EXAMPLES), "--gpu", "h100,rtx4090", "--counts", "source",
        "--html", str(html), "--svg", str(svg), "--title", "Examples",
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert out.splitlines() == [str(html), str(svg)]
    page = html.read_text()
    assert "<title>Examples</title>" in page
    assert page.count('class="roofline') == 2
    assert 'data-gpu="all">side by side' in page
    assert "saxpy.cu:4" in page
    assert svg.read_text().count('class="roofline"') == 2
    assert "on H100-SXM5-80GB, RTX-4090" in err


def test_report_with_a_profile_draws_measured_points_beside_estimates(tmp_path):
    html = tmp_path / "chart.html"
    code, _, err = run(
        "report", str(NCU / "kernels.cu"), "--gpu", "h100", "--counts", "source",
        "--profile", str(NCU / "profile_raw.csv"), "--html", str(html),
    )  # fmt: skip
    assert code == EXIT_OK, err
    page = html.read_text()
    measured = page.count('class="pt measured"')
    assert measured >= 2
    # every kernel keeps its estimate, measured or not
    assert page.count('class="pt estimated') == 4


def test_report_usage_errors(tmp_path):
    code, _, err = run("report", str(EXAMPLES))
    assert code == EXIT_USAGE and "--html" in err and "Traceback" not in err
    code, _, err = run("report", str(EXAMPLES), "--gpu", "nosuchgpu", "--html", "x.html")
    assert code == EXIT_USAGE and "nosuchgpu" in err
    missing = tmp_path / "no" / "dir" / "chart.html"
    code, _, err = run("report", str(EXAMPLES), "--counts", "source", "--html", str(missing))
    assert code == EXIT_USAGE and err.startswith(f"roofline-lsp: --html {missing}:")
    code, _, err = run(
        "report", str(EXAMPLES), "--profile", str(tmp_path / "none.csv"), "--html", "x.html"
    )
    assert code == EXIT_USAGE and "--profile" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run("report", str(tmp_path / "empty"), "--html", str(tmp_path / "c.html"))
    assert code == EXIT_NOTHING and "no source files" in err
