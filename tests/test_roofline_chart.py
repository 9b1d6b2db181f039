"""The roofline chart (``present/roofline_chart.py``): where kernels and ceilings are drawn,
verdict flips, estimate beside measurement, escaping, the page's offline policy and size.
The page in a real browser: ``tests/e2e/test_chart_browser.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import EXAMPLES
from synthetic_project import write_project

from roofline_lsp.engine.workspace import Workspace
from roofline_lsp.model.config import Config
from roofline_lsp.model.gpus import load_registry
from roofline_lsp.model.verdict import PRECISIONS
from roofline_lsp.present.json_output import to_json
from roofline_lsp.present.roofline_chart import build_chart, chart_html, chart_svg

NCU = Path(__file__).parent / "fixtures" / "ncu"


def analyse(
    paths: list[Path], gpus: str, profile: str | None = None, base: str | None = None
) -> list[dict[str, Any]]:
    """``check --format json``'s kernel objects of ``paths`` (source counts)."""
    names = gpus.split(",")
    ws = Workspace(
        Config(gpu=names[0], compare_gpus=tuple(names[1:]), counts="source", profile=profile)
    )
    if profile:
        assert ws.load_measured(profile) is None
    return to_json([ws.analyse_source(str(p), p.read_bytes()) for p in paths], base)


def page_data(page: str) -> dict[str, object]:
    blob = re.search(r'<script type="application/json" id="chart-data">(.*?)</script>', page)
    assert blob is not None
    data: dict[str, object] = json.loads(blob.group(1).replace("<\\/", "</"))
    return data


EXAMPLE_FILES = sorted(p for p in EXAMPLES.iterdir() if p.is_file())


def test_every_kernel_is_a_point_on_every_gpu_with_its_ceilings():
    reg = load_registry()
    gpus = (reg.get("h100"), reg.get("rtx4090"))
    kernels = analyse(EXAMPLE_FILES, "h100,rtx4090", base=str(EXAMPLES))
    chart = build_chart(kernels, gpus)
    n = len(kernels)
    assert len(chart.kernels) == n >= 6
    page = chart_html(chart)
    assert page.count('class="roofline') == 2
    for gi, g in enumerate(gpus):
        panel = page.split(f'data-gpu="{gi}" viewBox')[1].split("</svg>")[0]
        assert panel.count('class="pt estimated') == n
        assert panel.count('class="dram"') == 1
        assert {m for m in re.findall(r'class="ceiling" data-precision="(\w+)"', panel)} == set(
            PRECISIONS
        )
        peaks = {
            p: float(v) for p, v in re.findall(r'data-precision="(\w+)" data-peak="([^"]+)"', panel)
        }
        for p in PRECISIONS:
            assert peaks[p] == pytest.approx(g.peak(p), rel=1e-3)
    # each point sits at its verdict's deciding intensity, below the roof
    for ck in chart.kernels:
        for p, g in zip(ck.estimated, gpus, strict=True):
            assert p is not None and p.x is not None and p.y is not None and p.deciding
            assert p.x == p.ai[p.deciding]
            assert p.y == pytest.approx(min(g.peak(p.deciding), p.x * g.dram_bandwidth))
    files = {ck.file for ck in chart.kernels}
    assert "saxpy.cu" in files  # relative to the base folder


def test_a_kernel_whose_verdict_differs_between_gpus_is_marked(tmp_path):
    # 24 fp64 FMAs (48 FLOP) per 16 bytes moved: 3 FLOP/B, above the RTX 4090's fp64 ridge
    # (about 1.3) and below the H100's (about 10)
    src = tmp_path / "dp.cu"
    src.write_text(
        "__global__ void dp(const double* x, double* y, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  double v = x[i];\n"
        "  for (int k = 0; k < 24; ++k) v = v * 1.0001 + 0.5;\n"
        "  y[i] = v;\n"
        "}\n"
    )
    reg = load_registry()
    gpus = (reg.get("h100"), reg.get("rtx4090"))
    reports = analyse([src], "h100,rtx4090")
    (k,) = reports
    bounds = {v["gpu"]: v["bound"] for v in k["verdicts"]}
    assert bounds == {"H100-SXM5-80GB": "bandwidth", "RTX-4090": "compute"}, k["verdicts"]
    chart = build_chart(reports, gpus)
    (ck,) = chart.kernels
    assert ck.flip == "bandwidth-bound on H100-SXM5-80GB, compute-bound on RTX-4090"
    page = chart_html(chart)
    assert page.count('class="pt estimated flip"') == 2
    assert "1 whose verdict flips between GPUs" in page
    # the same kernel on one GPU only flips nothing
    assert build_chart(reports, gpus[:1]).kernels[0].flip == ""


def test_measured_points_are_drawn_beside_the_estimate_and_linked():
    reg = load_registry()
    gpus = (reg.get("h100"),)
    static = analyse([NCU / "kernels.cu"], "h100")
    measured = analyse([NCU / "kernels.cu"], "h100", profile=str(NCU / "profile_raw.csv"))
    chart = build_chart(static, gpus, measured=measured)
    by_name = {ck.name: ck for ck in chart.kernels}
    assert by_name["not_profiled"].measured == (None,)
    profiled = [ck for ck in chart.kernels if ck.measured[0] is not None]
    assert len(profiled) >= 2
    for ck in profiled:
        e, m = ck.estimated[0], ck.measured[0]
        assert e is not None and m is not None
        assert e.source == "static" and m.source == "profile"
    page = chart_html(chart)
    assert page.count('class="pt measured"') == len(profiled)
    assert page.count('class="link"') == sum(
        1 for ck in profiled if ck.measured[0] and ck.measured[0].x and ck.estimated[0]
    )
    assert "measured AI" in page  # the table's column
    # a run whose verdicts are themselves measured: drawn as measurements, not estimates
    chart = build_chart(measured, gpus)
    assert sum(1 for ck in chart.kernels if ck.measured[0] is not None) == len(profiled)
    assert sum(1 for ck in chart.kernels if ck.estimated[0] is not None) == 1


def test_the_page_is_offline_and_escapes_names(tmp_path):
    src = tmp_path / "odd.cu"
    src.write_text(
        "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"
        "// </script><script>alert(1)</script>\n"
    )
    reg = load_registry()
    chart = build_chart(analyse([src], "h100"), (reg.get("h100"),), title="<b>&</b>")
    page = chart_html(chart)
    assert "<title>&lt;b&gt;&amp;&lt;/b&gt;</title>" in page
    assert "default-src 'none'" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched
    assert page.count("<script") == 2
    data = page_data(page)
    assert data["gpus"] == ["H100-SXM5-80GB"]
    # links (paths an editor opens) only when asked
    assert "p" not in data["kernels"][0]  # type: ignore[index]
    linked = page_data(chart_html(chart, links=True))
    assert linked["kernels"][0]["p"] == str(src)  # type: ignore[index]
    # an editor's path, when given, is the one linked
    moved = [{**k, "path": "/elsewhere/odd.cu"} for k in analyse([src], "h100")]
    relinked = page_data(chart_html(build_chart(moved, (reg.get("h100"),)), links=True))
    assert relinked["kernels"][0]["p"] == "/elsewhere/odd.cu"  # type: ignore[index]


def test_svg_has_every_panel_and_no_script():
    reg = load_registry()
    gpus = (reg.get("h100"), reg.get("a100"), reg.get("mi300x"))
    chart = build_chart(analyse(EXAMPLE_FILES, "h100,a100,mi300x"), gpus)
    svg = chart_svg(chart)
    assert svg.startswith("<?xml")
    assert svg.count('class="roofline"') == 3
    assert "<script" not in svg
    for g in gpus:
        assert g.name in svg


def test_kernels_without_arithmetic_are_listed_not_placed(tmp_path):
    src = tmp_path / "copy.cu"
    src.write_text(
        "__global__ void copy(int* a, const int* b) { a[threadIdx.x] = b[threadIdx.x]; }\n"
    )
    reg = load_registry()
    chart = build_chart(analyse([src], "h100"), (reg.get("h100"),))
    (ck,) = chart.kernels
    page = chart_html(chart)
    assert '<tr data-k="0">' in page
    placed = ck.estimated[0] is not None and ck.estimated[0].x is not None
    assert page.count('class="pt estimated') == (1 if placed else 0)


def test_five_hundred_kernels_stay_under_two_megabytes(tmp_path):
    files = write_project(tmp_path / "big")
    reg = load_registry()
    gpus = (reg.get("h100"), reg.get("rtx4090"))
    chart = build_chart(analyse(files, "h100,rtx4090", base=str(tmp_path / "big")), gpus)
    assert len(chart.kernels) == 500
    page = chart_html(chart)
    assert len(page.encode()) < 2_000_000
    assert page.count('class="pt estimated') == 1000
    # they spread over the roofline: both bounds on both GPUs
    for gi in range(2):
        bounds = {ck.estimated[gi].bound for ck in chart.kernels if ck.estimated[gi]}
        assert bounds == {"compute", "bandwidth"}


def test_a_chart_needs_a_gpu():
    with pytest.raises(ValueError):
        build_chart([], ())


def test_a_tensor_core_kernel_is_placed_under_its_tensor_core_roof():
    # the WMMA GEMM fixture on an A100: the tensor-core intensity decides (its ridge: the
    # tf32 peak of 156 TFLOP/s over the DRAM bandwidth), the point at min(peak, AI x B/s)
    fixture = Path(__file__).parent / "fixtures" / "estimator" / "wmma_tf32_4096.cu"
    gpu = load_registry().get("a100-sxm4-40gb")
    kernels = analyse([fixture], "a100-sxm4-40gb")
    v = kernels[0]["verdicts"][0]
    v["deciding"] = "tensor"  # (int may decide too: the tiles' loads are not counted)
    chart = build_chart(kernels, (gpu,))
    p = chart.kernels[0].estimated[0]
    assert p is not None and p.deciding == "tensor" and p.x == v["ai"]["tensor"]
    peak = v["ridge"]["tensor"] * gpu.dram_bandwidth
    assert peak == pytest.approx(156e12)
    assert p.y == pytest.approx(min(peak, p.x * gpu.dram_bandwidth))
