"""Few-shot examples: the bundled set and retrieval from a dataset (tests/fixtures/llm/dataset)."""

from __future__ import annotations

import shutil
from pathlib import Path

from roofline_lsp.detect.kernels import detect
from roofline_lsp.llm.examples import bundled_examples, load_example_index

DATASET = Path(__file__).parent / "fixtures" / "llm" / "dataset"


def test_nearest_examples_never_include_the_kernel_itself():
    index = load_example_index(str(DATASET))
    assert len(index.examples) == 5
    path = DATASET / "sources" / "demo" / "main.cu"
    det = detect(path.read_bytes(), str(path))
    k = det.kernels[0]  # add_arrays
    text = "\n".join(path.read_text().splitlines()[k.line - 1 : k.end_line])
    got = index.nearest(text, 3, file=str(path), line=k.line)
    assert [e.name for e in got][0] == "add_arrays_twice"
    assert "add_arrays" not in [e.name for e in got] and len(got) == 3
    # the same text elsewhere (another copy of the file) is still the kernel itself
    got = index.nearest(text, 10, file="/elsewhere/copy.cu", line=1)
    assert "add_arrays" not in [e.name for e in got] and len(got) == 4
    assert index.nearest(text, 0) == []


def test_index_identity_changes_with_the_dataset(tmp_path):
    copy = tmp_path / "ds"
    shutil.copytree(DATASET, copy)
    first = load_example_index(str(copy)).identity
    with open(copy / "kernels.jsonl", "a") as f:
        f.write("\n")
    assert load_example_index(str(copy)).identity != first


def test_bundled_examples_are_labelled_kernels():
    examples = bundled_examples()
    assert len(examples) == 6
    assert {e.label for e in examples} == {"compute", "bandwidth"}
    assert {e.language for e in examples} == {"cuda", "omp"}
    for e in examples:
        assert e.reason and e.source
        det = detect(e.source.encode(), "example.cu" if e.language == "cuda" else "example.cpp")
        assert [k.language for k in det.kernels] == [e.language]
