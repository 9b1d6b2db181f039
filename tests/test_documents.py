"""Documents: incremental changes applied to bytes and to the tree-sitter tree."""

from __future__ import annotations

import random

from roofline_lsp.engine.documents import Change, Document, uri_to_path
from roofline_lsp.syntax.parsing import parse
from roofline_lsp.syntax.positions import encode

SRC = """// café ☕ kernels
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // 🚀 fast
    if (i < n) x[i] = 2.0f * x[i];
}
"""


def _sexp(doc: Document) -> str:
    assert doc.tree is not None
    return str(doc.tree.root_node)


def test_incremental_edit_matches_fresh_parse() -> None:
    doc = Document("file:///tmp/a.cu", SRC, 1, "cuda-cpp")
    # rename the kernel: line 1, characters 16..21 ("scale")
    doc.apply([Change("scale_twice", ((1, 16), (1, 21)))], 2)
    assert b"void scale_twice(float" in doc.source
    # after the emoji on line 2 (UTF-16 columns: the emoji counts 2)
    line2 = SRC.splitlines()[2]
    col = len(line2.encode("utf-16-le")) // 2
    doc.apply([Change(" // more", ((2, col), (2, col)))], 3)
    assert doc.source.splitlines()[2].endswith("🚀 fast // more".encode())
    assert doc.version == 3
    assert _sexp(doc) == str(parse(doc.source).root_node)


def test_several_changes_in_one_notification_apply_in_order() -> None:
    doc = Document("file:///tmp/a.cu", "abc\ndef\n", 1, "cuda")
    doc.apply(
        [
            Change("X", ((0, 0), (0, 1))),
            Change("YY", ((1, 1), (1, 2))),
            Change("\n", ((0, 3), (0, 3))),
        ],
        2,
    )
    assert doc.source == b"Xbc\n\ndYYf\n"


def test_full_change_and_random_edits_keep_tree_in_sync() -> None:
    rng = random.Random(3)
    doc = Document("file:///tmp/r.cu", SRC, 1, "cuda-cpp")
    doc.apply([Change(SRC * 3)], 2)
    text = SRC * 3
    snippets = ["x", "é", "🚀", "\n", "{", "}", "__global__ void k(){}\n", "/*", "*/", ";"]
    for v in range(3, 60):
        lines = text.split("\n")
        l0 = rng.randrange(len(lines))
        k = rng.randrange(len(lines[l0]) + 1)  # a character index, never inside a pair
        c0 = len(lines[l0][:k].encode("utf-16-le")) // 2
        new = rng.choice(snippets)
        doc.apply([Change(new, ((l0, c0), (l0, c0)))], v)
        lines[l0] = lines[l0][:k] + new + lines[l0][k:]
        text = "\n".join(lines)
        assert doc.source == encode(text)
    assert _sexp(doc) == str(parse(doc.source).root_node)
    assert doc.lines.starts == type(doc.lines).of(doc.source).starts


def test_files_without_kernels_are_not_parsed() -> None:
    doc = Document("file:///tmp/plain.cpp", "int main() { return 0; }\n", 1, "cpp")
    assert doc.tree is None
    doc.apply([Change("__global__ void k() {}\n", ((0, 0), (0, 0)))], 2)
    assert doc.tree is not None
    other = Document("file:///tmp/notes.txt", "__global__ in prose", 1, "plaintext")
    assert other.tree is None


def test_too_large_document_keeps_text_but_no_tree() -> None:
    doc = Document("file:///tmp/big.cu", "__global__ void k() {}\n" + "x" * 100, 1, "cuda", 64)
    assert doc.too_large and doc.tree is None
    doc.apply([Change("", ((1, 0), (1, 100)))], 2)
    assert not doc.too_large and doc.tree is not None


def test_map_offset_through_later_edits() -> None:
    doc = Document("file:///tmp/m.cu", "aaaa\nbbbb\ncccc\n", 1, "cuda")
    snap = doc.snapshot()
    c_old = snap.source.index(b"cccc")
    doc.apply([Change("XYZ\n", ((0, 0), (0, 0)))], 2)  # insert before
    doc.apply([Change("", ((2, 1), (2, 3)))], 3)  # delete inside "bbbb"
    assert doc.source[doc.map_offset(c_old, snap.seq) :].startswith(b"cccc")
    assert doc.map_offset(snap.source.index(b"bbbb") + 2, snap.seq) == doc.source.index(b"bb\n") + 1
    doc.forget_edits_before(doc.seq)
    assert doc.map_offset(5, doc.seq) == 5


def test_snapshot_is_independent_of_later_edits() -> None:
    doc = Document("file:///tmp/s.cu", SRC, 1, "cuda")
    snap = doc.snapshot()
    before = str(snap.tree.root_node) if snap.tree else ""
    doc.apply([Change("garbage {{{", ((1, 0), (1, 0)))], 2)
    assert snap.tree is not None and str(snap.tree.root_node) == before
    assert snap.source == encode(SRC)


def test_uri_to_path() -> None:
    assert uri_to_path("file:///home/u/a%20b.cu") == "/home/u/a b.cu"
    assert uri_to_path("untitled:Untitled-1") == "untitled:Untitled-1"


def test_edits_are_parsed_once_when_the_tree_is_read() -> None:
    doc = Document("file:///tmp/l.cu", SRC, 1, "cuda-cpp")
    for v in range(2, 12):
        doc.apply([Change("x", ((1, 0), (1, 0)))], v)
    assert doc._stale  # ten keystrokes, no parse yet
    assert _sexp(doc) == str(parse(doc.source).root_node)
    assert not doc._stale


def test_a_parse_over_budget_leaves_no_tree_until_the_next_edit(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import roofline_lsp.engine.documents as documents

    doc = Document("file:///tmp/b.cu", SRC * 30, 1, "cuda-cpp")
    assert doc.tree is not None
    monkeypatch.setattr(documents, "PARSE_BUDGET_S", -1.0)  # every parse is over budget
    monkeypatch.setattr(documents, "PARSE_BUDGET_S_PER_MB", 0.0)
    doc.apply([Change("int y;\n", ((0, 0), (0, 0)))], 2)
    assert doc.tree is None and doc.parse_problem is not None
    assert "not analysed until the next edit" in doc.parse_problem
    monkeypatch.undo()
    doc.apply([Change("", ((0, 0), (0, 0)))], 3)
    assert doc.tree is not None and doc.parse_problem is None
    assert _sexp(doc) == str(parse(doc.source).root_node)


def test_a_large_insert_is_parsed_afresh_and_matches() -> None:
    doc = Document("file:///tmp/p.cu", SRC, 1, "cuda-cpp")
    assert doc.tree is not None
    big = "int v%d = %d;\n"  # 8,000 lines, over FRESH_PARSE_BYTES
    doc.apply([Change("".join(big % (i, i) for i in range(8000)) + "\n", ((0, 0), (0, 0)))], 2)
    assert _sexp(doc) == str(parse(doc.source).root_node)


def test_a_line_over_the_limit_means_no_tree() -> None:
    from roofline_lsp.engine.documents import MAX_LINE_BYTES

    doc = Document("file:///tmp/w.cu", SRC, 1, "cuda-cpp")
    assert not doc.long_line and doc.tree is not None
    doc.apply([Change("x" * (MAX_LINE_BYTES + 1) + "\n", ((0, 0), (0, 0)))], 2)
    assert doc.long_line and doc.tree is None
    doc.apply([Change("", ((0, 0), (1, 0)))], 3)  # the long line deleted again
    assert not doc.long_line and doc.tree is not None
