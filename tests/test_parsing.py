"""parsing.top_level_captures: the same captures as a whole-file query, re-walking only the
top-level nodes an edit touched."""

import random
from pathlib import Path

import pytest
from edits import SNIPPETS, edited

from roofline_lsp.syntax.parsing import captures, parse, parse_range, top_level_captures

FIXTURES = sorted(
    p
    for p in (Path(__file__).parent / "fixtures").glob("*/*")
    if p.suffix in (".cu", ".cuh", ".cpp", ".c", ".h", ".hip")
)
NAMES = ("cuda-kernels", "cuda-definitions")


def spans(caps):
    return {k: [(n.start_byte, n.end_byte, n.type) for n in v] for k, v in caps.items()}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_matches_a_whole_file_query_through_random_edits(path):
    rng = random.Random(path.name)
    source = path.read_bytes()
    tree = parse(source)
    _, memo = top_level_captures(NAMES, tree.root_node, source)
    for _ in range(10):
        at = rng.randrange(len(source) + 1)
        end = min(len(source), at + rng.choice([0, 0, 1, 5]))
        source, tree = edited(source, tree, at, end, rng.choice(SNIPPETS).encode())
        caps, memo = top_level_captures(NAMES, tree.root_node, source, memo)
        assert spans(caps) == spans(captures(NAMES, tree.root_node))


def test_an_edit_walks_only_the_node_it_touched():
    src = "".join(f"__global__ void k{i}(float *x) {{ x[{i}] = 1.0f; }}\n" for i in range(20))
    source = src.encode()
    tree = parse(source)
    _, memo = top_level_captures(NAMES, tree.root_node, source)
    at = source.index(b"x[5] = 1.0f") + len("x[5] = ")
    source, tree = edited(source, tree, at, at + 4, b"2.0f")
    caps, new_memo = top_level_captures(NAMES, tree.root_node, source, memo)
    assert len(caps["function"]) == 20
    # 19 functions found again from the memo, one walked afresh
    assert len(set(new_memo) & set(memo)) == 19 and len(new_memo) == 20


def test_a_root_that_becomes_an_error_drops_the_memo():
    # captures anchored at translation_unit must not survive a parse whose root is ERROR
    source = b"const int N = 4;\n__global__ void k(int *a) { a[0] = N; }\n"
    tree = parse(source)
    caps, memo = top_level_captures(NAMES, tree.root_node, source)
    assert len(caps["const"]) == 1
    at = source.index(b"int *a")
    source, tree = edited(source, tree, at, at, b"{")
    assert tree.root_node.type == "ERROR"
    caps, memo = top_level_captures(NAMES, tree.root_node, source, memo)
    assert spans(caps) == spans(captures(NAMES, tree.root_node))


def test_a_range_parse_reads_only_its_range_at_the_file_offsets():
    # the broken text around the range is not read: the kernel inside parses whole, at its
    # own offsets and points in the file
    src = b"int broken( {{ ;\n\n__global__ void k(float *a) { a[0] = 1.0f; }\nstruct S { int x\n"
    start = src.index(b"__global__")
    end = src.index(b"}\n", start) + 1
    tree = parse_range(src, start, end)
    (fn,) = captures("cuda-kernels", tree.root_node)["function"]
    assert (fn.start_byte, fn.end_byte) == (start, end)
    assert (fn.start_point.row, fn.start_point.column) == (2, 0)
    assert not tree.root_node.has_error
