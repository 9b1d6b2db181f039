"""engine/workspace.py: documents, analyses and their coordinates, LLM verdict memory."""

from __future__ import annotations

from dataclasses import replace

from lsp_helpers import FIXTURES, open_analysed

from roofline_lsp.engine.documents import Change
from roofline_lsp.engine.workspace import Workspace, current_offset, is_local_url, one_line


def test_read_prefers_the_open_buffer() -> None:
    ws = Workspace()
    path = FIXTURES / "kernels.cu"
    on_disk, why = ws.read(str(path))
    assert why is None and on_disk == path.read_bytes()
    ws.open_document(path.as_uri(), "// edited\n", 1, "cuda-cpp")
    assert ws.read(str(path)) == (b"// edited\n", None)


def test_install_keeps_the_newest_analysis_and_forget_drops_it() -> None:
    ws = Workspace()
    uri, _ = open_analysed(ws, "kernels.cu")
    doc = ws.documents[uri]
    old = ws.analyses[uri]
    doc.apply([Change("// x\n", ((0, 0), (0, 0)))], 2)
    newer = ws.analyse_snapshot(doc.snapshot(), old.report)
    assert ws.install(newer) is not None
    assert ws.install(old) is None and ws.analyses[uri] is newer
    ws.forget(uri)
    assert uri not in ws.analyses and uri not in ws.documents and uri not in ws.advice_caches
    assert ws.install(newer) is None  # closed


def test_place_at_maps_offsets_through_later_edits() -> None:
    ws = Workspace()
    uri, text = open_analysed(ws, "kernels.cu")
    found = ws.current(uri)
    assert found is not None
    doc, a = found
    name = text.encode().index(b"scale_add(")
    hit = ws.place_at(doc, a, name)
    assert hit is not None and hit[0].kr.kernel.name == "scale_add" and not hit[1]
    doc.apply([Change("// xyz\n", ((0, 0), (0, 0)))], 2)
    assert current_offset(doc, a, hit[0].name_start) == hit[0].name_start + 7
    moved = ws.place_at(doc, a, name + 7)
    assert moved is not None and moved[0].kr.kernel.name == "scale_add"
    launch = text.encode().index(b"square_all<<<") + 7
    at_launch = ws.place_at(doc, a, launch)
    assert at_launch is not None and at_launch[1] and at_launch[0].kr.kernel.name == "square_all"


def test_llm_verdicts_replace_static_ones_for_the_same_text_only() -> None:
    ws = Workspace(replace(Workspace().config, backend="llm"))
    uri, _ = open_analysed(ws, "kernels.cu")
    a = ws.analyses[uri]
    p = a.places[0]
    v = replace(p.kr.verdict, source="llm", rationale="why")
    ws.remember_llm_verdict((uri, p.kr.kernel.name, v.gpu), "another text", v)
    assert ws.with_llm_verdicts(a) is a
    ws.remember_llm_verdict((uri, p.kr.kernel.name, v.gpu), p.text_hash, v)
    merged = ws.with_llm_verdicts(a)
    assert merged.places[0].kr.verdict.source == "llm"
    assert merged.places[1].kr.verdict.source == "static"


def test_settle_reports_each_problem_under_its_key() -> None:
    ws = Workspace()
    old = ws.config
    new, problems = ws.settle(replace(old, gpu="nope", compare_gpus=("a100", "nope2")), old)
    assert new.gpu == old.gpu and new.compare_gpus == ("a100",)
    assert [(p.key, str(p)) for p in problems] == [
        ("gpu", f"roofline.gpu: {one_line(problems[0]).removeprefix('roofline.gpu: ')}"),
        ("compareGpus", "roofline.compareGpus: unknown GPU nope2"),
    ]
    assert all(str(p).count("roofline.") == 1 for p in problems)


def test_is_local_url() -> None:
    assert is_local_url("http://localhost:8000/v1") and is_local_url("http://127.0.0.1/v1")
    assert not is_local_url("https://api.openai.com/v1")
