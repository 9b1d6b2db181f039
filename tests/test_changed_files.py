"""``--changed-since`` and ``--shard`` (``engine/changed_files.py``): the files changed in git
and those including them; a deterministic, disjoint, complete split."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from roofline_lsp.engine.changed_files import changed_files, changed_paths, parse_shard, shard
from roofline_lsp.engine.files import InputError


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "util.cuh").write_text("#define K 2\n")
    (tmp_path / "a" / "main.cu").write_text('#include "util.cuh"\n__global__ void f() {}\n')
    (tmp_path / "a" / "lone.cu").write_text("__global__ void g() {}\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "other.cu").write_text('#include "../a/util.cuh"\n')
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "one")
    return tmp_path


def _all(repo: Path) -> list[str]:
    return [str(repo / p) for p in ("a/lone.cu", "a/main.cu", "a/util.cuh", "b/other.cu")]


def test_nothing_changed_gives_nothing(repo: Path) -> None:
    assert changed_files(_all(repo), changed_paths("HEAD", str(repo))) == []


def test_a_changed_header_brings_its_includers(repo: Path) -> None:
    (repo / "a" / "util.cuh").write_text("#define K 3\n")
    got = changed_files(_all(repo), changed_paths("HEAD", str(repo)))
    assert got == [str(repo / p) for p in ("a/main.cu", "a/util.cuh", "b/other.cu")]


def test_a_changed_header_of_the_include_folder_brings_its_includers(tmp_path: Path) -> None:
    # src/k.cu includes <proj/defs.h> from include/ (a build's -I../include)
    (tmp_path / "include" / "proj").mkdir(parents=True)
    (tmp_path / "include" / "proj" / "defs.h").write_text("#define K 2\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("#include <proj/defs.h>\n__global__ void f() {}\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "one")
    (tmp_path / "include" / "proj" / "defs.h").write_text("#define K 3\n")
    files = [str(tmp_path / "src" / "k.cu")]
    assert changed_files(files, changed_paths("HEAD", str(tmp_path))) == files


def test_committed_and_untracked_changes_count(repo: Path) -> None:
    (repo / "a" / "lone.cu").write_text("__global__ void g2() {}\n")
    git(repo, "commit", "-qam", "two")
    (repo / "a" / "new.cu").write_text("__global__ void h() {}\n")
    files = [*_all(repo), str(repo / "a" / "new.cu")]
    got = changed_files(files, changed_paths("HEAD~1", str(repo)))
    assert got == [str(repo / "a" / "lone.cu"), str(repo / "a" / "new.cu")]


def test_bad_revision_or_no_repository_is_one_line(repo: Path, tmp_path_factory) -> None:
    with pytest.raises(InputError, match="no-such-ref: not a commit"):
        changed_paths("no-such-ref", str(repo))
    outside = tmp_path_factory.mktemp("plain")
    with pytest.raises(InputError, match="--changed-since: "):
        changed_paths("HEAD", str(outside))


def test_shards_are_disjoint_complete_and_balanced() -> None:
    files = [f"f{i}.cu" for i in range(11)]
    parts = [shard(files, i, 3) for i in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(files)
    assert [len(p) for p in parts] == [4, 4, 3]
    assert shard(files, 2, 3) == parts[1]  # deterministic


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_bad_shard_spec(text: str) -> None:
    with pytest.raises(InputError, match="--shard"):
        parse_shard(text)
    assert parse_shard("2/5") == (2, 5)
