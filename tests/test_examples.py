"""Few-shot examples: the bundled set and retrieval from a dataset (tests/fixtures/llm/dataset)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roofline_lsp.detect.kernels import detect
from roofline_lsp.llm.examples import (
    benchmark_of,
    bundled_examples,
    load_example_index,
    program_of,
)

DATASET = Path(__file__).parent / "fixtures" / "llm" / "dataset"


def kernel_text(path: Path, name: str) -> tuple[str, int]:
    det = detect(path.read_bytes(), str(path))
    k = next(k for k in det.kernels if k.name == name)
    return "\n".join(path.read_text().splitlines()[k.line - 1 : k.end_line]), k.line


def test_nearest_examples_never_include_the_kernel_itself():
    index = load_example_index(str(DATASET))
    assert len(index.examples) == 5
    path = DATASET / "sources" / "demo" / "main.cu"
    text, line = kernel_text(path, "add_arrays")
    # from its own file: the rest of program `demo` is its benchmark too, only `other` is left
    got = index.nearest(text, 3, file=str(path), line=line)
    assert [e.id for e in got] == ["other/accumulate:4"]
    # the same text elsewhere (another copy of the file) is still the kernel itself
    got = index.nearest(text, 10, file="/elsewhere/copy.cu", line=1)
    assert [e.name for e in got][0] == "add_arrays_twice"
    assert "add_arrays" not in [e.name for e in got] and len(got) == 4
    assert index.nearest(text, 0) == []


def sibling_dataset(tmp_path: Path) -> Path:
    """Two benchmarks ported twice (`vec-cuda`/`vec-omp`, `arith-cuda`/`sum-omp` are
    different benchmarks), made from the fixture's sources."""
    demo = DATASET / "sources" / "demo" / "main.cu"
    loop = DATASET / "sources" / "other" / "loop.cpp"
    for program, src in (
        ("vec-cuda", demo),
        ("vec-omp", loop),
        ("arith-cuda", demo),
        ("sum-omp", loop),
    ):
        (tmp_path / "sources" / program).mkdir(parents=True)
        (tmp_path / "sources" / program / src.name).write_bytes(src.read_bytes())
    rows = [
        ("vec-cuda", "main.cu", "add_arrays", 2, "bandwidth"),
        ("vec-cuda", "main.cu", "add_arrays_twice", 8, "bandwidth"),
        ("vec-omp", "loop.cpp", "accumulate", 4, "bandwidth"),
        ("arith-cuda", "main.cu", "add_arrays_twice", 8, "bandwidth"),
        ("arith-cuda", "main.cu", "transcendental", 14, "compute"),
        ("sum-omp", "loop.cpp", "accumulate", 4, "bandwidth"),
    ]
    with open(tmp_path / "kernels.jsonl", "w") as f:
        for program, file, kernel, line, label in rows:
            lang = "omp" if file.endswith(".cpp") else "cuda"
            row = {
                "id": f"{program}/{kernel}",
                "program": program,
                "language": lang,
                "kernel": kernel,
                "file": f"{program}/{file}",
                "line": line,
                "label": label,
            }
            f.write(json.dumps(row) + "\n")
    return tmp_path


def test_nearest_examples_exclude_the_whole_benchmark_and_its_sibling_port(tmp_path):
    ds = sibling_dataset(tmp_path)
    index = load_example_index(str(ds))
    assert len(index.examples) == 6
    cuda = ds / "sources" / "vec-cuda" / "main.cu"
    text, line = kernel_text(cuda, "add_arrays")
    got = [e.id for e in index.nearest(text, 10, file=str(cuda), line=line)]
    # not its program's other kernel, not its OpenMP port; the same text in another
    # benchmark is still shown (it is the nearest)
    assert got[0] == "arith-cuda/add_arrays_twice"
    assert sorted(got) == ["arith-cuda/add_arrays_twice", "arith-cuda/transcendental",
                           "sum-omp/accumulate"]  # fmt: skip
    # from the OpenMP port: the CUDA program is excluded just the same
    omp = ds / "sources" / "vec-omp" / "loop.cpp"
    text, line = kernel_text(omp, "accumulate")
    got = [e.id for e in index.nearest(text, 10, file=str(omp), line=line)]
    assert not any(i.startswith("vec-") for i in got)
    assert sorted(got) == ["arith-cuda/add_arrays_twice", "arith-cuda/transcendental"]
    # a file of the same benchmark outside the dataset (another checkout of it) too
    other = tmp_path / "checkout" / "vec-cuda" / "main.cu"
    other.parent.mkdir(parents=True)
    other.write_bytes(cuda.read_bytes())
    got = [e.id for e in index.nearest("__global__ void f() {}", 10, file=str(other))]
    assert sorted(got) == ["arith-cuda/add_arrays_twice", "arith-cuda/transcendental",
                           "sum-omp/accumulate"]  # fmt: skip


@pytest.mark.parametrize(
    ("program", "benchmark"),
    [("haccmk-cuda", "haccmk"), ("haccmk-omp", "haccmk"), ("lu-sycl", "lu"),
     ("omp-cuda", "omp"), ("cuda-omp-x", "cuda-omp-x"), ("demo", "demo")],
)  # fmt: skip
def test_benchmark_is_the_program_without_its_port_suffix(program, benchmark):
    assert benchmark_of(program) == benchmark


def test_program_is_the_folder_under_sources(tmp_path):
    assert program_of(str(tmp_path / "ds" / "sources" / "a-cuda" / "src" / "k.cu")) == "a-cuda"
    assert program_of(str(tmp_path / "work" / "b-omp" / "main.cpp")) == "b-omp"


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
