# ruff: noqa: E501  (the page's script and style are kept as written, one statement a line)
"""The roofline chart: every kernel of a project on each target GPU's roofline, as one
self-contained HTML page (``roofline-lsp report --html``, the editor's *Show chart*) or as a
static SVG (``--svg``).

Hand-written SVG, drawn here in Python: the page needs no library and no network at view
time (its Content-Security-Policy forbids any fetch), it stays small (about 1 kB per kernel
and GPU) and the same drawing serves both outputs; the page's one script only adds the
tooltip, the GPU switch, the sortable table and the links between table and points.

The chart is drawn from the kernel objects ``check --format json`` writes (the CLI takes them
from ``check``'s run and its cache, the language server from its analyses), matched to the
GPU profiles by name. Axes are log-log: x the arithmetic intensity at the verdict's deciding precision (ops per
DRAM byte), y the attainable throughput ``min(peak, AI x DRAM bandwidth)`` on that GPU. The
ceilings are the GPU profile's peaks per precision (fp64, fp32, fp16, int), the slope its
DRAM bandwidth, each ridge point marked. Points are coloured by bound and shaped by language;
a measured verdict (Nsight Compute) is drawn hollow beside the estimate, joined by a line.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_lsp.model.gpus import GpuProfile
from roofline_lsp.model.numbers import fmt_count, fmt_si
from roofline_lsp.model.verdict import PRECISIONS

__all__ = ["Chart", "ChartKernel", "ChartPoint", "build_chart", "chart_html", "chart_svg"]

KernelJson = Mapping[str, Any]  # one kernel as ``check --format json`` writes it

BOUND_COLOURS = {"compute": "#d62728", "bandwidth": "#1f77b4", "unknown": "#7f7f7f"}
LANGUAGE_SHAPES = {"cuda": "circle", "hip": "square", "omp": "triangle", "acc": "diamond"}
LANGUAGE_NAMES = {"cuda": "CUDA", "hip": "HIP", "omp": "OpenMP", "acc": "OpenACC"}
PRECISION_NAMES = {
    "fp64": "FP64",
    "fp32": "FP32",
    "fp16": "FP16",
    "int": "INT32",
    "tensor": "tensor core",
}
CEILING_DASH = {"fp64": "", "fp32": "6 3", "fp16": "2 3", "int": "8 3 2 3"}
WHY_CHARS = 600  # the tooltip's "assumed" text is cut here: 500 kernels stay well under 2 MB

# panel geometry (SVG user units)
WIDTH, HEIGHT = 590.0, 400.0
LEFT, RIGHT, TOP, BOTTOM = 76.0, 146.0, 24.0, 44.0


@dataclass(frozen=True)
class ChartPoint:
    """One verdict placed on one GPU's roofline."""

    bound: str
    source: str
    confidence: float
    ai: dict[str, float | None]
    deciding: str | None
    x: float | None  # AI at the deciding precision; None: nothing to place
    y: float | None  # attainable ops/s at x
    why: str  # the explanation: what the verdict rests on and assumed


@dataclass(frozen=True)
class ChartKernel:
    name: str
    file: str  # as shown (relative to the base folder)
    path: str  # as analysed (for an editor to open)
    line: int
    language: str
    estimated: tuple[ChartPoint | None, ...]  # one per chart GPU
    measured: tuple[ChartPoint | None, ...]
    flip: str  # "" or "compute-bound on X, bandwidth-bound on Y"


@dataclass(frozen=True)
class Chart:
    gpus: tuple[GpuProfile, ...]
    kernels: tuple[ChartKernel, ...]
    title: str
    x_range: tuple[int, int]  # decades of the x axis (10**lo .. 10**hi)
    y_range: tuple[int, int]


def _point(v: KernelJson, gpu: GpuProfile) -> ChartPoint:
    ai: dict[str, float | None] = {
        str(p): (float(a) if isinstance(a, int | float) else None)
        for p, a in dict(v.get("ai") or {}).items()
    }
    deciding = v.get("deciding")
    x: float | None = None
    y: float | None = None
    ridges = dict(v.get("ridge") or {})
    tensor_ridge = ridges.get("tensor")
    if isinstance(deciding, str) and (deciding in PRECISIONS or deciding == "tensor"):
        a = ai.get(deciding)
        peak = (
            gpu.peak(deciding)
            if deciding in PRECISIONS
            else float(tensor_ridge) * gpu.dram_bandwidth
            if isinstance(tensor_ridge, int | float)
            else None
        )
        if a is not None and a > 0 and math.isfinite(a) and peak is not None:
            x = a
            y = min(peak, a * gpu.dram_bandwidth)
    else:
        deciding = None
    why = str(v.get("explanation") or "")
    if len(why) > WHY_CHARS:
        why = why[: WHY_CHARS - 1] + "…"
    return ChartPoint(
        str(v.get("bound", "unknown")),
        str(v.get("source", "static")),
        float(v.get("confidence") or 0.0),
        ai,
        deciding,
        x,
        y,
        why,
    )


def _flip(points: Sequence[ChartPoint | None], gpus: Sequence[GpuProfile]) -> str:
    by_bound: dict[str, list[str]] = {}
    for p, g in zip(points, gpus, strict=True):
        if p is not None and p.bound in ("compute", "bandwidth"):
            by_bound.setdefault(p.bound, []).append(g.name)
    if len(by_bound) < 2:
        return ""
    return ", ".join(f"{b}-bound on {' and '.join(names)}" for b, names in by_bound.items())


def _decades(values: Iterable[float], pad: float) -> tuple[int, int]:
    vs = [v for v in values if v > 0 and math.isfinite(v)]
    lo = math.floor(math.log10(min(vs) / pad))
    hi = math.ceil(math.log10(max(vs) * pad))
    return lo, max(hi, lo + 1)


def build_chart(
    kernels: Iterable[KernelJson],
    gpus: Sequence[GpuProfile],
    *,
    measured: Iterable[KernelJson] = (),
    title: str = "Roofline",
) -> Chart:
    """Every kernel of ``kernels`` (``check --format json`` objects; an optional ``path``
    key is the file an editor opens) on every GPU of ``gpus``, its verdicts matched to the
    GPUs by name. A verdict from a measured profile (source ``profile``) is drawn as the
    measurement; ``measured`` (a run with the profile, the same objects) adds the
    measurements beside the estimates, matched by file and line."""
    if not gpus:
        raise ValueError("a chart needs at least one GPU")
    measurements: dict[tuple[str, int], dict[str, KernelJson]] = {}
    for d in measured:
        found = {v["gpu"]: v for v in d.get("verdicts", ()) if v.get("source") == "profile"}
        if found:
            measurements[(str(d["file"]), int(d["line"]))] = found
    out: list[ChartKernel] = []
    for d in kernels:
        by_gpu = {v.get("gpu"): v for v in d.get("verdicts", ())}
        extra = measurements.get((str(d["file"]), int(d["line"])), {})
        est: list[ChartPoint | None] = []
        meas: list[ChartPoint | None] = []
        for g in gpus:
            v = by_gpu.get(g.name)
            m = extra.get(g.name)
            if v is not None and v.get("source") == "profile":
                m, v = m or v, None
            est.append(_point(v, g) if v is not None else None)
            meas.append(_point(m, g) if m is not None else None)
        shown = [e or m for e, m in zip(est, meas, strict=True)]
        out.append(
            ChartKernel(
                name=str(d["kernel"]),
                file=str(d["file"]),
                path=str(d.get("path") or d["file"]),
                line=int(d["line"]),
                language=str(d.get("language", "")),
                estimated=tuple(est),
                measured=tuple(meas),
                flip=_flip(shown, gpus),
            )
        )
    xs: list[float] = [r for g in gpus for r in g.ridges().values()]
    ys: list[float] = [g.peak(p) for g in gpus for p in PRECISIONS]
    for ck in out:
        for p in (*ck.estimated, *ck.measured):
            if p is not None and p.x is not None and p.y is not None:
                xs.append(p.x)
                ys.append(p.y)
    x_range = _decades(xs, 2.0)
    bw_lo = min(g.dram_bandwidth for g in gpus) * 10.0 ** x_range[0]
    y_range = _decades([*ys, bw_lo], 1.5)
    return Chart(tuple(gpus), tuple(out), title, x_range, y_range)


# -- drawing -------------------------------------------------------------------------------


class _Scale:
    def __init__(self, chart: Chart) -> None:
        self.x0, self.x1 = chart.x_range
        self.y0, self.y1 = chart.y_range
        self.w = WIDTH - LEFT - RIGHT
        self.h = HEIGHT - TOP - BOTTOM

    def x(self, v: float) -> float:
        return LEFT + (math.log10(v) - self.x0) / (self.x1 - self.x0) * self.w

    def y(self, v: float) -> float:
        return TOP + (self.y1 - math.log10(v)) / (self.y1 - self.y0) * self.h


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _marker(shape: str, x: float, y: float, r: float, attrs: str) -> str:
    if shape == "circle":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" {attrs}/>'
    if shape == "square":
        s = r * 0.9
        d = f"M{_f(x - s)} {_f(y - s)}h{_f(2 * s)}v{_f(2 * s)}h{_f(-2 * s)}z"
    elif shape == "triangle":
        d = f"M{_f(x)} {_f(y - r * 1.2)}L{_f(x + r * 1.1)} {_f(y + r * 0.8)}H{_f(x - r * 1.1)}z"
    else:
        d = f"M{_f(x)} {_f(y - r * 1.25)}L{_f(x + r)} {_f(y)}L{_f(x)} {_f(y + r * 1.25)}L{_f(x - r)} {_f(y)}z"
    return f'<path d="{d}" {attrs}/>'


def _superscript(n: int) -> str:
    return "10" + str(n).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _panel(chart: Chart, gi: int) -> str:
    g = chart.gpus[gi]
    s = _Scale(chart)
    out: list[str] = [
        f'<svg class="roofline" data-gpu="{gi}" viewBox="0 0 {_f(WIDTH)} {_f(HEIGHT)}" '
        f'width="{_f(WIDTH)}" height="{_f(HEIGHT)}" xmlns="http://www.w3.org/2000/svg" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{_f(LEFT)}" y="15" font-weight="bold" font-size="13">'
        f"{html.escape(g.name)}</text>",
        f'<rect x="{_f(LEFT)}" y="{_f(TOP)}" width="{_f(s.w)}" height="{_f(s.h)}" '
        'fill="none" stroke="#999"/>',
        '<g class="grid" stroke="#e5e5e5">',
    ]
    for d in range(s.x0, s.x1 + 1):
        x = s.x(10.0**d)
        out.append(f'<line x1="{_f(x)}" y1="{_f(TOP)}" x2="{_f(x)}" y2="{_f(TOP + s.h)}"/>')
    for d in range(s.y0, s.y1 + 1):
        y = s.y(10.0**d)
        out.append(f'<line x1="{_f(LEFT)}" y1="{_f(y)}" x2="{_f(LEFT + s.w)}" y2="{_f(y)}"/>')
    out.append('</g><g class="axes" fill="#333">')
    for d in range(s.x0, s.x1 + 1):
        out.append(
            f'<text x="{_f(s.x(10.0**d))}" y="{_f(TOP + s.h + 14)}" text-anchor="middle">'
            f"{_superscript(d)}</text>"
        )
    for d in range(s.y0, s.y1 + 1):
        out.append(
            f'<text x="{_f(LEFT - 4)}" y="{_f(s.y(10.0**d) + 4)}" text-anchor="end">'
            f"{html.escape(fmt_si(10.0**d, 'op/s', 3))}</text>"
        )
    out.append(
        f'<text x="{_f(LEFT + s.w / 2)}" y="{_f(HEIGHT - 8)}" text-anchor="middle">'
        "arithmetic intensity (ops per DRAM byte)</text>"
        f'<text transform="translate(11 {_f(TOP + s.h / 2)}) rotate(-90)" '
        'text-anchor="middle">attainable throughput</text></g>'
    )
    # the DRAM slope up to the highest ridge, then one ceiling per precision from its ridge
    bw = g.dram_bandwidth
    xlo = 10.0**s.x0
    xhi = 10.0**s.x1
    top_ridge = max(g.ridge(p) for p in PRECISIONS)
    x_end = min(top_ridge, xhi)
    out.append(
        '<g class="ceilings" fill="none" stroke="#222" stroke-width="1.6">'
        f'<line class="dram" data-gbs="{bw / 1e9:.0f}" x1="{_f(s.x(xlo))}" '
        f'y1="{_f(s.y(xlo * bw))}" x2="{_f(s.x(x_end))}" y2="{_f(s.y(x_end * bw))}"/>'
    )
    labels: list[str] = [
        f'<text x="{_f(s.x(xlo) + 6)}" y="{_f(s.y(xlo * bw * 1.6))}" '
        f'transform="rotate(-{_f(math.degrees(math.atan(s.h / (s.y1 - s.y0) / (s.w / (s.x1 - s.x0)))))} '
        f'{_f(s.x(xlo) + 6)} {_f(s.y(xlo * bw * 1.6))})">'
        f"DRAM {html.escape(fmt_si(bw, 'B/s'))}</text>"
    ]
    same_peak: dict[float, list[str]] = {}  # precisions sharing a ceiling share its labels
    for p in PRECISIONS:
        same_peak.setdefault(g.peak(p), []).append(PRECISION_NAMES[p])
    for p in PRECISIONS:
        peak = g.peak(p)
        ridge = g.ridge(p)
        if ridge >= xhi:
            continue
        dash = f' stroke-dasharray="{CEILING_DASH[p]}"' if CEILING_DASH[p] else ""
        rx = max(ridge, xlo)
        out.append(
            f'<line class="ceiling" data-precision="{p}" data-peak="{peak:.4g}"{dash} '
            f'x1="{_f(s.x(rx))}" y1="{_f(s.y(peak))}" x2="{_f(s.x(xhi))}" y2="{_f(s.y(peak))}"/>'
        )
        if ridge > xlo:
            out.append(
                f'<circle class="ridge" data-precision="{p}" data-ridge="{ridge:.4g}" '
                f'cx="{_f(s.x(ridge))}" cy="{_f(s.y(peak))}" r="3" fill="#222"/>'
            )
        names = same_peak[peak]
        if names[0] != PRECISION_NAMES[p]:
            continue
        labels.append(
            f'<text x="{_f(LEFT + s.w + 4)}" y="{_f(s.y(peak) + 4)}">'
            f"{'/'.join(names)} {html.escape(fmt_si(peak, 'op/s', 3))}</text>"
            f'<text x="{_f(s.x(ridge))}" y="{_f(s.y(peak) - 6)}" text-anchor="middle" '
            f'font-size="9" fill="#555">ridge {html.escape(fmt_count(ridge))}</text>'
        )
    out.append('</g><g class="labels" fill="#222">' + "".join(labels) + "</g>")
    # measured points and their links first, so the estimates stay on top
    out.append('<g class="points" stroke-width="1.2">')
    for ki, ck in enumerate(chart.kernels):
        shape = LANGUAGE_SHAPES.get(ck.language, "circle")
        e, m = ck.estimated[gi], ck.measured[gi]
        if m is not None and m.x is not None and m.y is not None:
            colour = BOUND_COLOURS.get(m.bound, "#7f7f7f")
            if e is not None and e.x is not None and e.y is not None:
                out.append(
                    f'<line class="link" data-k="{ki}" x1="{_f(s.x(e.x))}" y1="{_f(s.y(e.y))}" '
                    f'x2="{_f(s.x(m.x))}" y2="{_f(s.y(m.y))}" stroke="#888" '
                    'stroke-dasharray="3 2"/>'
                )
            out.append(
                _marker(
                    shape,
                    s.x(m.x),
                    s.y(m.y),
                    5,
                    f'class="pt measured" data-k="{ki}" data-m="1" fill="#fff" '
                    f'stroke="{colour}" stroke-width="2"',
                )
            )
    for ki, ck in enumerate(chart.kernels):
        e = ck.estimated[gi]
        if e is None or e.x is None or e.y is None:
            continue
        shape = LANGUAGE_SHAPES.get(ck.language, "circle")
        colour = BOUND_COLOURS.get(e.bound, "#7f7f7f")
        flip = " flip" if ck.flip else ""
        stroke = 'stroke="#000" stroke-width="2"' if ck.flip else 'stroke="#fff"'
        out.append(
            _marker(
                shape,
                s.x(e.x),
                s.y(e.y),
                4.5,
                f'class="pt estimated{flip}" data-k="{ki}" fill="{colour}" '
                f'fill-opacity="0.85" {stroke}',
            )
        )
    out.append("</g></svg>")
    return "".join(out)


def _legend() -> str:
    items = [
        f'<span><svg width="12" height="12"><circle cx="6" cy="6" r="5" fill="{c}"/></svg> '
        f"{b}-bound</span>"
        for b, c in BOUND_COLOURS.items()
    ]
    for lang, shape in LANGUAGE_SHAPES.items():
        items.append(
            '<span><svg width="14" height="14">'
            + _marker(shape, 7, 7, 5, 'fill="#555"')
            + f"</svg> {LANGUAGE_NAMES[lang]}</span>"
        )
    items.append(
        '<span><svg width="14" height="14"><circle cx="7" cy="7" r="5" fill="#fff" '
        'stroke="#555" stroke-width="2"/></svg> measured (Nsight Compute)</span>'
    )
    items.append(
        '<span><svg width="14" height="14"><circle cx="7" cy="7" r="5" fill="#999" '
        'stroke="#000" stroke-width="2"/></svg> verdict flips between GPUs</span>'
    )
    return '<div class="legend">' + "".join(items) + "</div>"


def chart_svg(chart: Chart) -> str:
    """The chart as one static SVG: the GPUs' panels side by side, with the legend's words
    in a title line (no script, no tooltip: for documents and slides)."""
    panels = [_panel(chart, gi) for gi in range(len(chart.gpus))]
    width = WIDTH * len(panels)
    body = "".join(
        f'<g transform="translate({_f(WIDTH * i)} 20)">{p}</g>' for i, p in enumerate(panels)
    )
    legend = (
        "red: compute-bound, blue: bandwidth-bound, grey: unknown; circle CUDA, square HIP, "
        "triangle OpenMP, diamond OpenACC; hollow: measured; black ring: verdict flips"
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_f(width)} {_f(HEIGHT + 20)}" '
        f'width="{_f(width)}" height="{_f(HEIGHT + 20)}" font-family="sans-serif">'
        f'<rect width="100%" height="100%" fill="#fff"/>'
        f'<text x="8" y="14" font-size="11" fill="#333">{html.escape(chart.title)}: '
        f"{html.escape(legend)}</text>{body}</svg>\n"
    )


def _kernel_data(ck: ChartKernel, links: bool) -> dict[str, object]:
    def point(p: ChartPoint | None) -> dict[str, object] | None:
        if p is None:
            return None
        return {
            "b": p.bound,
            "s": p.source,
            "c": round(p.confidence, 2),
            "ai": {k: (None if v is None else float(f"{v:.4g}")) for k, v in p.ai.items()},
            "d": p.deciding,
            "why": p.why,
        }

    d: dict[str, object] = {
        "n": ck.name,
        "f": f"{ck.file}:{ck.line}",
        "l": LANGUAGE_NAMES.get(ck.language, ck.language),
        "e": [point(p) for p in ck.estimated],
        "m": [point(p) for p in ck.measured],
        "x": ck.flip,
    }
    if links:
        d["p"] = ck.path
        d["line"] = ck.line
    return d


def _table(chart: Chart) -> str:
    has_measured = any(p is not None for ck in chart.kernels for p in ck.measured)
    head = ["kernel", "file:line", "language"]
    for g in chart.gpus:
        head += [f"{g.name} verdict", f"{g.name} AI", f"{g.name} confidence"]
        if has_measured:
            head.append(f"{g.name} measured AI")
    head.append("flips")
    rows: list[str] = []
    for ki, ck in enumerate(chart.kernels):
        cells = [
            (ck.name, html.escape(ck.name)),
            (f"{ck.file}:{ck.line:08d}", html.escape(f"{ck.file}:{ck.line}")),
            (ck.language, LANGUAGE_NAMES.get(ck.language, ck.language)),
        ]
        for e, m in zip(ck.estimated, ck.measured, strict=True):
            shown = e or m
            if shown is None:
                cells += [("", "-"), ("", "-"), ("", "-")]
            else:
                verdict = f"{shown.bound}" + (
                    "" if shown.source == "static" else f" ({shown.source})"
                )
                cells.append((verdict, html.escape(verdict)))
                cells.append((f"{shown.x:.6g}" if shown.x else "0", _ai_cell(shown)))
                cells.append((f"{shown.confidence:.2f}", f"{shown.confidence:.0%}"))
            if has_measured:
                if m is not None and e is not None and m.x:
                    cells.append((f"{m.x:.6g}", _ai_cell(m)))
                else:
                    cells.append(("", "-"))
        cells.append((ck.flip, html.escape(ck.flip)))
        rows.append(
            f'<tr data-k="{ki}">'
            + "".join(f'<td data-v="{html.escape(v, quote=True)}">{t}</td>' for v, t in cells)
            + "</tr>"
        )
    ths = "".join(f'<th data-c="{i}">{html.escape(h)}</th>' for i, h in enumerate(head))
    return (
        f'<table id="kernels"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _ai_cell(p: ChartPoint) -> str:
    if p.x is None:
        return "-"
    return html.escape(f"{fmt_count(p.x)} ({PRECISION_NAMES.get(p.deciding or '', '')})")


STYLE = """
body{font-family:system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 8px}
.tabs button{margin-right:4px;padding:3px 10px;border:1px solid #999;background:#f4f4f4;
cursor:pointer}.tabs button.on{background:#333;color:#fff}
.panels{display:flex;flex-wrap:wrap;gap:8px}
.panels svg.roofline{display:none;max-width:100%;height:auto}
.panels svg.roofline.on,body.all .panels svg.roofline{display:block}
.legend{margin:6px 0;font-size:12px}.legend span{margin-right:12px;white-space:nowrap}
.pt{cursor:pointer}.pt.sel{stroke:#ff9800!important;stroke-width:3!important}
#tip{position:fixed;display:none;max-width:460px;background:#fffbe6;border:1px solid #aaa;
padding:6px 8px;font-size:12px;pointer-events:none;box-shadow:0 2px 6px #0003;z-index:2}
#tip b{font-size:13px}#tip .why{color:#444;margin-top:4px}
table{border-collapse:collapse;font-size:12px;margin-top:12px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f0f0f0;cursor:pointer;position:sticky;top:0}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}
tr.sel td{background:#ffe7b3}tbody tr{cursor:pointer}
.note{font-size:12px;color:#555}
"""

SCRIPT = r"""
(function(){
var D=JSON.parse(document.getElementById('chart-data').textContent);
var vscode=typeof acquireVsCodeApi==='function'?acquireVsCodeApi():null;
var tip=document.getElementById('tip');
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
function num(v){if(v===null||v===undefined)return '-';var a=Math.abs(v);
 return a>=100?v.toFixed(0):a>=1?v.toPrecision(3):v.toPrecision(2);}
function pointText(p,label){if(!p)return '';var ai=[];
 for(var k in p.ai){ai.push(k+' '+num(p.ai[k]));}
 return '<div><i>'+label+'</i>: '+esc(p.b)+'-bound ('+esc(p.s)+', confidence '+Math.round(p.c*100)+'%)</div>'+
 '<div>AI per precision: '+esc(ai.join(', '))+'</div>'+(p.why?'<div class="why">'+esc(p.why)+'</div>':'');}
function tipHtml(k,g){var K=D.kernels[k];
 return '<b>'+esc(K.n)+'</b> <span>'+esc(K.f)+'</span> · '+esc(K.l)+' · '+esc(D.gpus[g])+
 pointText(K.e[g],'estimate')+pointText(K.m[g],'measured')+(K.x?'<div><b>flips:</b> '+esc(K.x)+'</div>':'');}
function gpuOf(el){return +el.closest('svg.roofline').getAttribute('data-gpu');}
function show(el,x,y){var k=+el.getAttribute('data-k');tip.innerHTML=tipHtml(k,gpuOf(el));
 tip.style.display='block';tip.style.left=Math.min(x+12,innerWidth-470)+'px';tip.style.top=(y+12)+'px';}
function select(k,scroll){document.querySelectorAll('.sel').forEach(function(e){e.classList.remove('sel');});
 document.querySelectorAll('.pt[data-k="'+k+'"],tr[data-k="'+k+'"]').forEach(function(e){e.classList.add('sel');});
 var row=document.querySelector('tr[data-k="'+k+'"]');if(scroll&&row&&row.scrollIntoView)row.scrollIntoView({block:'nearest'});}
document.querySelectorAll('.pt').forEach(function(el){
 el.addEventListener('mouseenter',function(ev){show(el,ev.clientX,ev.clientY);});
 el.addEventListener('mousemove',function(ev){show(el,ev.clientX,ev.clientY);});
 el.addEventListener('mouseleave',function(){tip.style.display='none';});
 el.addEventListener('click',function(){var k=+el.getAttribute('data-k');select(k,true);
  var K=D.kernels[k];if(vscode&&K.p)vscode.postMessage({command:'open',path:K.p,line:K.line});});});
document.querySelectorAll('tbody tr').forEach(function(tr){tr.addEventListener('click',function(){
 var k=+tr.getAttribute('data-k');select(k,false);var K=D.kernels[k];
 if(vscode&&K.p)vscode.postMessage({command:'open',path:K.p,line:K.line});});});
var tbody=document.querySelector('#kernels tbody');
document.querySelectorAll('#kernels th').forEach(function(th){th.addEventListener('click',function(){
 var c=+th.getAttribute('data-c');var asc=!th.classList.contains('asc');
 document.querySelectorAll('#kernels th').forEach(function(h){h.classList.remove('asc','desc');});
 th.classList.add(asc?'asc':'desc');
 var rows=Array.prototype.slice.call(tbody.rows);
 rows.sort(function(a,b){var x=a.cells[c].getAttribute('data-v'),y=b.cells[c].getAttribute('data-v');
  var nx=parseFloat(x),ny=parseFloat(y);var r=(!isNaN(nx)&&!isNaN(ny)&&String(nx)!=='NaN'&&/^[-0-9.e+]+$/.test(x)&&/^[-0-9.e+]+$/.test(y))?nx-ny:x.localeCompare(y);
  return asc?r:-r;});
 rows.forEach(function(r){tbody.appendChild(r);});});});
var tabs=document.querySelectorAll('.tabs button');
tabs.forEach(function(b){b.addEventListener('click',function(){
 tabs.forEach(function(x){x.classList.remove('on');});b.classList.add('on');
 var g=b.getAttribute('data-gpu');document.body.classList.toggle('all',g==='all');
 document.querySelectorAll('svg.roofline').forEach(function(s){s.classList.toggle('on',s.getAttribute('data-gpu')===g);});});});
document.body.setAttribute('data-ready','1');
document.body.setAttribute('data-render-ms',String(Math.round(performance.now())));
})();
"""


def chart_html(chart: Chart, *, links: bool = False) -> str:
    """The chart as one self-contained page: no external resource, and a policy that forbids
    any (``default-src 'none'``); the script is allowed by its hash. ``links``: the kernels'
    analysed paths go in the page so an editor's webview can open them on click."""
    data = {
        "gpus": [g.name for g in chart.gpus],
        "kernels": [_kernel_data(ck, links) for ck in chart.kernels],
    }
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    digest = hashlib.sha256(SCRIPT.encode()).digest()
    script_hash = base64.b64encode(digest).decode()
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{script_hash}'"
    )
    on = ' class="on"'
    tabs = "".join(
        f'<button data-gpu="{i}"{on if i == 0 else ""}>{html.escape(g.name)}</button>'
        for i, g in enumerate(chart.gpus)
    )
    if len(chart.gpus) > 1:
        tabs += '<button data-gpu="all">side by side</button>'
    panels = "".join(
        _panel(chart, gi).replace('class="roofline"', 'class="roofline on"', 1 if gi == 0 else 0)
        for gi in range(len(chart.gpus))
    )
    n = len(chart.kernels)
    placed = sum(
        1 for ck in chart.kernels if any(p is not None and p.x is not None for p in ck.estimated)
    )
    flips = sum(1 for ck in chart.kernels if ck.flip)
    summary = f"{n} kernel{'s' if n != 1 else ''}, {placed} placed on the roofline"
    if len(chart.gpus) > 1:
        summary += f", {flips} whose verdict flips between GPUs"
    title = html.escape(chart.title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{title}</title><style>{STYLE}</style></head><body>"
        f'<h1>{title}</h1><p class="note">{html.escape(summary)}. x: arithmetic intensity '
        "at the verdict's deciding precision; y: attainable throughput min(peak, AI x DRAM "
        "bandwidth). Hover a point for its details; click to find it in the table.</p>"
        f'<div class="tabs">{tabs}</div>{_legend()}<div class="panels">{panels}</div>'
        f'<div id="tip"></div>{_table(chart)}'
        f'<script type="application/json" id="chart-data">{blob}</script>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )
