"""``roofline-lsp check`` as a real process on hostile folders: a FIFO, a UNIX socket, a
symlink to ``/dev/zero``, a huge file, a binary file and invalid UTF-8 beside a good file each
give one line on stderr and never a hang or a traceback, and the good file's results are kept;
a file whose analysis runs over ``--file-timeout`` is skipped in one line; deeply nested loops
and a megabyte line are analysed. The files are generated here (``tests/hostile_files.py``).

The subprocess timeouts only catch a hang (the bug these tests guard against); no speed is
asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hostile_files as hostile  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and sockets: POSIX")

HANG = 600  # seconds: far over any honest run, even on a loaded machine


def check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``roofline-lsp check ARGS`` in its own process, with its own cache directory."""
    return subprocess.run(
        [sys.executable, "-m", "roofline_lsp", "check", *args, "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=HANG,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def kernels(stdout: str) -> list[tuple[str, str]]:
    """(file name, kernel) of each kernel of ``check --format json``."""
    return [(Path(k["file"]).name, k["kernel"]) for k in json.loads(stdout)]


def lines_naming(stderr: str, name: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if name in ln]


def test_special_files_are_skipped_in_one_line_each(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    hostile.write_ok(d / "ok.cu")
    hostile.make_fifo(d / "pipe.cu")
    hostile.make_socket(d / "sock.cu").close()
    hostile.make_device_link(d / "zero.cu")
    hostile.make_sparse(d / "huge.cu", 64_000_000)
    (d / "binary.cu").write_bytes(b"\x7fELF\0\0\0" + bytes(range(256)))
    r = check(tmp_path, str(d), "--counts", "source", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert kernels(r.stdout) == [("ok.cu", "saxpy")]
    expected = {
        "pipe.cu": "skipped: a FIFO, not a regular file",
        "sock.cu": "skipped: a socket, not a regular file",
        "zero.cu": "skipped: a character device, not a regular file",
        "huge.cu": "skipped: 64.0 MB is over the 4 MB limit (--max-file-bytes)",
        "binary.cu": "skipped: binary file",
    }
    for name, reason in expected.items():
        assert lines_naming(r.stderr, name) == [f"{d / name}: {reason}"]


def test_a_file_beside_a_fifo_with_the_default_counts(tmp_path):
    """The issue's case: the worker reads the siblings (launches, callers, includers, the
    compile's translation units) and must not open the FIFO."""
    d = tmp_path / "d"
    d.mkdir()
    hostile.write_ok(d / "ok.cu")
    hostile.make_fifo(d / "pipe.cu")
    hostile.make_device_link(d / "zero.cuh")
    (d / "main.cu").write_text('#include "pipe.cu"\n#include "zero.cuh"\nint main() {}\n')
    r = check(tmp_path, str(d / "ok.cu"), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert kernels(r.stdout) == [("ok.cu", "saxpy")]


def test_a_named_fifo_is_a_usage_error_in_one_line(tmp_path):
    fifo = hostile.make_fifo(tmp_path / "pipe.cu")
    r = check(tmp_path, str(fifo))
    assert r.returncode == 2
    expected = f"roofline-lsp: {fifo}: not a regular file or directory"
    assert r.stderr.strip().splitlines() == [expected]


def test_invalid_utf8_is_analysed_with_a_one_line_note(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    hostile.write_ok(d / "ok.cu")
    latin1 = "// caf\xe9 au lait\n" + hostile.OK_KERNEL.replace("saxpy", "scale")
    (d / "latin1.cu").write_bytes(latin1.encode("latin-1"))
    r = check(tmp_path, str(d), "--counts", "source", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert kernels(r.stdout) == [("latin1.cu", "scale"), ("ok.cu", "saxpy")]
    assert lines_naming(r.stderr, "latin1.cu") == [
        f"{d / 'latin1.cu'}: note: not valid UTF-8 (byte 0xe9 on line 1); "
        "analysed with invalid bytes replaced"
    ]


def test_a_file_over_the_time_budget_is_skipped_and_the_others_kept(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    hostile.write_ok(d / "ok.cu")
    (d / "many.cu").write_text(hostile.many_kernels(3_900_000))  # thousands of kernels
    r = check(tmp_path, str(d), "--counts", "source", "--format", "json", "--file-timeout", "1")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert kernels(r.stdout) == [("ok.cu", "saxpy")]
    assert lines_naming(r.stderr, "many.cu") == [
        f"{d / 'many.cu'}: skipped: analysis took over 1 CPU seconds (--file-timeout)"
    ]


def test_thousands_of_nested_loops_give_a_verdict(tmp_path):
    """Deeper than the estimator walks: the verdict says so (unknown, too deeply nested)
    within the default time limit; never a crash or a hang."""
    (tmp_path / "nest.cpp").write_text(hostile.nested_loops(3000))
    r = check(tmp_path, str(tmp_path / "nest.cpp"), "--counts", "source", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    (k,) = json.loads(r.stdout)
    assert k["kernel"] == "nest"
    assert k["verdicts"][0]["explanation"] == "kernel too deeply nested to analyse"


def test_a_megabyte_line_gives_its_kernel_or_one_line(tmp_path):
    """Analysed within the time limit, or skipped in one line when over it: never a hang."""
    (tmp_path / "long.cu").write_text(hostile.long_line(1_000_000))
    hostile.write_ok(tmp_path / "ok.cu")
    r = check(
        tmp_path, str(tmp_path), "--counts", "source", "--format", "json", "--file-timeout", "5"
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    found = kernels(r.stdout)
    skipped = f"{tmp_path / 'long.cu'}: skipped: analysis took over 5 CPU seconds (--file-timeout)"
    assert found == [("long.cu", "wide"), ("ok.cu", "saxpy")] or (
        found == [("ok.cu", "saxpy")] and lines_naming(r.stderr, "long.cu") == [skipped]
    )
