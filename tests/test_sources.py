"""Reading the files besides the one analysed (``syntax/sources.py``): the disk, or a reader
that answers open buffers first, through one view per analysis."""

from __future__ import annotations

import os
from pathlib import Path

from roofline_lsp.syntax.sources import (
    FileStamp,
    SourceView,
    fallback_folders,
    file_version,
    include_candidates,
    is_current,
    read_from_disk,
    source_view,
    user_folders,
    variant_folders,
)


def test_read_from_disk(tmp_path: Path) -> None:
    f = tmp_path / "a.h"
    f.write_bytes(b"#define N 4\n")
    assert read_from_disk(str(f)) == b"#define N 4\n"
    assert read_from_disk(str(f), 3) == b"#de"
    assert read_from_disk(str(tmp_path / "missing.h")) is None
    assert read_from_disk(str(tmp_path)) is None  # a folder


def test_the_disk_is_versioned_by_stat(tmp_path: Path) -> None:
    f = tmp_path / "a.h"
    f.write_bytes(b"one")
    st = os.stat(f)
    assert file_version(str(f), None) == (st.st_mtime_ns, 3)
    assert file_version(str(tmp_path / "missing.h"), None) is None
    assert file_version(str(tmp_path), None) is None
    stamp = FileStamp(str(f), file_version(str(f), None))
    assert is_current(stamp, None)
    f.write_bytes(b"three")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not is_current(stamp, None)


def test_a_view_reads_each_path_once_and_versions_it_by_content(tmp_path: Path) -> None:
    calls: list[str] = []
    buffers = {"/x/a.h": b"#define N 4\n", "/x/b.h": b"#define N 4\n"}

    def read(path: str) -> bytes | None:
        calls.append(path)
        return buffers.get(path)

    view = source_view(read)
    assert isinstance(view, SourceView)
    assert view("/x/a.h") == b"#define N 4\n" and view("/x/a.h") == b"#define N 4\n"
    assert view.version("/x/a.h") == view.version("/x/b.h")  # same bytes, same version
    assert view.version("/x/none.h") is None and view("/x/none.h") is None
    assert calls == ["/x/a.h", "/x/b.h", "/x/none.h"]
    assert [s.path for s in view.stamps()] == ["/x/a.h", "/x/b.h", "/x/none.h"]
    # an edited buffer is a new version in the next analysis's view
    stamp = FileStamp("/x/a.h", view.version("/x/a.h"))
    assert is_current(stamp, view)
    buffers["/x/a.h"] = b"#define N 8\n"
    assert not is_current(stamp, source_view(read))


def test_the_view_of_the_disk_or_of_a_view() -> None:
    assert source_view(None) is None
    assert source_view(read_from_disk) is None
    view = SourceView(read_from_disk)
    assert source_view(view) is view


def test_only_regular_files_are_read_and_nothing_blocks(tmp_path: Path) -> None:
    """A FIFO (opening it waits for a writer), a socket and a link to an endless device are
    refused from their ``stat``, without being opened for reading."""
    import socket

    import pytest

    from roofline_lsp.syntax.sources import open_regular

    if not hasattr(os, "mkfifo"):
        pytest.skip("FIFOs and sockets: POSIX")
    os.mkfifo(tmp_path / "pipe.h")
    os.symlink("/dev/zero", tmp_path / "zero.h")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock.h"))
        for name, what in (("pipe.h", "a FIFO"), ("zero.h", "a character device"),
                           ("sock.h", "a socket")):  # fmt: skip
            path = str(tmp_path / name)
            assert read_from_disk(path) is None
            with pytest.raises(OSError, match=f"^{what}, not a regular file$"):
                open_regular(path)
            assert file_version(path, None) is None
            assert SourceView(read_from_disk)(path) is None


def test_variant_folders_share_the_name_up_to_its_last_part(tmp_path: Path) -> None:
    for name in ("stencil-cuda", "stencil-omp", "stencil-hip", "stencil2-cuda", "other"):
        (tmp_path / name).mkdir()
    (tmp_path / "stencil-sycl").write_text("a file, not a folder")
    here = tmp_path / "stencil-omp"
    assert variant_folders(str(here)) == (
        str(tmp_path / "stencil-cuda"),
        str(tmp_path / "stencil-hip"),
    )
    assert variant_folders(str(tmp_path / "other")) == ()  # no part to vary
    # an include is looked for beside the file first, then in the variants, in name order
    found = list(include_candidates("sub/defs.h", str(here / "main.cpp")))
    assert found == [
        os.path.join(str(here), "sub", "defs.h"),
        os.path.join(str(tmp_path), "stencil-cuda", "sub", "defs.h"),
        os.path.join(str(tmp_path), "stencil-hip", "sub", "defs.h"),
    ]
    assert list(include_candidates("/abs/defs.h", str(here / "main.cpp"))) == []
    assert list(include_candidates("defs.h", "")) == []
    # a name holding a NUL byte is no file (os.stat raised ValueError on it: the whole
    # analysis of a file with `#include "a\0b.h"` failed)
    assert list(include_candidates("a\0b.h", str(here / "main.cpp"))) == []


def test_a_header_folder_is_used_from_its_project_folders(tmp_path: Path) -> None:
    # inc/ is included from the project folder and its other subfolders (a build's
    # -I../inc); a plain folder only from itself
    for name in ("inc", "src", "tests"):
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    inc = str(tmp_path / "inc")
    assert user_folders(inc) == (inc, str(tmp_path), str(tmp_path / "src"), str(tmp_path / "tests"))
    assert user_folders(str(tmp_path / "src")) == (str(tmp_path / "src"),)
    # a folder made later is seen (the listing is kept per version of the project folder)
    (tmp_path / "apps").mkdir()
    os.utime(tmp_path, ns=(1, 10**18))  # (a coarse clock could leave the stamp as it was)
    assert str(tmp_path / "apps") in user_folders(inc)


def test_a_folder_in_a_header_folder_is_used_from_its_project_folders(tmp_path: Path) -> None:
    # include/lib/ (included as <lib/defs.h> through a build's -I../include) is used from the
    # project's folders as include/ is; a folder further down than three levels is not
    for name in ("include/lib/sub", "src"):
        (tmp_path / name).mkdir(parents=True)
    lib = str(tmp_path / "include" / "lib")
    assert user_folders(lib) == (lib, str(tmp_path), str(tmp_path / "src"))
    deep = tmp_path / "include" / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    assert user_folders(str(deep)) == (str(deep),)


def test_fallback_folders_add_the_header_folder_a_build_names(tmp_path: Path) -> None:
    # proj/src/k.cu with proj/include/ (a build's -I../include) and proj/src/inc/: both are
    # searched, the nearest first; proj/lib/ is not a header folder
    for sub in ("include", "src/inc", "lib"):
        (tmp_path / "proj" / sub).mkdir(parents=True)
    (tmp_path / "proj" / "src" / "include").write_text("a file, not a folder")
    src = tmp_path / "proj" / "src"
    assert fallback_folders(str(src)) == (str(src / "inc"), str(tmp_path / "proj" / "include"))
    found = list(include_candidates("defs.h", str(src / "k.cu")))
    assert found == [
        str(src / "defs.h"),
        str(src / "inc" / "defs.h"),
        str(tmp_path / "proj" / "include" / "defs.h"),
    ]
    assert fallback_folders(str(tmp_path / "proj" / "lib")) == (str(tmp_path / "proj" / "include"),)
    (tmp_path / "plain").mkdir()
    assert fallback_folders(str(tmp_path / "plain")) == ()  # no header folder, no variant


def test_fallback_folders_reach_three_levels_up_to_the_repository_root(tmp_path: Path) -> None:
    # repo/Common/ serves repo/Samples/group/sample/ (three levels up); a folder four levels
    # up, or one above the repository root (.git), is not searched
    repo = tmp_path / "top" / "repo"
    sample = repo / "Samples" / "group" / "sample"
    deep = sample / "sub"
    for d in (repo / "Common", sample / "sub", tmp_path / "top" / "include"):
        d.mkdir(parents=True)
    (repo / ".git").mkdir()
    assert fallback_folders(str(sample)) == (str(repo / "Common"),)
    assert fallback_folders(str(deep)) == ()
